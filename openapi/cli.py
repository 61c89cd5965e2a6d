"""`flask open-apps create`: the operator's way to create an external application (DESIGN.md §6)."""
import click
from flask.cli import AppGroup

from core.api import ApiError
from core.db import db
from desk.cli import commit_or_fail, emit
from desk.models import Tenant
from openapi.apps import CONFIRMED_SCOPES, create_app

open_apps_cli = AppGroup("open-apps", help="External applications of the Open API v1.")


@open_apps_cli.command("create")
@click.option("--tenant", "tenant_id", type=click.UUID, required=True)
@click.option("--name", required=True)
@click.option("--scopes", required=True, help="Comma-separated, e.g. app.records.read,app.records.write")
@click.option("--webhook-url", default=None)
@click.option("--json", "as_json", is_flag=True)
def open_apps_create(tenant_id, name, scopes, webhook_url, as_json):
    """Create an application; prints its token (and signing secret with a URL) once."""
    def create():
        if db.session.get(Tenant, tenant_id) is None:
            raise ApiError("not_found", 404)
        return create_app(tenant_id, None, name, [s.strip() for s in scopes.split(",") if s.strip()],
                          webhook_url, resolve_webhook=False,  # the operator's command is the confirmation
                          processing_confirmed=True, confirmed_scopes=CONFIRMED_SCOPES)
    made = commit_or_fail(create)
    emit({"app_id": str(made.app.id), "token": made.token, "signing_secret": made.signing_secret},
         as_json, f"application {made.app.id} created; token {made.token}"
         + (f"; signing secret {made.signing_secret}" if made.signing_secret else ""))
