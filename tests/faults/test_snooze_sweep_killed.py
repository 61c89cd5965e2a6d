"""The tick's wake-up of snoozed conversations (issue 37) killed (`kill -9` of a real worker while
its UPDATE waits on a conversation's row): the killed batch reopens nothing and records no event,
and the next tick reopens each due conversation once, with one event each; a snooze not due yet
stays. The same when PostgreSQL restarts under the waiting batch."""
import threading
from datetime import timedelta

from rq import Queue
from sqlalchemy import func, select, text

from core.clock import utcnow
from core.db import db
from core.queue_names import DEFAULT
from desk import snooze
from desk.models import Conversation, ConversationEvent, Customer
from desk.tenancy import create_tenant
from jobs.clock import TICK_JOB
from tests.faults.stores import Host, host_env, wait_for_a_lock

DUE = 20


def _snoozed() -> list:
    """DUE conversations snoozed until a minute ago and one until tomorrow, of a new tenant; their
    ids, the not-due one last."""
    tenant = create_tenant("Faults snooze")
    now = utcnow()
    ids = []
    for n in range(DUE + 1):
        customer = Customer(tenant_id=tenant.id, name=f"Snoozed {n}")
        db.session.add(customer)
        db.session.flush()
        until = now + (timedelta(days=1) if n == DUE else -timedelta(minutes=1))
        conversation = Conversation(tenant_id=tenant.id, customer_id=customer.id, status="pending",
                                    snoozed_until=until)
        db.session.add(conversation)
        db.session.flush()
        ids.append(conversation.id)
    db.session.commit()
    return ids


def _state(ids: list) -> tuple[int, int]:
    """How many of the conversations are open, and how many wake events they have."""
    db.session.rollback()
    opened = db.session.scalar(select(func.count()).select_from(Conversation)
                               .where(Conversation.id.in_(ids), Conversation.status == "open"))
    events = db.session.scalar(select(func.count()).select_from(ConversationEvent)
                               .where(ConversationEvent.conversation_id.in_(ids), ConversationEvent.kind == "wake"))
    return opened, events


def test_a_worker_killed_mid_wake_up_reopens_nothing_and_the_next_tick_reopens_each_once(
        fault_stores, faults_context, tmp_path):
    postgres, server = fault_stores
    ids = _snoozed()
    host = Host("host", tmp_path, host_env("host", tmp_path, postgres.url, server.url))
    with db.engine.connect() as holder:  # the last due conversation locked: the worker's wake-up waits on it
        holder.execute(text("SELECT status FROM conversation WHERE id = :id FOR UPDATE"), {"id": ids[DUE - 1]})
        Queue(DEFAULT, connection=server.client()).enqueue(TICK_JOB, job_id="tick-snooze-killed")
        host.start("worker-1")
        try:
            wait_for_a_lock(postgres, "UPDATE conversation SET status")
            host.kill("worker-1")
        finally:
            host.stop_all()
        holder.rollback()
    assert _state(ids) == (0, 0)  # the killed batch: nothing reopened, no event
    assert snooze.sweep() == DUE  # the next tick
    assert _state(ids) == (DUE, DUE)
    assert snooze.sweep() == 0
    db.session.rollback()
    assert db.session.get(Conversation, ids[DUE]).status == "pending"


def test_a_database_restart_mid_wake_up_reopens_nothing_and_the_next_tick_reopens_each_once(
        fault_stores, faults_context, fault_app):
    postgres, _ = fault_stores
    ids = _snoozed()
    outcome = []

    def tick() -> None:
        with fault_app.app_context():
            try:
                outcome.append(snooze.sweep())
            except Exception as error:  # the tick logs a failed handler and goes on
                outcome.append(type(error).__name__)

    holder = db.engine.connect()
    holder.execute(text("SELECT status FROM conversation WHERE id = :id FOR UPDATE"), {"id": ids[DUE - 1]})
    sweeping = threading.Thread(target=tick)
    sweeping.start()
    wait_for_a_lock(postgres, "UPDATE conversation SET status")
    postgres.ctl("restart")  # the waiting batch and the lock's holder die with their server
    sweeping.join(60)
    holder.invalidate()
    assert outcome and outcome[0] != DUE, outcome
    assert _state(ids) == (0, 0)
    assert snooze.sweep() == DUE  # the next tick, on a pool that dropped its dead connections
    assert _state(ids) == (DUE, DUE) and snooze.sweep() == 0
