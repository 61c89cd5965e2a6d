"""Ending a read-only transaction before a slow wait, and refusing to when it wrote."""
import pytest
from sqlalchemy import func, insert, select

from core.db import db, end_reads
from desk.models import Tenant


def _tenants() -> int:
    return db.session.scalar(select(func.count()).select_from(Tenant))


def test_a_transaction_that_only_read_ends_and_gives_its_connection_back(app):
    _tenants()
    assert db.session().in_transaction()
    end_reads()
    assert not db.session().in_transaction()


@pytest.mark.parametrize("write", [
    lambda: db.session.add(Tenant(name="Pending")),
    lambda: (db.session.add(Tenant(name="Flushed")), db.session.flush()),
    lambda: db.session.execute(insert(Tenant).values(name="Core")),
])
def test_a_transaction_that_wrote_is_refused_not_rolled_back(app, write):
    write()
    with pytest.raises(RuntimeError):
        end_reads()
    db.session.commit()
    assert _tenants() == 1
    end_reads()  # a committed write leaves nothing to lose
