"""The console user's "Change password" page."""
import pytest

from desk.handoff import issue_link_token
from desk.sessions import IMPERSONATION
from tests.conftest import PASSWORD, csrf_from, login

NEW_PASSWORD = "a-brand-new-passphrase"


def change(browser, current=PASSWORD, new=NEW_PASSWORD, confirm=None, token=None):
    """Submit the form as a person would."""
    page = browser.get("/account/password").get_data(as_text=True)
    return browser.post("/account/password", data={
        "csrf_token": csrf_from(page) if token is None else token, "current_password": current,
        "new_password": new, "confirm_password": new if confirm is None else confirm})


def test_the_account_page_links_to_the_page_and_the_form_has_three_password_fields(admin_client):
    assert 'href="/account"' in admin_client.get("/extensions").get_data(as_text=True)
    assert 'href="/account/password"' in admin_client.get("/account").get_data(as_text=True)
    page = admin_client.get("/account/password").get_data(as_text=True)
    for name in ("current_password", "new_password", "confirm_password"):
        assert f'name="{name}"' in page and 'type="password"' in page
    assert 'autocomplete="new-password"' in page and 'autocomplete="current-password"' in page


def test_a_changed_password_is_the_one_that_logs_in(app, admin_client, admin):
    response = change(admin_client)
    assert response.status_code == 302 and response.headers["Location"] == "/extensions"
    assert login(app.test_client(), admin.user.email).status_code == 422
    assert login(app.test_client(), admin.user.email, NEW_PASSWORD).status_code == 302


@pytest.mark.parametrize("fields,field,message", [
    ({"current": "not-my-password"}, "current_password", "Your current password is wrong."),
    ({"confirm": "something-else-entirely"}, "confirm_password", "The two new passwords differ."),
    ({"new": "short"}, "new_password", "at least 8 characters"),
    ({"new": "x" * 201}, "new_password", "at most 200 characters"),
])
def test_mistakes_are_shown_next_to_their_field_and_change_nothing(app, admin_client, admin, fields,
                                                                   field, message):
    response = change(admin_client, **fields)
    page = response.get_data(as_text=True)
    assert response.status_code == 422 and message in page
    after_field = page.split(f'name="{field}"')[1]
    assert message in after_field.split("<label")[0]  # next to its own field, before the next one
    assert admin_client.get("/extensions").status_code == 200
    assert login(app.test_client(), admin.user.email).status_code == 302


def test_the_form_needs_its_csrf_token(app, admin_client, admin):
    assert change(admin_client, token="forged").status_code == 400
    assert login(app.test_client(), admin.user.email).status_code == 302


def test_anonymous_visitors_are_sent_to_log_in(client, app):
    response = client.get("/account/password")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")


def test_a_restricted_session_cannot_change_the_members_password(app, client, admin):
    assert client.get(f"/staff/impersonate/{issue_link_token(IMPERSONATION, admin)}").status_code == 302
    response = client.get("/account/password")
    assert response.status_code == 403 and "session_scope_forbidden" in response.get_data(as_text=True)


def test_wrong_current_passwords_count_as_failed_logins(app, admin_client, admin):
    for _ in range(10):
        assert change(admin_client, current="guess-guess").status_code == 422
    response = change(admin_client)
    assert response.status_code == 429 and "Too many attempts" in response.get_data(as_text=True)
    assert login(app.test_client(), admin.user.email).status_code == 429  # same account, same address
