"""Workbench fixtures."""
import pytest

from core.db import db
from desk.models import Conversation, Customer


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
