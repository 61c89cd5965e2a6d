"""The application factory (`create_app`: configuration, extensions, blueprints, CLI, and the wiring
that hands lower layers what they need from higher ones) and the app's own commands: `flask db …`
(Flask-Migrate, loaded with alembic only when a migration command runs) and `flask prepare` (what
`make run` does before starting the processes). No package imports this module (.importlinter)."""
import logging

import click
from flask import Flask, current_app, g
from flask.cli import with_appcontext
from flask_login import LoginManager
from sqlalchemy import select

from core.api import register_error_handlers
from core.config import INSTANCE_PATH, PROJECT_ROOT, load_config, warn_about_egress_knobs
from core.db import db, engine_options, statement_timeout, watch_engine
from core.i18n import SAVED_LOCALE, init_i18n
from core.metrics import READINGS, init_metrics
from core.web import init_web


def create_app(config: dict | None = None) -> Flask:
    """Build the app from the environment; `config` overrides it (tests)."""
    app = Flask(__name__, root_path=str(PROJECT_ROOT), instance_path=str(INSTANCE_PATH))
    app.config.from_mapping(load_config(config))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    warn_about_egress_knobs(app.config)

    app.config["SQLALCHEMY_ENGINE_OPTIONS"] = engine_options(app.config)
    db.init_app(app)
    with app.app_context():
        watch_engine(db.engine, app.config["DB_STATEMENT_TIMEOUT_SECONDS"])
    _init_login(app)
    init_metrics(app)  # first: its clock starts before any other hook can answer
    init_web(app)
    init_i18n(app)
    register_error_handlers(app)
    _register_blueprints(app)
    _register_cli(app)
    _wire(app)
    _check_timing(app.config)
    return app


def _check_timing(cfg) -> None:
    """Stop at start-up when a timing rule between durations does not hold (ConfigurationError
    names both values): each package checks its own."""
    from core import delivery
    from rules import scheduler
    from studio import actions, generation, records

    actions.check_timing(cfg)
    generation.check_timing(cfg)
    records.check_timing()
    delivery.check_timing(cfg)
    scheduler.check_timing()


def _wire(app: Flask) -> None:
    """Hand the lower layers what the higher ones offer, explicitly (nothing registers on import):
    the pages' language follows the desk user's saved choice; a metrics scrape reads the
    scheduler's tick age and the clock lease; the desk's events go to the subscribers listed in
    `jobs.wiring`; the studio generator also drafts the rules' preview kind; the workbench's thread
    explains automated reassignments by the rules' own account of them; its side panel shows the
    studio's workbench tools."""
    from desk.auth_views import saved_locale
    from desk.events import SUBSCRIBERS
    from desk.panels import PANELS
    from desk.timeline import EXPLAINER
    from core.redis import get_redis
    from jobs import wiring
    from jobs.clock import lease_readings
    from rules.explaining import explain
    from rules.drafts import RULE_PREVIEW
    from rules.scheduler import tick_age
    from studio.draft_kinds import DRAFT_KINDS
    from studio.workbench_views import WorkbenchTools

    app.extensions[SAVED_LOCALE] = saved_locale
    app.extensions[READINGS] = [tick_age, lambda: lease_readings(get_redis())]
    app.extensions[SUBSCRIBERS] = wiring.subscribers
    app.extensions[DRAFT_KINDS] = {kind.name: kind for kind in (RULE_PREVIEW,)}
    app.extensions[EXPLAINER] = explain
    app.extensions[PANELS] = WorkbenchTools()


def _init_login(app: Flask) -> None:
    """Flask-Login: sessions by cookie, unauthenticated pages go to /login."""
    from desk.auth_views import load_user

    manager = LoginManager(app)
    manager.login_view = "desk.login"
    manager.login_message = None
    manager.user_loader(load_user)


def _register_blueprints(app: Flask) -> None:
    """Mount every package's pages and APIs (importing them also declares every table)."""
    import core.audit  # noqa: F401  the audit table has no blueprint
    import desk.api
    import desk.auth_views
    import desk.availability_api
    import desk.availability_views
    import desk.service_level_views
    import desk.service_levels_api
    import desk.channel_views
    import desk.knowledge_views
    import desk.marketing_views
    import desk.quick_reply_views
    import desk.workbench_views
    import openapi.api
    import openapi.views
    import rules.api
    import rules.run_views
    import rules.views
    import studio.action_views
    import studio.api
    import studio.usage_views
    import studio.views
    import studio.workbench_views

    for module in (desk.auth_views, desk.api, desk.workbench_views, studio.api, studio.views, rules.api, rules.views,
                   rules.run_views, openapi.api, openapi.views, studio.usage_views, desk.knowledge_views,
                   desk.quick_reply_views, desk.channel_views, studio.workbench_views, studio.action_views,
                   desk.marketing_views, desk.availability_api, desk.availability_views,
                   desk.service_levels_api, desk.service_level_views):
        app.register_blueprint(module.bp)


def _register_cli(app: Flask) -> None:
    """Operator commands: tenants, members, channels, demo, staff, jobs, open-apps, db, prepare."""
    from desk.cli import register as register_desk
    from jobs.cli import jobs_cli
    from openapi.cli import open_apps_cli

    register_desk(app)
    app.cli.add_command(jobs_cli)
    app.cli.add_command(open_apps_cli)
    app.cli.add_command(migrations)
    app.cli.add_command(prepare)


# --- the app's own commands -----------------------------------------------------------------------

def init_migrations(app) -> None:
    """Flask-Migrate on `app`: migration commands and `flask_migrate.upgrade()` need it; serving
    requests and running jobs do not, so no other process imports alembic."""
    from flask_migrate import Migrate

    Migrate(app, db, directory=str(PROJECT_ROOT / "migrations"), render_as_batch=True, compare_type=True)


class _MigrationCommands(click.Group):
    """Flask-Migrate's commands (`upgrade`, `check`, `migrate` …), looked up when asked for."""

    @staticmethod
    def _commands() -> click.Group:
        from flask_migrate.cli import db as migration_commands

        return migration_commands

    def list_commands(self, ctx):
        """Flask-Migrate's command names."""
        return self._commands().list_commands(ctx)

    def get_command(self, ctx, cmd_name):
        """One of Flask-Migrate's commands."""
        return self._commands().get_command(ctx, cmd_name)


@click.group("db", cls=_MigrationCommands)
@click.option("-d", "--directory", default=None, help='Migration script directory (default is "migrations")')
@click.option("-x", "--x-arg", multiple=True, help="Additional arguments consumed by custom env.py scripts")
@with_appcontext
def migrations(directory, x_arg):
    """Perform database migrations (without a statement_timeout: they may outlast a request)."""
    init_migrations(current_app)
    click.get_current_context().with_resource(statement_timeout(0))
    g.directory, g.x_arg = directory, x_arg  # as Flask-Migrate's own group: its get_config reads them


@click.command("prepare")
@with_appcontext
def prepare():
    """Upgrade the database; seed the demo and print its logins when it has no tenant (make run)."""
    from flask_migrate import upgrade

    from desk.cli import demo_logins_text
    from desk.demo import seed_demo
    from desk.models import Tenant

    init_migrations(current_app)
    with statement_timeout(0):  # migrations may outlast a request
        upgrade()
    if db.session.scalar(select(Tenant.id).limit(1)) is None:
        summary = seed_demo()
        db.session.commit()
        click.echo(demo_logins_text(summary))
    else:
        click.echo("Database already has tenants; demo logins use the password demo-pass-2026.")
