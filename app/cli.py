"""The app's own commands: `flask db …` (Flask-Migrate, loaded with alembic only when a migration
command runs) and `flask prepare` (what `make run` does before starting the processes)."""
import click
from flask import current_app, g
from flask.cli import with_appcontext
from sqlalchemy import select

from core.config import PROJECT_ROOT
from core.db import db, statement_timeout


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
