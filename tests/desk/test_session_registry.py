"""Server-side sessions: a copied cookie dies with its session (logout, password change,
deactivation, idle timeout, absolute lifetime), ending one session leaves the others, and the
seat a session acts with is read on every request."""
import json
import time
from datetime import timedelta

import pytest

from core.db import db
from desk.handoff import issue_link_token
from desk.sessions import ASSISTANT, IMPERSONATION
from tests.conftest import PASSWORD, csrf_from, login, seat

NEW_PASSWORD = "a-brand-new-passphrase"


def copy_of(app, browser):
    """Another browser holding a copy of `browser`'s session cookie (as a thief would)."""
    thief = app.test_client()
    thief.set_cookie("session", browser.get_cookie("session").value)
    return thief


def refused(browser) -> bool:
    """The session no longer authenticates: pages go to /login and the console API answers 401."""
    page = browser.get("/extensions")
    api = browser.get("/api/extensions")
    return (page.status_code == 302 and page.headers["Location"].startswith("/login")
            and api.status_code == 401 and api.get_json()["error"]["code"] == "unauthorized")


def log_out(browser, page: str = "/workbench") -> None:
    """Press "Log out" on a page."""
    token = csrf_from(browser.get(page).get_data(as_text=True))
    assert browser.post("/logout", data={"csrf_token": token}).status_code == 302


def cli(app, *args: str) -> dict:
    """Run `flask ...` and parse its JSON output."""
    result = app.test_cli_runner().invoke(args=list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def open_restricted(app, kind: str, member):
    """A browser in a restricted session of `member`, opened through its hand-off link."""
    browser = app.test_client()
    route = "staff/impersonate" if kind == IMPERSONATION else "assistant/login"
    assert browser.get(f"/{route}/{issue_link_token(kind, member)}").status_code == 302
    assert browser.get("/workbench").status_code == 200
    return browser


def test_a_copied_cookie_works_only_while_its_session_lives(app, admin_client):
    thief = copy_of(app, admin_client)
    assert thief.get("/extensions").status_code == 200
    log_out(admin_client, "/extensions")
    assert refused(thief) and refused(admin_client)


def test_a_signed_cookie_without_a_live_session_id_is_refused(app, admin):
    forged = app.test_client()
    with forged.session_transaction() as cookie:  # what a cookie signed before this change holds
        cookie.update({"_user_id": str(admin.user_id), "_fresh": True, "session_type": "console",
                       "tenant_id": str(admin.tenant_id)})
    assert refused(forged)


def test_logging_out_on_one_device_leaves_the_others(app, admin):
    laptop, phone = app.test_client(), app.test_client()
    login(laptop, admin.user.email)
    login(phone, admin.user.email)
    log_out(laptop, "/extensions")
    assert refused(laptop)
    assert phone.get("/extensions").status_code == 200


@pytest.mark.parametrize("kind", [IMPERSONATION, ASSISTANT])
def test_ending_a_restricted_session_leaves_the_members_console_session(app, admin_client, admin, kind):
    restricted = open_restricted(app, kind, admin)
    thief = copy_of(app, restricted)
    log_out(restricted)
    assert thief.get("/workbench").status_code == 302
    assert admin_client.get("/extensions").status_code == 200


def test_changing_the_password_on_the_page_ends_every_other_copy_and_keeps_this_browser(
        app, admin_client, admin):
    thief = copy_of(app, admin_client)
    other_device = app.test_client()
    login(other_device, admin.user.email)
    assistant = open_restricted(app, ASSISTANT, admin)
    token = csrf_from(admin_client.get("/account/password").get_data(as_text=True))
    response = admin_client.post("/account/password", data={
        "csrf_token": token, "current_password": PASSWORD, "new_password": NEW_PASSWORD,
        "confirm_password": NEW_PASSWORD})
    assert response.status_code == 302
    assert refused(thief) and refused(other_device)
    assert assistant.get("/workbench").status_code == 302
    page = admin_client.get("/extensions")  # reopened under a new session id
    assert page.status_code == 200 and "Password changed" in page.get_data(as_text=True)


def test_setting_a_password_from_the_cli_ends_every_session(app, admin_client, admin):
    thief = copy_of(app, admin_client)
    out = cli(app, "members", "set-password", "--member", str(admin.id), "--password", NEW_PASSWORD,
              "--json")
    assert out == {"member_id": str(admin.id), "user_id": str(admin.user_id)}
    assert refused(thief) and refused(admin_client)
    assert login(app.test_client(), admin.user.email).status_code == 422
    assert login(app.test_client(), admin.user.email, NEW_PASSWORD).status_code == 302


def test_set_password_refuses_a_short_password(app, admin_client, admin):
    result = app.test_cli_runner().invoke(args=[
        "members", "set-password", "--member", str(admin.id), "--password", "short", "--json"])
    assert result.exit_code != 0 and "invalid_password" in result.output
    assert admin_client.get("/extensions").status_code == 200


def test_deactivating_a_member_ends_every_session_of_theirs(app, admin_client, admin):
    thief = copy_of(app, admin_client)
    impersonation = open_restricted(app, IMPERSONATION, admin)
    out = cli(app, "members", "deactivate", "--member", str(admin.id), "--json")
    assert out == {"member_id": str(admin.id), "user_id": str(admin.user_id), "active": False}
    assert refused(thief) and refused(admin_client)
    assert impersonation.get("/workbench").status_code == 302
    assert login(app.test_client(), admin.user.email).status_code == 422


def test_deactivating_an_unknown_member_fails(app):
    result = app.test_cli_runner().invoke(args=[
        "members", "deactivate", "--member", "00000000-0000-0000-0000-000000000000", "--json"])
    assert result.exit_code != 0 and "not_found" in result.output


def test_ending_one_users_sessions_leaves_other_users_alone(app, admin_client, agent_client, agent):
    cli(app, "members", "deactivate", "--member", str(agent.id), "--json")
    assert agent_client.get("/workbench").status_code == 302
    assert admin_client.get("/extensions").status_code == 200


def test_an_idle_session_expires_and_activity_keeps_it_alive(app, admin, monkeypatch):
    monkeypatch.setitem(app.config, "SESSION_IDLE_TIMEOUT", timedelta(seconds=1.2))
    browser = app.test_client()
    login(browser, admin.user.email)
    started = time.monotonic()
    while time.monotonic() - started < 2.5:  # twice the idle timeout, never idle for long
        assert browser.get("/extensions").status_code == 200
        time.sleep(0.2)
    time.sleep(1.5)
    assert refused(browser)


def test_a_session_ends_at_its_absolute_lifetime_however_active(app, admin, monkeypatch):
    monkeypatch.setitem(app.config, "PERMANENT_SESSION_LIFETIME", timedelta(seconds=2))
    browser = app.test_client()
    login(browser, admin.user.email)
    assert browser.get("/extensions").status_code == 200
    deadline = time.monotonic() + 3.5  # slack for a slow machine; the lifetime is 2 s
    while browser.get("/extensions").status_code == 200:
        assert time.monotonic() < deadline, "the session outlived its absolute lifetime"
        time.sleep(0.2)
    assert refused(browser)


def test_the_session_cookie_is_permanent_for_the_absolute_lifetime(app, admin):
    browser = app.test_client()
    response = login(browser, admin.user.email)
    cookie = response.headers["Set-Cookie"]
    assert "Expires=" in cookie and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert app.config["PERMANENT_SESSION_LIFETIME"] == timedelta(hours=12)
    assert app.config["SESSION_IDLE_TIMEOUT"] == timedelta(minutes=60)


def test_a_new_login_replaces_and_ends_the_browsers_previous_session(app, admin):
    browser = app.test_client()
    login(browser, admin.user.email)
    before = copy_of(app, browser)
    login(browser, admin.user.email)
    assert browser.get("/extensions").status_code == 200
    assert refused(before)


def test_a_member_of_another_tenant_keeps_working_after_a_colleague_is_deactivated(
        app, tenant, other_tenant):
    colleague = seat(tenant, "agent")
    outsider = seat(other_tenant, "agent")
    browser = app.test_client()
    login(browser, outsider.user.email)
    cli(app, "members", "deactivate", "--member", str(colleague.id), "--json")
    assert browser.get("/workbench").status_code == 200


def test_the_seat_is_read_on_every_request_so_a_changed_role_counts_at_once(admin_client, admin):
    assert admin_client.get("/api/extensions").status_code == 200
    admin.role = "agent"
    db.session.commit()
    assert admin_client.get("/api/extensions").get_json()["error"]["code"] == "forbidden"
    assert admin_client.get("/workbench").status_code == 200


def test_a_member_of_two_tenants_acts_with_the_seat_of_the_tenant_selected(app, tenant, other_tenant):
    admin = seat(tenant, "admin")
    seat(other_tenant, "agent", email=admin.user.email)
    browser = app.test_client()
    assert login(browser, admin.user.email).headers["Location"].startswith("/tenants/select")

    def select(chosen) -> None:
        token = csrf_from(browser.get("/tenants/select").get_data(as_text=True))
        assert browser.post("/tenants/select", data={"tenant_id": str(chosen.id),
                                                     "csrf_token": token}).status_code == 302

    select(tenant)
    assert browser.get("/api/extensions").status_code == 200
    select(other_tenant)
    assert browser.get("/api/extensions").status_code == 403
    assert browser.get("/workbench").status_code == 200
