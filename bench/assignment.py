"""Commands applied per second by the atomic assignment adapter, against plain UPDATEs of the same
rows in the same run: one unconditional `UPDATE conversation SET assignee_member_id = …` by id and
tenant and its COMMIT each (the adapter commits each command alone too), so machine and disk speed
cancel out. The plain UPDATE runs on the session's connection as the adapter's statements do
(Core, no ORM per-statement work): the cheapest way this code base has to write that row.

Run: .venv/bin/python -m bench.assignment
Target (issue 14): adapter rate >= 0.5 x the plain UPDATE rate, on 100 conversations.
A command through the adapter is a read of its receipt, the compare-and-swap UPDATE of the
conversation, the receipt's conditional UPDATE and the COMMIT. Each round queues a fresh plan
(its snapshots taken then, untimed) and applies it, and times plain UPDATEs of the same 100 rows;
the rounds alternate the order so the machine's drift affects both alike. Printed beside it, not
targeted: the worker's whole path per command (mark `sending`, commit, then the adapter), and
the adapter's store round trips alone (a trivial read and two plain UPDATEs per commit), the
least any adapter that reads its receipt and writes two rows in one transaction costs here.
"""
import logging
import statistics
import time

from sqlalchemy import bindparam, literal, select, update

from bench.common import bench_app, target
from core.db import db
from desk.conversations import apply_command, mark_sending, queue_commands, snapshot
from desk.models import Conversation, Customer
from desk.tenancy import add_member, create_tenant

TARGET = 0.5
CONVERSATIONS = 100
ROUNDS = 8


def main() -> None:
    """Set up 100 conversations, time the adapter and plain UPDATEs in alternating rounds."""
    logging.disable(logging.INFO)
    app = bench_app()
    with app.app_context():
        dialect = db.engine.dialect.name
        tenant = create_tenant("Bench", "professional")
        agents = [add_member(tenant.id, f"agent{n}@bench.example", "correct-horse-battery", "agent").id
                  for n in range(2)]
        customer = Customer(tenant_id=tenant.id, name="Bench Customer")
        db.session.add(customer)
        db.session.flush()
        rows = [Conversation(tenant_id=tenant.id, customer_id=customer.id) for _ in range(CONVERSATIONS)]
        db.session.add_all(rows)
        db.session.commit()
        tenant_id, ids = tenant.id, [row.id for row in rows]
        db.session.expunge_all()  # no loaded objects to expire at each commit, in either action
        table = Conversation.__table__
        plain_update = update(table).where(table.c.id == bindparam("b_id"), table.c.tenant_id == tenant_id) \
            .values(assignee_member_id=bindparam("b_member"))  # a Core UPDATE, as the adapter's

        def queue(key: str, member_id) -> None:
            found = db.session.execute(select(*Conversation.__table__.c).where(
                Conversation.tenant_id == tenant_id, Conversation.id.in_(ids))).all()
            assert queue_commands(tenant_id, key, [(row.id, member_id, snapshot(row)) for row in found]) == CONVERSATIONS
            db.session.commit()

        def adapter(key: str) -> None:
            for conversation_id in ids:
                assert apply_command(tenant_id, key, conversation_id) == "applied"

        def worker_path(key: str) -> None:
            for conversation_id in ids:
                assert mark_sending(tenant_id, key, conversation_id)
                db.session.commit()
                assert apply_command(tenant_id, key, conversation_id) == "applied"

        def plain(member_id) -> None:
            for conversation_id in ids:
                db.session.connection().execute(plain_update, {"b_id": conversation_id, "b_member": member_id})
                db.session.commit()

        def three_round_trips(member_id) -> None:  # a read and two writes per commit, no logic
            for conversation_id in ids:
                execute = db.session.connection().execute
                execute(select(literal(1))).scalar()
                execute(plain_update, {"b_id": conversation_id, "b_member": member_id})
                execute(plain_update, {"b_id": conversation_id, "b_member": member_id})
                db.session.commit()

        def timed(action, *args) -> float:
            start = time.perf_counter()
            action(*args)
            return CONVERSATIONS / (time.perf_counter() - start)

        samples = {"plain": [], "adapter": [], "worker": [], "floor": []}
        for n in range(ROUNDS):  # every action really changes the assignee: the agents alternate
            if n % 2 == 0:
                samples["plain"].append(timed(plain, agents[0]))
            samples["floor"].append(timed(three_round_trips, agents[n % 2]))
            queue(f"bench:adapter:{n}", agents[1])  # snapshots of now; applied at once
            samples["adapter"].append(timed(adapter, f"bench:adapter:{n}"))
            if n % 2 == 1:
                samples["plain"].append(timed(plain, agents[0]))
            samples["floor"].append(timed(three_round_trips, agents[n % 2]))
            queue(f"bench:worker:{n}", agents[1])
            samples["worker"].append(timed(worker_path, f"bench:worker:{n}"))
            samples["plain"].append(timed(plain, agents[0]))
            samples["floor"].append(timed(three_round_trips, agents[n % 2]))
    plain_rate, adapter_rate, worker_rate, floor_rate = (statistics.median(samples[name])
                                                         for name in ("plain", "adapter", "worker", "floor"))
    ratio = adapter_rate / plain_rate
    print(f"database: {dialect}; {CONVERSATIONS} conversations, {ROUNDS} alternating rounds (medians)")
    print(f"plain UPDATE + COMMIT per conversation        {1000 / plain_rate:7.3f} ms {plain_rate:9.1f}/s (baseline)")
    print(f"adapter: apply_command (CAS + receipt, COMMIT) {1000 / adapter_rate:7.3f} ms {adapter_rate:9.1f}/s   "
          f"ratio {ratio:.3f} {target(ratio, at_least=TARGET)}")
    print(f"worker path: mark sending, COMMIT, adapter     {1000 / worker_rate:7.3f} ms {worker_rate:9.1f}/s   "
          f"ratio {worker_rate / plain_rate:.3f} (no target)")
    print(f"its statements alone: SELECT 1, 2 UPDATEs, COMMIT {1000 / floor_rate:7.3f} ms {floor_rate:9.1f}/s   "
          f"ratio {floor_rate / plain_rate:.3f} (the least a read and two writes per command cost)")
    print("inbound message -> assignment latency: not measured; the message-triggered rules that "
          "would make that assignment are not built yet")


if __name__ == "__main__":
    main()
