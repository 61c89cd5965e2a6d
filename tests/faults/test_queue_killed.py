"""The waiting queue's tick work killed (`kill -9` of a real worker mid-drain), and the database
restarting under it: every conversation is either assigned with its `applied` receipt and its line,
out of the queue, or still waiting untouched; the next tick assigns the rest, none twice."""
import time
from collections import Counter
from datetime import timedelta

from rq import Queue
from sqlalchemy import func, insert, select, update

from core.clock import utcnow
from core.db import db
from core.queue_names import DEFAULT
from desk import drain
from desk.availability import save_policy
from desk.availability_models import POLICY_DEFAULTS, AvailabilityEvent, WaitingConversation
from desk.models import AssignmentReceipt, Conversation, Customer, Member
from desk.tenancy import add_member, create_tenant
from jobs.clock import TICK_JOB
from tests.conftest import PASSWORD
from tests.faults.stores import Host, host_env

WAITING = 600
AGENTS = 10


def _waiting_tenant():
    """A tenant with its policy on, AGENTS agents online for the next hour (room for every
    conversation) and WAITING conversations waiting for anyone; committed. Its id."""
    tenant = create_tenant("Faults queue")
    agents = [add_member(tenant.id, f"agent{n}@queue.faults.example", PASSWORD, "agent").id for n in range(AGENTS)]
    db.session.execute(update(Member).where(Member.id.in_(agents)).values(
        presence="online", last_seen_at=utcnow() + timedelta(hours=1), capacity=100))
    customer = Customer(tenant_id=tenant.id, name="Waiting customer")
    db.session.add(customer)
    db.session.flush()
    rows = [Conversation(tenant_id=tenant.id, customer_id=customer.id) for _ in range(WAITING)]
    db.session.add_all(rows)
    db.session.flush()
    now = utcnow()
    db.session.execute(insert(WaitingConversation), [
        {"conversation_id": row.id, "tenant_id": tenant.id, "preferred_member_id": None, "reason_code": "agent_offline",
         "waiting_since": now - timedelta(seconds=WAITING - n), "expected_assignee_id": None}
        for n, row in enumerate(rows)])
    save_policy(tenant.id, None, {**POLICY_DEFAULTS, "enabled": True})
    db.session.commit()
    return tenant.id


def _applied() -> int:
    db.session.rollback()
    return db.session.scalar(select(func.count()).select_from(AssignmentReceipt).where(
        AssignmentReceipt.status == "applied"))


def _consistent(tenant_id) -> int:
    """Each conversation is assigned exactly when it has one applied receipt and one `drained` line
    and no longer waits; how many are assigned."""
    db.session.rollback()
    assigned = {row.id: row.assignee_member_id for row in db.session.execute(
        select(Conversation.id, Conversation.assignee_member_id).where(Conversation.tenant_id == tenant_id))}
    receipts = Counter(db.session.scalars(select(AssignmentReceipt.conversation_id).where(
        AssignmentReceipt.tenant_id == tenant_id, AssignmentReceipt.status == "applied")))
    lines = Counter(db.session.scalars(select(AvailabilityEvent.conversation_id).where(
        AvailabilityEvent.tenant_id == tenant_id, AvailabilityEvent.kind == "drained")))
    waiting = set(db.session.scalars(select(WaitingConversation.conversation_id)))
    for conversation_id, assignee in assigned.items():
        done = assignee is not None
        assert (receipts[conversation_id], lines[conversation_id], conversation_id in waiting) == (
            (1, 1, False) if done else (0, 0, True)), conversation_id
    return sum(assignee is not None for assignee in assigned.values())


def test_a_worker_killed_mid_drain_leaves_each_conversation_assigned_once_or_waiting(
        fault_stores, faults_context, tmp_path):
    postgres, server = fault_stores
    tenant_id = _waiting_tenant()
    host = Host("host", tmp_path, host_env("host", tmp_path, postgres.url, server.url))
    Queue(DEFAULT, connection=server.client()).enqueue(TICK_JOB, job_id="tick-killed")
    host.start("worker-1")
    try:
        deadline = time.monotonic() + 60
        while _applied() < 20:
            assert time.monotonic() < deadline, "the worker never drained"
            time.sleep(0.02)
        host.kill("worker-1")  # mid-drain: one conversation's transaction may be open
    finally:
        host.stop_all()
    before = _consistent(tenant_id)
    assert 20 <= before < WAITING, "killed after the drain finished: nothing was interrupted"
    assert drain.sweep() == WAITING - before  # the next tick
    assert _consistent(tenant_id) == WAITING


def test_a_database_restart_mid_drain_costs_one_tick_and_nothing_is_done_twice(fault_stores, faults_context,
                                                                               monkeypatch):
    postgres, _ = fault_stores
    tenant_id = _waiting_tenant()
    outcomes = []
    assign = drain.assign_from_queue

    def restarted_at_the_fiftieth(*args):  # the real drain; PostgreSQL restarts before its 51st conversation
        if len(outcomes) == 50:
            postgres.ctl("restart")
        outcomes.append(assign(*args))
        return outcomes[-1]

    monkeypatch.setattr(drain, "assign_from_queue", restarted_at_the_fiftieth)
    drain.sweep()  # the tenant's work fails at the restart, logged; the tick goes on
    assert outcomes.count("applied") == 50
    monkeypatch.undo()
    assert _consistent(tenant_id) == 50
    assert drain.sweep() == WAITING - 50  # the next tick, on a pool that dropped its dead connections
    assert _consistent(tenant_id) == WAITING
