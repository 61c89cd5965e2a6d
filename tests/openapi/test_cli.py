"""`flask open-apps create`, the operators' way to create an external application."""
import uuid

from core.db import db
from openapi.models import OpenApp
from tests.support.cli import run
from tests.support.openapi import OpenClient


def test_open_apps_create_prints_working_credentials_once(app, tenant):
    out = run(app, "open-apps", "create", "--tenant", str(tenant.id), "--name", "ERP",
              "--scopes", "app.records.read,app.records.write", "--webhook-url", "https://erp.example.com/hooks", "--json")
    assert set(out) == {"app_id", "token", "signing_secret"} and out["signing_secret"].startswith("whsec_")
    found = db.session.get(OpenApp, uuid.UUID(out["app_id"]))
    assert found.scopes == ["app.records.read", "app.records.write"] and found.token_hash != out["token"]
    assert OpenClient(app.test_client(), out["token"]).get("/records").status_code == 200


def test_open_apps_create_without_a_url_has_no_secret(app, tenant):
    out = run(app, "open-apps", "create", "--tenant", str(tenant.id), "--name", "Reader",
              "--scopes", "customers.basic.read", "--json")
    assert out["signing_secret"] is None


def test_open_apps_create_refuses_unknown_scopes_and_tenants(app, tenant):
    bad_scope = app.test_cli_runner().invoke(args=["open-apps", "create", "--tenant", str(tenant.id), "--name", "x",
                                                   "--scopes", "everything", "--json"])
    assert bad_scope.exit_code != 0 and "invalid_scopes" in bad_scope.output
    no_tenant = app.test_cli_runner().invoke(args=["open-apps", "create", "--tenant", str(uuid.uuid4()), "--name", "x",
                                                   "--scopes", "app.records.read", "--json"])
    assert no_tenant.exit_code != 0 and "not_found" in no_tenant.output


def test_the_text_output_also_shows_the_signing_secret_once(app, tenant):
    result = app.test_cli_runner().invoke(args=["open-apps", "create", "--tenant", str(tenant.id), "--name", "Text",
                                                "--scopes", "app.records.write", "--webhook-url", "https://erp.example.com/in"])
    assert result.exit_code == 0 and "token csk_" in result.output and "signing secret whsec_" in result.output
