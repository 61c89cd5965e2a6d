"""Workbench fixtures, two named agents for the availability tests, and a desk whose clock the
service-level tests set."""
import pytest

from core.db import db
from desk.models import Conversation, Customer, Member
from tests.conftest import seat
from tests.support.availability import named
from tests.support.desk import browser_of
from tests.support.service_levels import Desk


@pytest.fixture
def conversation(tenant) -> Conversation:
    """An open, unassigned conversation, committed."""
    customer = Customer(tenant_id=tenant.id, name="Wang Fang")
    db.session.add(customer)
    db.session.flush()
    found = Conversation(tenant_id=tenant.id, customer_id=customer.id)
    db.session.add(found)
    db.session.commit()
    return found


@pytest.fixture
def lilei(tenant) -> Member:
    """An agent named 李雷, committed."""
    return named(seat(tenant, "agent"), "李雷")


@pytest.fixture
def hanmeimei(tenant) -> Member:
    """An agent named 韩梅梅, committed."""
    return named(seat(tenant, "agent"), "韩梅梅")


@pytest.fixture
def desk(monkeypatch, app, client, channel, agent) -> Desk:
    """One customer's conversation on `channel`, with `agent` replying, at instants the test sets."""
    return Desk(monkeypatch, client, channel, browser_of(app, agent))
