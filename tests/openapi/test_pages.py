"""The open platform console page: creation with confirmations, credentials once, revoke, deliveries."""
import re
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from core.clock import utcnow
from core.db import db
from desk.handoff import issue_link_token
from desk.sessions import IMPERSONATION
from openapi.models import OpenApp, OpenTenantUsage, WebhookAttempt, WebhookEvent
from tests.conftest import csrf_from
from tests.support.openapi import OpenClient

TOKEN_RE = re.compile(r'id="api-token" class="secret" readonly value="([^"]+)"')


def _text(response) -> str:
    return response.get_data(as_text=True)


def _create(client, **fields):
    token = csrf_from(_text(client.get("/open-platform")))
    data = {"csrf_token": token, "name": "Partner CRM", "confirm_processing": "on", **fields}
    return client.post("/open-platform/apps", data=data)


def _apps() -> int:
    return db.session.scalar(select(func.count()).select_from(OpenApp))


def test_the_page_explains_an_empty_list_and_offers_no_scope_by_default(admin_client):
    page = _text(admin_client.get("/open-platform"))
    assert "No applications yet" in page and 'name="scopes"' in page
    assert "checked" not in page.split('id="create-form"')[1].split("</form>")[0]


def test_impersonated_sessions_and_agents_cannot_manage_applications(app, admin, agent_client):
    browser = app.test_client()
    browser.get(f"/staff/impersonate/{issue_link_token(IMPERSONATION, admin)}")
    assert browser.get("/open-platform").status_code == 403
    token = csrf_from(_text(browser.get("/workbench")))
    data = {"csrf_token": token, "name": "x", "scopes": ["app.records.read"], "confirm_processing": "on"}
    assert browser.post("/open-platform/apps", data=data).status_code == 403
    assert agent_client.get("/open-platform").status_code == 403
    assert _apps() == 0


def test_sensitive_scopes_each_need_their_own_confirmation(admin_client):
    response = _create(admin_client, scopes=["customers.basic.read", "customers.contact.read", "customers.notes.read"],
                       confirm_contact="on")
    page = _text(response)
    assert response.status_code == 422 and "This scope needs its own confirmation." in page
    assert page.count("This scope needs its own confirmation.") == 1 and _apps() == 0


def test_the_processing_confirmation_is_required(admin_client):
    response = _create(admin_client, scopes=["app.records.read"], confirm_processing="")
    assert response.status_code == 422 and "external server will process" in _text(response) and _apps() == 0


@pytest.mark.parametrize("fields,message", [
    ({"scopes": []}, "Choose at least one scope."),
    ({"scopes": ["app.records.read"], "name": " "}, "Give the application a name"),
    ({"scopes": ["app.records.read"], "webhook_url": "http://crm.example.com/hook"}, "Use an https:// address."),
    ({"scopes": ["app.records.read"], "webhook_url": "https://crm.example.com:8443/hook"},
     "Only the standard HTTPS port (443) is allowed."),
    ({"scopes": ["app.records.read"], "webhook_url": "https://crm.example.com/a\r\nX: 1"}, "Remove the spaces, line breaks"),
    ({"scopes": ["app.records.read"], "webhook_url": "https://CRM.example.com/hook"}, "in its plain form"),
    ({"scopes": ["app.records.read"], "webhook_url": "https://internal.example.com/hook"},
     "resolves to an internal or otherwise non-public address"),
    ({"scopes": ["app.records.read"], "webhook_url": "https://nowhere.example.com/hook"}, "does not resolve"),
])
def test_invalid_forms_are_explained_next_to_the_field(admin_client, dns, fields, message):
    dns["internal.example.com"] = [["10.0.0.1"]]
    response = _create(admin_client, **fields)
    assert response.status_code == 422 and message in _text(response) and _apps() == 0


def test_credentials_are_shown_once_and_work(app, admin_client, dns):
    dns["crm.example.com"] = [["93.184.216.34"]]
    response = _create(admin_client, scopes=["app.records.read", "app.records.write"],
                       webhook_url="https://crm.example.com/hooks/in")
    assert response.status_code == 302
    shown = admin_client.get(response.headers["Location"])
    page = _text(shown)
    token = TOKEN_RE.search(page).group(1)
    assert "signing-secret" in page and shown.headers["Cache-Control"] == "no-store"
    assert OpenClient(app.test_client(), token).get("/records").status_code == 200
    again = _text(admin_client.get(response.headers["Location"]))
    assert "cannot be shown again" in again and token not in again and "whsec_" not in again
    assert token not in _text(admin_client.get("/open-platform"))


def test_credentials_that_cannot_be_kept_for_display_create_nothing(admin_client, tenant, monkeypatch):
    import redis

    token = csrf_from(_text(admin_client.get("/open-platform")))
    # Redis goes away for the credentials' one-time copy (the session still lives in the real one).
    dead = redis.Redis.from_url("redis://127.0.0.1:1/0")  # nothing listens on port 1
    monkeypatch.setattr("openapi.views.get_redis", lambda: dead)
    response = admin_client.post("/open-platform/apps", data={
        "csrf_token": token, "name": "Partner CRM", "confirm_processing": "on", "scopes": ["app.records.read"]})
    assert response.status_code == 503 and "nothing was created" in _text(response)
    assert _apps() == 0
    assert not db.session.scalar(select(OpenTenantUsage.app_count).where(OpenTenantUsage.tenant_id == tenant.id))


def test_without_an_address_there_is_no_signing_secret(admin_client):
    response = _create(admin_client, scopes=["app.records.read"])
    page = _text(admin_client.get(response.headers["Location"]))
    assert TOKEN_RE.search(page) and "signing-secret" not in page


def test_the_list_shows_status_scopes_and_expiry(admin_client, make_open_app, tenant, admin):
    from openapi.apps import revoke

    active, _, _ = make_open_app(["app.records.read"], name="Active one")
    expired, _, _ = make_open_app(["app.records.write"], name="Expired one")
    revoked, _, _ = make_open_app(["customers.basic.read"], name="Revoked one")
    db.session.execute(update(OpenApp).where(OpenApp.id == expired.id).values(expires_at=utcnow() - timedelta(days=1)))
    revoke(tenant.id, admin.user_id, revoked.id)
    db.session.commit()
    page = _text(admin_client.get("/open-platform"))
    for name, status in (("Active one", "active"), ("Expired one", "expired"), ("Revoked one", "revoked")):
        row = page.split(name)[1].split("</tr>")[0]
        assert f">{status}</span>" in row
    assert "customers.basic.read" in page and "3 of 100" in page


def test_revoking_from_the_page_stops_the_token(admin_client, make_open_app):
    found, client, _ = make_open_app(["app.records.read"])
    token = csrf_from(_text(admin_client.get("/open-platform")))
    response = admin_client.post(f"/open-platform/apps/{found.id}/revoke", data={"csrf_token": token})
    assert response.status_code == 302 and "is revoked" in _text(admin_client.get("/open-platform"))
    assert client.get("/records").status_code == 401


def test_another_tenants_application_cannot_be_revoked_or_viewed(admin_client, make_open_app, other_tenant, dns):
    dns["crm.example.com"] = [["93.184.216.34"]]
    foreign, client, _ = make_open_app(["app.records.read"], webhook_url="https://crm.example.com/in",
                                       tenant_id=other_tenant.id)
    token = csrf_from(_text(admin_client.get("/open-platform")))
    assert admin_client.post(f"/open-platform/apps/{foreign.id}/revoke", data={"csrf_token": token}).status_code == 404
    assert admin_client.get(f"/open-platform/apps/{foreign.id}/deliveries").status_code == 404
    assert client.get("/records").status_code == 200


def test_the_delivery_view_lists_events_and_attempts(admin_client, make_open_app, dns):
    dns["crm.example.com"] = [["93.184.216.34"]]
    found, client, _ = make_open_app(["app.records.write"], webhook_url="https://crm.example.com/in")
    client.post_record({"a": 1}, str(uuid.uuid4()))
    event = db.session.scalar(select(WebhookEvent))
    db.session.add_all([WebhookAttempt(tenant_id=found.tenant_id, event_id=event.id, number=1, status_code=503,
                                       duration_ms=120),
                        WebhookAttempt(tenant_id=found.tenant_id, event_id=event.id, number=2, error="timeout",
                                       duration_ms=10_000)])
    db.session.commit()
    page = _text(admin_client.get(f"/open-platform/apps/{found.id}/deliveries"))
    assert str(event.id) in page and "HTTP 503" in page and "timeout" in page and "10000 ms" in page
    assert ">pending</span>" in page


def test_the_hundred_and_first_application_is_refused_on_the_page(admin_client, tenant):
    db.session.add(OpenTenantUsage(tenant_id=tenant.id, app_count=100))
    db.session.commit()
    response = _create(admin_client, scopes=["app.records.read"])
    assert response.status_code == 422 and "created 100 applications" in _text(response) and _apps() == 0


def test_the_switch_closes_the_page(admin_client, app, monkeypatch):
    monkeypatch.setitem(app.config, "OPEN_PLATFORM_ENABLED", False)
    assert admin_client.get("/open-platform").status_code == 503
