"""The tick's sweep of old composer drafts (issue 37) killed (`kill -9` of a real worker while its
DELETE waits on a row): it removes all the old drafts or none, and the next tick removes them; a
recent draft is never touched."""
from datetime import timedelta

from rq import Queue
from sqlalchemy import func, insert, select, text

from core.clock import utcnow
from core.db import db
from core.queue_names import DEFAULT
from desk import drafts
from desk.models import ComposerDraft, Conversation, Customer
from desk.tenancy import add_member, create_tenant
from jobs.clock import TICK_JOB
from tests.conftest import PASSWORD
from tests.faults.stores import Host, host_env, wait_for_a_lock

OLD = 100


def _drafts() -> int:
    """OLD drafts untouched for 31 days and one of yesterday, of a new tenant; committed. The id of
    a member whose draft is old (the test locks it)."""
    tenant = create_tenant("Faults drafts")
    members = [add_member(tenant.id, f"agent{n}@drafts.faults.example", PASSWORD, "agent").id for n in range(OLD + 1)]
    customer = Customer(tenant_id=tenant.id, name="Drafted customer")
    db.session.add(customer)
    db.session.flush()
    conversation = Conversation(tenant_id=tenant.id, customer_id=customer.id)
    db.session.add(conversation)
    db.session.flush()
    now = utcnow()
    db.session.execute(insert(ComposerDraft), [
        {"member_id": member_id, "conversation_id": conversation.id, "tenant_id": tenant.id, "text": "Half-written",
         "private": False, "updated_at": now - timedelta(days=1 if n == OLD else 31)}
        for n, member_id in enumerate(members)])
    db.session.commit()
    return members[0]


def _kept() -> int:
    db.session.rollback()
    return db.session.scalar(select(func.count()).select_from(ComposerDraft))


def test_a_worker_killed_mid_sweep_removes_no_draft_and_the_next_tick_removes_the_old(
        fault_stores, faults_context, tmp_path):
    postgres, server = fault_stores
    locked = _drafts()
    host = Host("host", tmp_path, host_env("host", tmp_path, postgres.url, server.url))
    with db.engine.connect() as holder:  # one old draft locked: the worker's sweep waits on it
        holder.execute(text("SELECT text FROM composer_draft WHERE member_id = :id FOR UPDATE"), {"id": locked})
        Queue(DEFAULT, connection=server.client()).enqueue(TICK_JOB, job_id="tick-drafts-killed")
        host.start("worker-1")
        try:
            wait_for_a_lock(postgres, "DELETE FROM composer_draft")
            host.kill("worker-1")
        finally:
            host.stop_all()
        holder.rollback()
    assert _kept() == OLD + 1  # the killed DELETE removed nothing: all or none
    assert drafts.sweep() == OLD  # the next tick
    assert _kept() == 1
