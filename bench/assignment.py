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

Then the latency issue 14 asks for: from a signed inbound message to its assignment, with real
workers running. A new tenant gets an admin, an agent, a channel and a keyword rule published for
message events (`rules.service`, as an administrator publishes it); the three switches are on in
the bench app and in the environment of 2 `flask jobs worker` processes started on the same
database and Redis (an embedded Redis through its unix socket), registered before timing and
stopped at the end. 200 messages (10 untimed first), one at a time, each from a new customer and
so a new open conversation, each naming the keyword: t0 before the POST, the request's own time,
then a fresh read of the conversation every 1 ms until its assignee is the rule's agent.
Target (issue 34, from issue 14's 5 x): median latency <= 2.5 x the median inbound request time,
and the subscriber's statements per assignment <= 8 (one transaction). Printed beside it: a
breakdown from the RQ job's timestamps (the path is one job hop on `events`: the request queues
notify_subscriber, which runs the rule) and the receipt's own, and the subscriber run in this
process alone (its statements, commits, driver time).
"""
import itertools
import json
import logging
import statistics
import tempfile
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import bindparam, event, literal, select, update

from bench.common import bench_app, percentile, process_env, running_workers, target
from core.config import CONTINUOUS_ASSIGNMENT
from core.crypto import hmac_sha256_hex
from core.db import db
from core.queue import queue as rq_queue
from core.queue_names import EVENTS
from desk.channels import create_channel
from desk.conversations import apply_command, mark_sending, queue_commands, snapshot
from desk.events import MESSAGE_RECEIVED
from desk.models import AssignmentReceipt, Conversation, Customer
from desk.tenancy import add_member, create_tenant
from rules import message_events, service

TARGET = 0.5
CONVERSATIONS = 100
ROUNDS = 8

LATENCY_TARGET = 2.5  # median latency <= 2.5 x the median inbound request (issue 34)
STATEMENTS_TARGET = 8  # the subscriber's statements per assignment, its two reads included (issue 34)
MESSAGES = 200
WARM_UP = 10  # untimed messages first: the workers' imports, connections and caches
WORKERS = 2  # `flask jobs worker` processes, each on events, webhooks and default
SWITCHES = {name: "1" for name in CONTINUOUS_ASSIGNMENT}
POLL_SECONDS = 0.001
GIVE_UP_SECONDS = 30.0
SUBSCRIBER = "rules.message_events.on_message_received"


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
        plain_update = update(table).where(table.c.id == bindparam("p_conversation"), table.c.tenant_id == tenant_id) \
            .values(assignee_member_id=bindparam("p_member"))  # a Core UPDATE, as the adapter's

        def queue(key: str, member_id) -> None:
            found = db.session.execute(select(*Conversation.__table__.c).where(
                Conversation.tenant_id == tenant_id, Conversation.id.in_(ids))).all()
            commands = [(row.id, member_id, snapshot(row)) for row in found]
            assert queue_commands(tenant_id, key, commands) == CONVERSATIONS
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
                db.session.connection().execute(plain_update,
                                                {"p_conversation": conversation_id, "p_member": member_id})
                db.session.commit()

        def three_round_trips(member_id) -> None:  # a read and two writes per commit, no logic
            for conversation_id in ids:
                execute = db.session.connection().execute
                execute(select(literal(1))).scalar()
                execute(plain_update, {"p_conversation": conversation_id, "p_member": member_id})
                execute(plain_update, {"p_conversation": conversation_id, "p_member": member_id})
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
    latency(app)


# --- inbound message -> assignment, with running workers ---------------------------------------

def latency(app) -> None:
    """Post signed messages one at a time to a tenant with a keyword rule published for message
    events; time each request and the wait until a real worker has assigned its conversation."""
    app.config.update({name: True for name in SWITCHES})  # to publish; the workers read the env
    with app.app_context():
        tenant_id, agent_id, url, secret = message_rule_tenant()
        alone = subscriber_in_process(app, tenant_id, url, secret)
        engine = db.engine
    client, counter = app.test_client(), itertools.count()

    def inbound() -> tuple[float, dict]:
        n = next(counter)
        raw = json.dumps({"message_id": f"latency-{uuid.uuid4().hex}", "text": f"I want a REFUND for order {n}",
                          "customer": {"external_id": f"latency-{uuid.uuid4().hex}",
                                       "name": "Bench Customer"}}).encode()
        ts = str(int(time.time()))
        start = time.perf_counter()
        response = client.post(url, data=raw, content_type="application/json", headers={
            "X-Channel-Timestamp": ts,
            "X-Channel-Signature": "v1=" + hmac_sha256_hex(secret, ts.encode() + b"." + raw)})
        took = time.perf_counter() - start
        assert response.status_code == 201, response.get_data(as_text=True)
        return took, response.get_json()["data"]

    read = select(Conversation.assignee_member_id)
    log_path = Path(tempfile.mkdtemp(prefix="bench-workers-")) / "workers.log"
    samples = []  # (wall clock at t0, request s, latency s, ids)
    with engine.connect() as conn, running_workers(app, WORKERS, process_env(app, **SWITCHES), log_path):
        for n in range(WARM_UP + MESSAGES):
            wall, start = time.time(), time.perf_counter()
            took, data = inbound()
            conversation_id = uuid.UUID(data["conversation_id"])
            query = read.where(Conversation.id == conversation_id)
            while True:  # a fresh read each time: its own transaction, ended at once
                assignee = conn.execute(query).scalar()
                conn.rollback()
                if assignee == agent_id:
                    break
                if time.perf_counter() - start > GIVE_UP_SECONDS:
                    raise RuntimeError(f"message {n} not assigned within {GIVE_UP_SECONDS} s; see {log_path}")
                time.sleep(POLL_SECONDS)
            if n >= WARM_UP:
                samples.append((wall, took, time.perf_counter() - start, data))
    requests = [sample[1] for sample in samples]
    latencies = [sample[2] for sample in samples]
    ratio = statistics.median(latencies) / statistics.median(requests)
    print(f"inbound message -> assignment, {MESSAGES} messages one at a time ({WARM_UP} untimed first), "
          f"{WORKERS} real `flask jobs worker` processes, poll every {POLL_SECONDS * 1000:g} ms")
    print(f"POST signed inbound message (request)  median {_ms(statistics.median(requests))} "
          f"p95 {_ms(percentile(requests, 0.95))}")
    print(f"until the conversation is assigned     median {_ms(statistics.median(latencies))} "
          f"p95 {_ms(percentile(latencies, 0.95))}   ratio {ratio:.2f} {target(ratio, at_most=LATENCY_TARGET)}")
    with app.app_context():
        _breakdown(samples, alone)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:8.3f} ms"


def message_rule_tenant() -> tuple[uuid.UUID, uuid.UUID, str, str]:
    """A tenant with an admin, an agent, a channel and a keyword rule published for message
    events, as an administrator publishes it; (tenant id, agent id, inbound URL, channel secret)."""
    tenant = create_tenant("Bench latency", "professional")
    tag = uuid.uuid4().hex[:8]
    admin = add_member(tenant.id, f"admin-{tag}@bench.example", "correct-horse-battery", "admin")
    agent = add_member(tenant.id, f"agent-{tag}@bench.example", "correct-horse-battery", "agent")
    channel, secret = create_channel(tenant.id, "Bench chat")
    db.session.commit()
    definition = {"schema_version": 1, "name": "Refund desk", "timezone": "Asia/Shanghai",
                  "trigger": message_events.TRIGGER, "slots": [], "assignee_ref": str(agent.id),
                  "keywords": ["refund"], "statuses": ["open", "pending"], "overwrite_assigned": False,
                  "max_actions": 10}
    saved = service.save_rule(tenant.id, admin.user_id, definition)
    service.publish(tenant.id, admin.user_id, uuid.UUID(saved["rule_id"]), service.Publication(
        revision=saved["revision"], expected_active_revision=None, confirmed=True,
        execution_mode=message_events.MODE,
        permissions=service.required_permissions(saved["definition"], message_events.MODE)))
    db.session.commit()
    return tenant.id, agent.id, f"/api/channels/{channel.id}/messages", secret


def subscriber_in_process(app, tenant_id: uuid.UUID, url: str, secret: str, runs: int = 6) -> dict:
    """Before any worker runs: post messages, take each queued event back out of the queue and run
    the subscriber here (no RQ), counting its statements and commits and the time spent inside
    the driver's execute calls; medians of the runs after the first (which loads caches)."""
    client, engine = app.test_client(), db.engine
    counts = {"statements": 0, "commits": 0, "in_execute": 0.0}
    began = []

    def before(*_):
        began.append(time.perf_counter())

    def after(*_):
        counts["statements"] += 1
        counts["in_execute"] += time.perf_counter() - began.pop()

    def commit(*_):
        counts["commits"] += 1

    samples = []
    for _ in range(runs):
        raw = json.dumps({"message_id": f"count-{uuid.uuid4().hex}", "text": "REFUND please",
                          "customer": {"external_id": f"count-{uuid.uuid4().hex}", "name": "Bench Customer"}}).encode()
        ts = str(int(time.time()))
        response = client.post(url, data=raw, content_type="application/json", headers={
            "X-Channel-Timestamp": ts,
            "X-Channel-Signature": "v1=" + hmac_sha256_hex(secret, ts.encode() + b"." + raw)})
        assert response.status_code == 201, response.get_data(as_text=True)
        data = response.get_json()["data"]
        job = rq_queue(EVENTS).fetch_job(_job_id(data["message_id"]))
        if job is not None:
            job.delete()  # nobody else runs this one
        counts.update(statements=0, commits=0, in_execute=0.0)
        event.listen(engine, "before_cursor_execute", before)
        event.listen(engine, "after_cursor_execute", after)
        event.listen(engine, "commit", commit)
        try:
            start = time.perf_counter()
            assigned = message_events.on_message_received(str(tenant_id), data["conversation_id"],
                                                          data["message_id"])
            took = time.perf_counter() - start
        finally:
            event.remove(engine, "before_cursor_execute", before)
            event.remove(engine, "after_cursor_execute", after)
            event.remove(engine, "commit", commit)
            db.session.remove()
        assert assigned == 1, assigned
        samples.append({**counts, "took": took})
    return {name: statistics.median(sample[name] for sample in samples[1:]) for name in samples[0]}


def _job_id(message_id: str) -> str:
    """The id of the subscriber's job for one message (`desk.events.dispatch`)."""
    return f"event-{MESSAGE_RECEIVED}-{message_id}-{SUBSCRIBER.replace('.', '-')}"


def _aware(moment: datetime | None) -> datetime | None:
    """SQLite keeps the UTC wall time without its zone."""
    return moment.replace(tzinfo=timezone.utc) if moment is not None and moment.tzinfo is None else moment


def _breakdown(samples: list, alone: dict) -> None:
    """Where the latency goes, from the jobs' RQ timestamps and the rows' own timestamps (all on
    this machine's clock): medians over the timed messages of each step, in ms after t0."""
    events_queue = rq_queue(EVENTS)
    steps = {name: [] for name in (
        "request (t0 -> 201)", "subscriber job: enqueued -> started (queue wait)",
        "subscriber job: started -> applied (reads, decision, recheck, CAS)", "applied -> seen by the poll (commit)",
        "subscriber job: applied -> ended",
        "worker clock: t0 -> subscriber started", "worker clock: t0 -> applied (before its commit)")}
    total = []
    for wall, took, waited, data in samples:
        message_id = data["message_id"]
        notify = events_queue.fetch_job(_job_id(message_id))
        receipt = db.session.scalar(select(AssignmentReceipt).where(
            AssignmentReceipt.conversation_id == uuid.UUID(data["conversation_id"])))
        if notify is None or receipt is None or notify.ended_at is None:
            continue
        at = {name: _aware(moment).timestamp() - wall for name, moment in (
            ("n_enq", notify.enqueued_at), ("n_start", notify.started_at), ("n_end", notify.ended_at),
            ("applied", receipt.updated_at))}
        for name, value in zip(steps, (
                took, at["n_start"] - at["n_enq"], at["applied"] - at["n_start"], waited - at["applied"],
                at["n_end"] - at["applied"], at["n_start"], at["applied"])):
            steps[name].append(value)
        total.append(waited)
    db.session.rollback()
    print(f"breakdown (medians of {len(total)} messages; RQ's job timestamps and the rows' own): one RQ job hop on "
          f"`{EVENTS}` (the request queues notify_subscriber, which assigns)")
    for name, values in steps.items():
        if values:
            print(f"  {name:52} {_ms(statistics.median(values))}  p95 {_ms(percentile(values, 0.95))}")
    print(f"  the subscriber alone, in this process (no RQ, no other load): {_ms(alone['took'])}; "
          f"{alone['commits']:g} commits, {_ms(alone['in_execute'])} of it inside the driver's execute calls "
          f"(commits not included)")
    print(f"  statements per assignment {alone['statements']:g} "
          f"{target(alone['statements'], at_most=STATEMENTS_TARGET)}")


if __name__ == "__main__":
    main()
