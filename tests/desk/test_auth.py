"""Console login, logout, CSRF, tenant selection and the login throttle through the real forms."""
import threading
import time
from datetime import timedelta

import pytest

from core.db import db
from tests.conftest import PASSWORD, csrf_from, login, seat


def test_login_form_carries_a_csrf_token(client, app):
    page = client.get("/login").get_data(as_text=True)
    assert csrf_from(page)
    assert 'name="email"' in page and 'name="password"' in page


def test_admin_lands_on_the_studio_console(client, admin):
    response = login(client, admin.user.email)
    assert response.status_code == 302 and response.headers["Location"] == "/extensions"
    page = client.get("/extensions").get_data(as_text=True)
    assert "Acme" in page and "Studio apps" in page and "Open platform" in page


def test_agent_lands_on_the_workbench(client, agent):
    response = login(client, agent.user.email)
    assert response.headers["Location"] == "/workbench"
    assert client.get("/workbench").status_code == 200


def test_wrong_password_is_refused_and_opens_no_session(client, admin):
    response = login(client, admin.user.email, "not-the-password")
    assert response.status_code == 422
    assert "Email or password is wrong" in response.get_data(as_text=True)
    assert client.get("/extensions").status_code == 302


def test_email_is_matched_case_insensitively(client, admin):
    assert login(client, admin.user.email.upper()).status_code == 302


def test_login_without_csrf_token_is_refused(client, admin):
    response = client.post("/login", data={"email": admin.user.email, "password": PASSWORD})
    assert response.status_code == 400
    assert client.get("/extensions").status_code == 302


def test_login_with_a_forged_csrf_token_is_refused(client, admin):
    client.get("/login")
    response = client.post("/login", data={"email": admin.user.email, "password": PASSWORD,
                                           "csrf_token": "forged"})
    assert response.status_code == 400


def test_inactive_member_cannot_log_in(client, agent):
    agent.active = False
    db.session.commit()
    assert login(client, agent.user.email).status_code == 422


def test_logout_needs_the_csrf_token(admin_client):
    assert admin_client.post("/logout").status_code == 400
    assert admin_client.get("/extensions").status_code == 200


def test_logout_ends_the_session(admin_client):
    token = csrf_from(admin_client.get("/extensions").get_data(as_text=True))
    assert admin_client.post("/logout", data={"csrf_token": token}).status_code == 302
    response = admin_client.get("/extensions")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")


def test_anonymous_page_visit_redirects_to_login_with_next(client, app):
    response = client.get("/workbench")
    assert response.status_code == 302
    assert response.headers["Location"] == "/login?next=%2Fworkbench"


@pytest.mark.parametrize("target", ["//evil.example/x", "/\\evil.example/x", "https://evil.example/x"])
def test_next_parameter_never_leaves_the_site(client, admin, target):
    token = csrf_from(client.get("/login").get_data(as_text=True))
    response = client.post("/login", query_string={"next": target}, data={
        "email": admin.user.email, "password": PASSWORD, "csrf_token": token})
    assert response.headers["Location"] == "/extensions"


CONTROL_NEXT = ["/a\nb", "/x\r\ny", "/x\ny", "/a\x00b", "/a\x7fb", "/a\tb", "/a\u2028b", "/a\u0085b"]


@pytest.mark.parametrize("target", CONTROL_NEXT)
def test_a_next_with_a_control_character_goes_to_the_landing_page_after_login(client, admin, target):
    token = csrf_from(client.get("/login").get_data(as_text=True))
    response = client.post("/login", query_string={"next": target}, data={
        "email": admin.user.email, "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 302 and response.headers["Location"] == "/extensions"
    assert client.get("/extensions").status_code == 200  # logged in, on the page they were sent to


@pytest.mark.parametrize("target", CONTROL_NEXT)
def test_a_next_with_a_control_character_is_ignored_by_the_tenant_choice_and_the_language_switch(
        client, tenant, other_tenant, target):
    seat(tenant, "admin", "both@test.example")
    seat(other_tenant, "agent", "both@test.example")
    chooser = login(client, "both@test.example").headers["Location"]
    assert "%0A" not in chooser and "%0D" not in chooser
    token = csrf_from(client.get("/tenants/select").get_data(as_text=True))
    chosen = client.post("/tenants/select", query_string={"next": target},
                         data={"tenant_id": str(tenant.id), "csrf_token": token})
    assert chosen.status_code == 302 and chosen.headers["Location"] == "/extensions"
    switched = client.post("/locale", data={"locale": "en", "next": target, "csrf_token": token})
    assert switched.status_code == 302 and switched.headers["Location"] == "/"


def test_member_of_two_tenants_chooses_one(client, tenant, other_tenant):
    member = seat(tenant, "admin", "both@test.example")
    seat(other_tenant, "agent", "both@test.example")
    response = login(client, "both@test.example")
    assert response.headers["Location"].startswith("/tenants/select")
    page = client.get("/tenants/select").get_data(as_text=True)
    assert "Acme" in page and "Other Co" in page
    assert client.get("/extensions").headers["Location"].startswith("/tenants/select")
    response = client.post("/tenants/select", data={"tenant_id": str(other_tenant.id),
                                                    "csrf_token": csrf_from(page)})
    assert response.headers["Location"] == "/workbench"
    assert client.get("/extensions").status_code == 403  # an agent in Other Co
    client.post("/tenants/select", data={"tenant_id": str(member.tenant_id), "csrf_token": csrf_from(page)})
    assert client.get("/extensions").status_code == 200


def test_tenant_selection_refuses_a_tenant_without_a_seat(client, tenant, other_tenant):
    seat(tenant, "admin", "one@test.example")
    seat(other_tenant, "admin", "two@test.example")
    login(client, "one@test.example")
    token = csrf_from(client.get("/tenants/select").get_data(as_text=True))
    response = client.post("/tenants/select", data={"tenant_id": str(other_tenant.id), "csrf_token": token})
    assert response.status_code == 422
    assert "Other Co" not in client.get("/extensions").get_data(as_text=True)


def test_deactivated_tenant_locks_its_members_out(admin_client, tenant):
    tenant.active = False
    db.session.commit()
    response = admin_client.get("/extensions")
    assert response.status_code == 302 and response.headers["Location"].startswith("/tenants/select")


def attempt(client, email: str, password: str = PASSWORD, address: str = "127.0.0.1"):
    """One login POST from a client address."""
    token = csrf_from(client.get("/login").get_data(as_text=True))
    return client.post("/login", data={"email": email, "password": password, "csrf_token": token},
                       environ_base={"REMOTE_ADDR": address})


def test_ten_failures_lock_that_account_from_that_address(client, admin):
    for _ in range(10):
        assert login(client, admin.user.email, "guess").status_code == 422
    response = login(client, admin.user.email)  # even the right password waits now
    assert response.status_code == 429 and 0 < int(response.headers["Retry-After"]) <= 15 * 60
    assert "Too many attempts" in response.get_data(as_text=True)
    assert client.get("/extensions").status_code == 302


def test_throttling_one_email_leaves_others_alone(client, admin, agent):
    for _ in range(11):
        login(client, admin.user.email, "guess")
    assert login(client, agent.user.email).status_code == 302


def test_successful_logins_are_never_counted(app, admin):
    for _ in range(15):
        assert login(app.test_client(), admin.user.email).status_code == 302


def test_a_correct_password_clears_the_failures_before_it(app, admin):
    for _ in range(2):
        for _ in range(9):
            assert login(app.test_client(), admin.user.email, "guess").status_code == 422
        assert login(app.test_client(), admin.user.email).status_code == 302


def test_failures_from_another_address_cannot_lock_the_account_out(app, admin):
    attacker = app.test_client()
    for _ in range(12):
        attempt(attacker, admin.user.email, "guess", address="203.0.113.9")
    assert attempt(attacker, admin.user.email, address="203.0.113.9").status_code == 429
    assert attempt(app.test_client(), admin.user.email, address="198.51.100.7").status_code == 302


def test_one_address_failing_across_many_accounts_is_throttled(app, admin):
    stuffer = app.test_client()
    for n in range(100):
        assert attempt(stuffer, f"user{n}@test.example", "guess", address="203.0.113.9").status_code == 422
    assert attempt(stuffer, admin.user.email, address="203.0.113.9").status_code == 429
    assert attempt(app.test_client(), admin.user.email, address="198.51.100.7").status_code == 302


def test_the_lock_lasts_until_the_failures_leave_the_window(app, admin, monkeypatch):
    monkeypatch.setitem(app.config, "LOGIN_FAILURE_WINDOW", timedelta(seconds=2))
    client = app.test_client()
    for _ in range(10):
        login(client, admin.user.email, "guess")
    locked = login(client, admin.user.email)
    assert locked.status_code == 429 and int(locked.headers["Retry-After"]) <= 2
    time.sleep(2.1)
    assert login(client, admin.user.email).status_code == 302


def test_refused_attempts_while_locked_do_not_extend_the_lock(app, admin, monkeypatch):
    monkeypatch.setitem(app.config, "LOGIN_FAILURE_WINDOW", timedelta(seconds=2))
    client = app.test_client()
    for _ in range(10):
        login(client, admin.user.email, "guess")
    started = time.monotonic()
    while time.monotonic() - started < 1.5:  # keep hammering while locked
        assert login(client, admin.user.email, "guess").status_code == 429
        time.sleep(0.1)
    time.sleep(0.7)
    assert login(client, admin.user.email).status_code == 302


def test_concurrent_guesses_cannot_overshoot_the_limit(app, admin):
    browsers = [app.test_client() for _ in range(24)]
    tokens = [csrf_from(browser.get("/login").get_data(as_text=True)) for browser in browsers]
    start, statuses, email = threading.Barrier(len(browsers)), [], admin.user.email

    def guess(browser, token):
        start.wait()
        statuses.append(browser.post("/login", data={"email": email, "password": "guess",
                                                     "csrf_token": token}).status_code)

    threads = [threading.Thread(target=guess, args=pair) for pair in zip(browsers, tokens)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [422] * 10 + [429] * 14
