"""What availability (issue 35) costs, against its own baselines in the same run.

1. The message-triggered assignment with the tenant's availability policy on vs off: two tenants
   alike (an admin, an agent, a channel, a keyword rule published for message events), one with the
   policy on and its agent online with room for every message. Signed messages are posted and each
   subscriber run in this process (`bench.assignment.subscriber_in_process`: no RQ, its statements counted), the tenants
   alternating over ROUNDS rounds. Target: the policy-on rate >= 0.8 x the policy-off rate. The
   policy-on run has one statement more (the target's availability under its row lock).

2. Draining the waiting queue: 1,000 waiting conversations to 50 available agents (capacity 100
   each) by the tick's queue work (`desk.drain.work`: the members read once, then one transaction
   per conversation), vs 1,000 plain adapter assignments of the same rows (`apply_command` on
   queued commands: a read of the receipt, the compare-and-swap, the receipt's move, a COMMIT).
   Target: drained per second >= 0.5 x adapter commands per second. A drained conversation is five
   statements and a commit (the member's availability under their row lock with the conversation as
   it stands, the compare-and-swap, the wait's end, the receipt, the thread's line) where a command
   is three: printed beside it, the floor (a read and four plain UPDATEs per COMMIT, no logic) and
   the statements per drained conversation at 250 and at 1,000 waiting, which must be flat.

Run: .venv/bin/python -m bench.availability (BENCH_DATABASE_URL / BENCH_REDIS_URL for PostgreSQL).
"""
import logging
from contextlib import contextmanager
import statistics
import time
import uuid
from datetime import timedelta

from sqlalchemy import bindparam, event, insert, literal, select, update

from bench.assignment import message_rule_tenant, subscriber_in_process
from bench.common import bench_app, target
from core.clock import utcnow
from core.db import db
from desk import drain
from desk.availability import save_policy
from desk.availability_models import POLICY_DEFAULTS, WaitingConversation
from desk.conversations import apply_command, queue_commands, snapshot
from desk.models import Conversation, Customer, Member
from desk.tenancy import add_member, create_tenant

ON_OFF_TARGET = 0.8
DRAIN_TARGET = 0.5
ROUNDS = 5
RUNS = 12  # subscriber runs per tenant and round (the first of each is not counted)
WAITING = 1000
MEMBERS = 50
CAPACITY = 100


def main() -> None:
    logging.disable(logging.INFO)
    app = bench_app()
    app.config.update({"ATOMIC_ASSIGNMENT_ENABLED": True, "AUTOMATION_EXECUTION_ENABLED": True,
                       "AUTOMATION_PLANNING_ENABLED": True, "AUTOMATION_SCHEDULE_EXECUTION_ENABLED": True,
                       "CONTINUOUS_ASSIGNMENT_ENABLED": True})
    with app.app_context():
        dialect = db.engine.dialect.name
    print(f"database: {dialect}")
    message_path(app)
    draining(app)


# --- 1. the message path, policy on vs off --------------------------------------------------------

def message_path(app) -> None:
    with app.app_context():
        off = message_rule_tenant()
        on = message_rule_tenant()
        save_policy(on[0], None, {**POLICY_DEFAULTS, "enabled": True})
        db.session.execute(update(Member).where(Member.id == on[1]).values(capacity=CAPACITY))  # room for every run
        db.session.commit()
    samples = {"off": [], "on": []}
    for n in range(ROUNDS):
        for name, (tenant_id, agent_id, url, secret) in (("off", off), ("on", on)) if n % 2 == 0 else \
                (("on", on), ("off", off)):
            with app.app_context():
                _online([agent_id])
                samples[name].append(subscriber_in_process(app, tenant_id, url, secret, runs=RUNS))
    off_took, on_took = (statistics.median(sample["took"] for sample in samples[name]) for name in ("off", "on"))
    off_statements, on_statements = (statistics.median(sample["statements"] for sample in samples[name])
                                     for name in ("off", "on"))
    ratio = off_took / on_took
    print(f"message-triggered assignment, the subscriber in this process, {ROUNDS} alternating rounds of "
          f"{RUNS - 1} messages per tenant (medians)")
    print(f"  policy off  {off_took * 1000:7.3f} ms  {off_statements:g} statements (baseline)")
    print(f"  policy on   {on_took * 1000:7.3f} ms  {on_statements:g} statements   ratio {ratio:.3f} "
          f"{target(ratio, at_least=ON_OFF_TARGET)}")


def _online(member_ids: list[uuid.UUID]) -> None:
    """The members online now (a fresh heartbeat)."""
    db.session.execute(update(Member).where(Member.id.in_(member_ids)).values(presence="online",
                                                                              last_seen_at=utcnow()))
    db.session.commit()


# --- 2. draining the queue vs plain adapter commands ------------------------------------------------

def draining(app) -> None:
    with app.app_context():
        tenant = create_tenant("Bench queue", "professional")
        members = [add_member(tenant.id, f"agent{n}@queue.bench.example", "correct-horse-battery", "agent").id
                   for n in range(MEMBERS)]
        db.session.execute(update(Member).where(Member.id.in_(members)).values(capacity=CAPACITY))
        customer = Customer(tenant_id=tenant.id, name="Bench Customer")
        db.session.add(customer)
        db.session.flush()
        rows = [Conversation(tenant_id=tenant.id, customer_id=customer.id) for _ in range(WAITING)]
        db.session.add_all(rows)
        db.session.commit()
        save_policy(tenant.id, None, {**POLICY_DEFAULTS, "enabled": True, "fallback_after_minutes": 0})
        db.session.commit()
        tenant_id, ids = tenant.id, [row.id for row in rows]
        db.session.expunge_all()
        samples = {"adapter": [], "drain": [], "floor": [], "adapter_inside": [], "drain_inside": []}
        statements = {}
        for n in range(ROUNDS):
            order = ("adapter", "drain") if n % 2 == 0 else ("drain", "adapter")
            for name in order:
                if name == "adapter":
                    rate, inside = _adapter_round(tenant_id, ids, members[n % MEMBERS], n)
                    samples[name].append(rate)
                    samples["adapter_inside"].append(inside)
                    samples["floor"].append(_floor_round(tenant_id, ids, members[n % MEMBERS]))
                else:
                    rate, per, inside = _drain_round(tenant_id, ids, members)
                    samples[name].append(rate)
                    samples["drain_inside"].append(inside)
                    statements.setdefault(WAITING, []).append(per)
        statements[WAITING // 4] = [_drain_round(tenant_id, ids[:WAITING // 4], members)[1]]
    adapter_rate, drain_rate = statistics.median(samples["adapter"]), statistics.median(samples["drain"])
    ratio = drain_rate / adapter_rate
    print(f"draining {WAITING} waiting conversations to {MEMBERS} available agents vs {WAITING} adapter commands, "
          f"{ROUNDS} alternating rounds (medians)")
    print(f"  adapter: apply_command per conversation  {1000 / adapter_rate:7.3f} ms {adapter_rate:8.1f}/s (baseline)")
    print(f"  queue work: drained per conversation     {1000 / drain_rate:7.3f} ms {drain_rate:8.1f}/s   "
          f"ratio {ratio:.3f} {target(ratio, at_least=DRAIN_TARGET)}")
    adapter_inside, drain_inside = (statistics.median(samples[name]) * 1000 for name in ("adapter_inside",
                                                                                          "drain_inside"))
    print(f"  inside the driver's execute per conversation: adapter {adapter_inside:.3f} ms, queue work "
          f"{drain_inside:.3f} ms (the rest is the commit and Python)")
    floor_rate = statistics.median(samples["floor"])
    print(f"  its statements alone: SELECT 1, 4 UPDATEs, COMMIT  {1000 / floor_rate:7.3f} ms {floor_rate:8.1f}/s   "
          f"ratio {floor_rate / adapter_rate:.3f} (the most five statements and a commit per conversation reach)")
    small, large = statistics.median(statements[WAITING // 4]), statistics.median(statements[WAITING])
    flat = "flat" if abs(small - large) <= 0.05 * large else "not flat"
    print(f"  statements per drained conversation: {small:.2f} at {WAITING // 4} waiting, {large:.2f} at {WAITING} "
          f"waiting ({flat}; the members, calendar and policy are read once per drain)")


def _unassign(tenant_id: uuid.UUID, ids: list[uuid.UUID]) -> None:
    db.session.execute(update(Conversation).where(Conversation.tenant_id == tenant_id, Conversation.id.in_(ids))
                       .values(assignee_member_id=None))
    db.session.commit()


def _adapter_round(tenant_id: uuid.UUID, ids: list[uuid.UUID], member_id: uuid.UUID, n: int) -> tuple[float, float]:
    """Queue a command per conversation (untimed), then apply each; (commands per second, seconds
    inside the driver per command)."""
    _unassign(tenant_id, ids)
    key = f"bench:availability:{n}"
    found = db.session.execute(select(*Conversation.__table__.c).where(Conversation.id.in_(ids))).all()
    queue_commands(tenant_id, key, [(row.id, member_id, snapshot(row)) for row in found])
    db.session.commit()
    with counting() as counted:
        start = time.perf_counter()
        for conversation_id in ids:
            assert apply_command(tenant_id, key, conversation_id, False) == "applied"
        took = time.perf_counter() - start
    return len(ids) / took, counted["inside"] / len(ids)


def _floor_round(tenant_id: uuid.UUID, ids: list[uuid.UUID], member_id: uuid.UUID) -> float:
    """A read and four plain UPDATEs per COMMIT, no logic: the least five statements in one
    transaction per conversation cost here; per second."""
    table = Conversation.__table__
    plain = update(table).where(table.c.id == bindparam("p_conversation"), table.c.tenant_id == tenant_id) \
        .values(assignee_member_id=bindparam("p_member"))
    start = time.perf_counter()
    for conversation_id in ids:
        execute = db.session.connection().execute
        execute(select(literal(1))).scalar()
        for _ in range(4):
            execute(plain, {"p_conversation": conversation_id, "p_member": member_id})
        db.session.commit()
    return len(ids) / (time.perf_counter() - start)


def _drain_round(tenant_id: uuid.UUID, ids: list[uuid.UUID], members: list[uuid.UUID]) -> tuple[float, float, float]:
    """Make the conversations wait for anyone (untimed), then run the queue work once;
    (drained per second, statements and seconds inside the driver per drained conversation)."""
    _unassign(tenant_id, ids)
    now = utcnow()
    db.session.execute(insert(WaitingConversation), [
        {"conversation_id": conversation_id, "tenant_id": tenant_id, "preferred_member_id": None,
         "reason_code": "agent_offline", "waiting_since": now - timedelta(seconds=len(ids) - n),
         "expected_assignee_id": None} for n, conversation_id in enumerate(ids)])
    db.session.commit()
    _online(members)
    with counting() as counted:
        start = time.perf_counter()
        drained = drain.work(tenant_id)
        took = time.perf_counter() - start
    assert drained == len(ids), drained
    return drained / took, counted["statements"] / drained, counted["inside"] / drained


@contextmanager
def counting():
    """Count the statements run inside the block and the time spent inside the driver's execute."""
    counted, began = {"statements": 0, "inside": 0.0}, []

    def before(*_):
        began.append(time.perf_counter())

    def after(*_):
        counted["statements"] += 1
        counted["inside"] += time.perf_counter() - began.pop()

    engine = db.engine
    event.listen(engine, "before_cursor_execute", before)
    event.listen(engine, "after_cursor_execute", after)
    try:
        yield counted
    finally:
        event.remove(engine, "before_cursor_execute", before)
        event.remove(engine, "after_cursor_execute", after)


if __name__ == "__main__":
    main()
