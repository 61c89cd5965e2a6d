"""Console login, logout, CSRF and tenant selection through the real forms."""
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


def test_next_parameter_never_leaves_the_site(client, admin):
    token = csrf_from(client.get("/login").get_data(as_text=True))
    response = client.post("/login?next=//evil.example/x", data={
        "email": admin.user.email, "password": PASSWORD, "csrf_token": token})
    assert response.headers["Location"] == "/extensions"


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


def test_repeated_login_attempts_for_one_email_are_throttled(client, admin):
    for _ in range(10):
        assert login(client, admin.user.email, "guess").status_code == 422
    response = login(client, admin.user.email)  # even the right password waits now
    assert response.status_code == 429 and int(response.headers["Retry-After"]) > 0
    assert "Too many attempts" in response.get_data(as_text=True)
    assert client.get("/extensions").status_code == 302


def test_throttling_one_email_leaves_others_alone(client, admin, agent):
    for _ in range(11):
        login(client, admin.user.email, "guess")
    assert login(client, agent.user.email).status_code == 302
