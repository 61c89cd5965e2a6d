"""The tick's breach sweep (issue 36) killed (`kill -9` of a real worker while its UPDATE waits on a
row) and the database restarting under it (while the same UPDATE waits): the sweep records all due
breaches or none, never half, and the next tick records each exactly once."""
import threading
import uuid
from datetime import timedelta

from rq import Queue
from sqlalchemy import func, insert, select, text

from core.clock import to_beijing, utcnow
from core.db import db
from core.queue_names import DEFAULT
from desk import service_timers
from desk.channels import create_channel
from desk.models import Conversation, Customer
from desk.service_level_models import ServiceLevelTimer
from desk.tenancy import create_tenant
from jobs.clock import TICK_JOB
from tests.faults.stores import Host, host_env, wait_for_a_lock

DUE = 200


def _due_timers() -> list[uuid.UUID]:
    """DUE running first-response timers of a new tenant, all past their due time; committed. Ids."""
    tenant = create_tenant("Faults breaches")
    channel, _ = create_channel(tenant.id, "Faults chat")
    customer = Customer(tenant_id=tenant.id, name="Late customer")
    db.session.add(customer)
    db.session.flush()
    conversations = [Conversation(tenant_id=tenant.id, customer_id=customer.id) for _ in range(DUE)]
    db.session.add_all(conversations)
    db.session.flush()
    started = utcnow() - timedelta(hours=1)
    rows = [{"id": uuid.uuid4(), "tenant_id": tenant.id, "conversation_id": row.id, "channel_id": channel.id,
             "kind": "first_response", "hours": "calendar", "target_minutes": 30, "started_at": started,
             "started_on": to_beijing(started).date(), "counted_since": started, "used_minutes": 0.0,
             "due_at": started + timedelta(minutes=30)} for row in conversations]
    db.session.execute(insert(ServiceLevelTimer), rows)
    db.session.commit()
    return [row["id"] for row in rows]


def _breached() -> int:
    db.session.rollback()
    return db.session.scalar(select(func.count()).select_from(ServiceLevelTimer).where(
        ServiceLevelTimer.breached_at.is_not(None)))


def test_a_worker_killed_mid_sweep_records_no_breach_and_the_next_tick_each_once(
        fault_stores, faults_context, tmp_path):
    postgres, server = fault_stores
    timers = _due_timers()
    host = Host("host", tmp_path, host_env("host", tmp_path, postgres.url, server.url))
    with db.engine.connect() as holder:  # one due row locked: the worker's sweep waits on it
        holder.execute(text("SELECT id FROM service_level_timer WHERE id = :id FOR UPDATE"), {"id": timers[-1]})
        Queue(DEFAULT, connection=server.client()).enqueue(TICK_JOB, job_id="tick-breaches-killed")
        host.start("worker-1")
        try:
            wait_for_a_lock(postgres, "UPDATE service_level_timer")
            host.kill("worker-1")
        finally:
            host.stop_all()
        holder.rollback()
    assert _breached() == 0  # the killed UPDATE wrote nothing: all or none
    assert service_timers.sweep() == DUE  # the next tick
    assert service_timers.sweep() == 0 and _breached() == DUE


def test_a_database_restart_mid_sweep_records_no_breach_and_the_next_tick_each_once(fault_stores, faults_context,
                                                                                   fault_app):
    postgres, _ = fault_stores
    timers = _due_timers()
    outcome = []

    def tick() -> None:
        with fault_app.app_context():
            try:
                outcome.append(service_timers.sweep())
            except Exception as error:  # the tick logs a failed handler and goes on
                outcome.append(type(error).__name__)

    holder = db.engine.connect()
    holder.execute(text("SELECT id FROM service_level_timer WHERE id = :id FOR UPDATE"), {"id": timers[0]})
    sweeping = threading.Thread(target=tick)
    sweeping.start()
    wait_for_a_lock(postgres, "UPDATE service_level_timer")
    postgres.ctl("restart")  # the waiting UPDATE and the lock's holder die with their server
    sweeping.join(60)
    holder.invalidate()
    assert outcome and outcome[0] != DUE, outcome
    assert _breached() == 0
    assert service_timers.sweep() == DUE  # the next tick, on a pool that dropped its dead connections
    assert service_timers.sweep() == 0 and _breached() == DUE
