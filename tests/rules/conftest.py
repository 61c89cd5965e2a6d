"""Fixtures of the automation console pages' tests."""
import pytest

from tests.conftest import seat
from tests.support.rule_pages import BASE, bound, page_text, post_form


@pytest.fixture
def agents(tenant):
    """Two bindable agents."""
    return seat(tenant, "agent"), seat(tenant, "agent")


@pytest.fixture
def saved_rule(admin_client, agents) -> str:
    """A weekly rule saved from the form (revision 1, a draft); its id."""
    response = post_form(admin_client, f"{BASE}/new", bound(*agents))
    assert response.status_code == 302, page_text(response)
    return response.headers["Location"].rsplit("/", 1)[1]


@pytest.fixture
def planning(app, monkeypatch):
    """The platform's planning switch on (it defaults off)."""
    monkeypatch.setitem(app.config, "AUTOMATION_PLANNING_ENABLED", True)
