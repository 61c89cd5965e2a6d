"""Session kinds and role guards: who may use the console and the workbench."""
import re

import pytest

from desk.handoff import issue_link_token
from desk.sessions import ASSISTANT, IMPERSONATION


def _open(client, kind: str, member) -> None:
    """Open a restricted session through its hand-off link."""
    route = "staff/impersonate" if kind == IMPERSONATION else "assistant/login"
    response = client.get(f"/{route}/{issue_link_token(kind, member)}")
    assert response.status_code == 302


def test_agent_is_forbidden_from_the_admin_console(agent_client):
    response = agent_client.get("/extensions")
    assert response.status_code == 403
    assert "forbidden" in response.get_data(as_text=True)


@pytest.mark.parametrize("path", ["/extensions", "/extensions/automation", "/open-platform",
                                  "/template-market/studio"])
def test_admin_console_pages_need_an_administrator(agent_client, admin_client, path):
    assert agent_client.get(path).status_code == 403
    assert admin_client.get(path).status_code == 200


@pytest.mark.parametrize("kind", [IMPERSONATION, ASSISTANT])
def test_restricted_sessions_are_refused_by_the_admin_console(client, admin, kind):
    _open(client, kind, admin)
    response = client.get("/extensions")
    assert response.status_code == 403
    assert "session_scope_forbidden" in response.get_data(as_text=True)


@pytest.mark.parametrize("kind", [IMPERSONATION, ASSISTANT])
def test_restricted_sessions_may_use_the_workbench(client, agent, kind):
    _open(client, kind, agent)
    page = client.get("/workbench")
    assert page.status_code == 200
    assert f"{kind} session" in page.get_data(as_text=True)


def test_restricted_session_cannot_switch_tenant(client, admin):
    _open(client, IMPERSONATION, admin)
    assert client.get("/tenants/select").status_code == 403


def test_handoff_link_opens_only_once(client, app, admin):
    token = issue_link_token(IMPERSONATION, admin)
    assert client.get(f"/staff/impersonate/{token}").status_code == 302
    assert app.test_client().get(f"/staff/impersonate/{token}").status_code == 401


def test_handoff_link_of_one_kind_does_not_open_another(client, admin):
    token = issue_link_token(IMPERSONATION, admin)
    assert client.get(f"/assistant/login/{token}").status_code == 401


def test_tampered_handoff_link_is_refused(client, admin):
    token = issue_link_token(ASSISTANT, admin)
    assert client.get(f"/assistant/login/{token[:-2]}xx").status_code == 401
    assert client.get("/workbench").status_code == 302


def test_workbench_guard_needs_login(client, app):
    assert re.match(r"/login", client.get("/workbench").headers["Location"])
