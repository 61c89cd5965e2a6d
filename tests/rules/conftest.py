"""Fixtures of the automation rules' tests."""
from datetime import timedelta

import pytest
from sqlalchemy import event, update

from core.clock import utcnow
from core.db import db
from desk.models import Member

from tests.conftest import seat
from tests.support.availability import policy_on
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


@pytest.fixture(params=["policy off", "policy on"])
def availability_both_ways(request, tenant):
    """Each test once with the tenant's availability policy off (document 2 as written) and once on
    with every member of the tenant online for the next day with room for a hundred conversations,
    where availability must not change what document 2 says."""
    if request.param == "policy off":
        yield request.param
        return
    policy_on(tenant, default_capacity=100)
    until = utcnow() + timedelta(days=1)

    def present(mapper, connection, member):
        member.presence, member.last_seen_at = "online", until

    db.session.execute(update(Member).where(Member.tenant_id == tenant.id).values(presence="online",
                                                                                  last_seen_at=until))
    db.session.commit()
    event.listen(Member, "before_insert", present)
    try:
        yield request.param
    finally:
        event.remove(Member, "before_insert", present)
