"""Record actions: http runs through the job queue against one process's POSTs, and the
platform's 8 POSTs in flight.

Run: .venv/bin/python -m bench.actions   (needs requirements-dev.txt for the trustme receiver)
Targets (issue 23): 200 http action runs served by the `make run` defaults (the Procfile's one
`flask --app app jobs worker` process) >= 0.3 x a loop of 200 `core.egress.post` calls from one
process to the same loopback HTTPS receiver (a TLS handshake each time, a run's body and headers);
with 12 workers and a receiver that stalls each answer 0.3 s, the receiver never answers more
than 8 at once (the Redis semaphore `studio.actions.platform_slots`).

A tenant makes at most 20 action attempts a minute, so the 200 runs are 10 tenants' 20, and the
96 of the second phase 8 new tenants' 12: each tenant has its own administrator, live app with an
http action, binding to the receiver and records. The runs are requested through the service
(`studio.actions.request_run`, then `commit_then_enqueue`, as the console API does) before any
worker starts; their jobs are taken off the queue's list while the workers start and pushed back
at once. The clock runs from that push until the table has every run's outcome (the rate counts
the `accepted` ones); worker start is timed apart. The POST loop is timed before and after the
runs, and their mean is the baseline.

Why a miss, measured in the same run: before the runs, the same worker serves 200 jobs that only
POST the same body (`bare_post`: RQ's bookkeeping and the POST, none of a run's own work), and the
worker's CPU per job is printed for both. The second phase's baseline is the most 8 slots allow:
8 / the time of one held POST from this process.
"""
import logging
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from rq import Queue
from sqlalchemy import func, select

from bench.common import (bench_app, cpu_seconds, durable_write_seconds, hold_queue, https_receiver, process_env,
                          running_workers, target)
from core.db import db
from core.egress import post
from core.queue import commit_then_enqueue, enqueue
from core.queue_names import WEBHOOKS
from core.redis import get_redis
from desk.tenancy import add_member, create_tenant
from studio.actions import PENDING, USER_AGENT, bind, request_run
from studio.apps import create_app, get_app, publish, simulate
from studio.catalog import PUBLISH_PERMISSIONS
from studio.models import StudioActionRun
from studio.records import create_record
from tests.peers import HttpsReceiver

FIELDS = [{"key": "title", "label": "Title", "type": "text", "required": True},
          {"key": "amount", "label": "Amount", "type": "number", "required": False},
          {"key": "notes", "label": "Notes", "type": "textarea", "required": False},
          {"key": "urgent", "label": "Urgent", "type": "checkbox", "required": False}]
DEFINITION = {
    "schema_version": 1, "name": "Bench actions", "description": "One http action.",
    "page": {"title": "Order", "description": "An order for the CRM.", "columns": 2, "submit_label": "Save"},
    "fields": FIELDS, "table_columns": ["title", "amount"], "workflow": {"trigger": "form.submitted", "rules": []},
    "actions": [{"key": "crm", "title": "Send to CRM", "kind": "http",
                 "fields": ["notes", "title", "amount", "urgent"]}],
}
SAMPLE = {"title": "Order A-1", "amount": 120, "notes": "Call back about the delivery date. " * 6, "urgent": True}
PASSWORD = "bench-password"
RUNS, PER_TENANT = 200, 20  # phase A: the 200 runs, a tenant's 20 attempts a minute
LIMIT_RUNS, LIMIT_PER_TENANT, LIMIT_WORKERS = 96, 12, 12  # phase B
STALL = 0.3  # seconds the receiver holds each answer in phase B
SLOTS = 8  # the platform's POSTs in flight (studio.catalog.LIMITS["action_concurrency_platform"])
TARGET = 0.3


def _tenant(endpoint: str, records: int) -> list[tuple]:
    """A tenant with a live app whose http action is bound to `endpoint`, and `records` saved
    records; what requesting each record's run takes: (tenant, app, admin, record, binding) ids."""
    tenant = create_tenant("Bench actions")
    admin = add_member(tenant.id, f"bench-{uuid.uuid4().hex[:12]}@bench.example", PASSWORD, "admin")
    found = get_app(tenant.id, create_app(tenant.id, admin.user_id, DEFINITION).app_id)
    simulate(found, admin.user_id, 1, SAMPLE)
    publish(found, admin.user_id, 1, None, PUBLISH_PERMISSIONS, False)
    db.session.commit()  # binding looks the host up with no transaction open
    binding_id = bind(found, admin.user_id, 1, "crm", endpoint, None, confirmed=True).id
    saved = [create_record(found, admin.user_id, 1, SAMPLE, uuid.uuid4())[0].id for _ in range(records)]
    db.session.commit()
    return [(tenant.id, found.id, admin.user_id, record_id, binding_id) for record_id in saved]


def _request_runs(app, endpoint: str, count: int, per_tenant: int) -> list:
    """Request `count` runs, `per_tenant` per new tenant, each committed and its job queued; the
    tenants' ids."""
    with app.app_context():
        wanted = [_tenant(endpoint, per_tenant) for _ in range(count // per_tenant)]
        for tenant_id, app_id, admin_id, record_id, binding_id in (run for runs in wanted for run in runs):
            made, replayed, job = request_run(get_app(tenant_id, app_id), admin_id, 1, record_id, "crm", binding_id,
                                              confirmed=True)
            assert not replayed and made.status == "queued", made.status
            commit_then_enqueue(job)
        return [runs[0][0] for runs in wanted]


def _run_body(app, tenant_id) -> str:
    """The body one of the tenant's runs sends (the baseline and the bare jobs POST the same)."""
    with app.app_context():
        return db.session.scalar(select(StudioActionRun.body).where(StudioActionRun.tenant_id == tenant_id)
                                 .limit(1))


def _headers() -> dict:
    """The headers a run sends (`studio.actions.execute`), without a bearer token."""
    return {"Content-Type": "application/json", "User-Agent": USER_AGENT, "x-service-action-id": str(uuid.uuid4())}


def bare_post(url: str, body: str) -> int:
    """A job that only POSTs a run's body: RQ's bookkeeping and the POST, without a run's own work."""
    return post(url, body.encode(), _headers()).status


def _post_loop(app, url: str, body: str, count: int) -> float:
    """POSTs per second of `count` `core.egress.post` calls in this process, a new TLS connection each."""
    with app.app_context():
        started = time.perf_counter()
        for _ in range(count):
            assert post(url, body.encode(), _headers()).status == 200
        return count / (time.perf_counter() - started)


def _states(app, tenant_ids: list) -> dict:
    """How many of these tenants' runs are in each state."""
    with app.app_context():
        rows = db.session.execute(select(StudioActionRun.status, func.count()).where(
            StudioActionRun.tenant_id.in_(tenant_ids)).group_by(StudioActionRun.status)).all()
        return dict(rows)


def _outcomes(states: dict, count: int) -> str:
    """The runs' states, e.g. `200/200 accepted`, naming any other outcome."""
    others = ", ".join(f"{number} {state}" for state, number in sorted(states.items()) if state != "accepted")
    return f"{states.get('accepted', 0)}/{count} accepted" + (f"; {others}" if others else "")


def _runs_done(app, receiver: HttpsReceiver, tenant_ids: list, count: int):
    """A check that every run of the tenants has its outcome in the table (the receiver's list is
    looked at first: polling the table costs the workers' database)."""
    received_before = len(receiver.received)
    return lambda: (len(receiver.received) - received_before >= count
                    and not any(_states(app, tenant_ids).get(state) for state in PENDING))


def _jobs_done(queue: Queue, receiver: HttpsReceiver, count: int):
    """A check that the receiver got `count` more POSTs from the bare jobs (it raises when one
    failed). The receiver counts, not RQ's finished registry, whose entries expire meanwhile."""
    failed, received_before = queue.failed_job_registry, len(receiver.received)
    failed_before = failed.get_job_count(cleanup=False)

    def done() -> bool:
        if failed.get_job_count(cleanup=False) > failed_before:
            raise RuntimeError("a job that only POSTs failed: RQ's failed job registry holds why")
        return len(receiver.received) - received_before >= count
    return done


def _release(queue: Queue, held: list[bytes], done, worker) -> tuple[float, float]:
    """Push the held jobs back at once and wait until `done()` (10 minutes at most): (seconds, the
    worker process's CPU seconds)."""
    cpu, started = cpu_seconds([worker]), time.perf_counter()
    queue.connection.rpush(queue.key, *held)
    while not done() and time.perf_counter() - started < 600:
        time.sleep(0.005)
    return time.perf_counter() - started, cpu_seconds([worker]) - cpu


def _workers(app, knobs: dict, count: int):
    """`count` running `flask --app app jobs worker` processes that reach the receiver."""
    env = process_env(app, **{name: str(value) for name, value in knobs.items()})
    return running_workers(app, count, env, Path(tempfile.mkdtemp(prefix="bench-actions-")) / "workers.log")


def _queue(app) -> Queue:
    """The `webhooks` queue, where action runs go."""
    with app.app_context():
        return Queue(WEBHOOKS, connection=get_redis())


def _make_run_defaults(app, receiver, knobs: dict) -> None:
    """Phase A: 200 runs served by one worker process against the one-process POST loop, and
    200 jobs that only POST (the floor of a run through the queue)."""
    url, queue = receiver.url("localhost"), _queue(app)
    tenant_ids = _request_runs(app, url, RUNS, PER_TENANT)
    body, runs = _run_body(app, tenant_ids[0]), hold_queue(queue.connection, queue.key)
    with app.app_context():
        for _ in range(RUNS):
            enqueue("bench.actions.bare_post", url, body, queue_name=WEBHOOKS)
    bare = hold_queue(queue.connection, queue.key)
    _post_loop(app, url, body, 20)  # the first POSTs build the TLS context and the lookup threads
    before = _post_loop(app, url, body, RUNS)
    starting = time.perf_counter()
    with _workers(app, knobs, 1) as (worker,):
        start_seconds = time.perf_counter() - starting
        floor = _release(queue, bare, _jobs_done(queue, receiver, RUNS), worker)
        served = _release(queue, runs, _runs_done(app, receiver, tenant_ids, RUNS), worker)
    after = _post_loop(app, url, body, RUNS)
    _print_make_run((before, after), served, floor, _states(app, tenant_ids), start_seconds, len(body.encode()))
    print(f"one INSERT + COMMIT on this database   {durable_write_seconds(app) * 1000:8.3f} ms (a run commits twice)")


def _print_make_run(baselines: tuple, served: tuple, floor: tuple, states: dict, start_seconds: float,
                    size: int) -> None:
    """Phase A's lines: the baseline, the runs with their target, the bare jobs, worker CPU."""
    baseline, rate, floor_rate = sum(baselines) / 2, RUNS / served[0], RUNS / floor[0]
    print(f"egress.post loop, one process          {baseline:8.1f} POST/s (baseline: {baselines[0]:.1f} before the"
          f" runs, {baselines[1]:.1f} after; {size}-byte body)")
    print(f"http action runs, 1 worker (make run)  {rate:8.1f} runs/s   ratio {rate / baseline:6.3f} "
          f"{target(rate / baseline, at_least=TARGET)}   ({_outcomes(states, RUNS)})")
    print(f"jobs that only POST, the same worker   {floor_rate:8.1f} jobs/s   ratio {floor_rate / baseline:6.3f}"
          f" (the floor through the queue: RQ and the POST, no run)")
    print(f"  worker CPU per run {served[1] / RUNS * 1000:.1f} ms, per bare job {floor[1] / RUNS * 1000:.1f} ms;"
          f" the worker started in {start_seconds:.2f} s (not counted)")


def _stalled_post_seconds(app, url: str, body: str) -> float:
    """Median seconds of one POST from this process that the stalling receiver holds."""
    samples = []
    with app.app_context():
        for _ in range(5):
            started = time.perf_counter()
            post(url, body.encode(), _headers())
            samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _slot_limit(app, receiver, knobs: dict) -> None:
    """Phase B: 96 runs, 12 workers, answers held 0.3 s: never more than 8 POSTs at the receiver."""
    url, queue = receiver.url("localhost"), _queue(app)
    tenant_ids = _request_runs(app, url, LIMIT_RUNS, LIMIT_PER_TENANT)
    runs = hold_queue(queue.connection, queue.key)
    receiver.default = (200, {}, b"ok", STALL)
    one = _stalled_post_seconds(app, url, _run_body(app, tenant_ids[0]))
    ceiling = SLOTS / one
    starting = time.perf_counter()
    with _workers(app, knobs, LIMIT_WORKERS) as workers:
        start_seconds = time.perf_counter() - starting
        receiver.most_in_flight = 0
        seconds, _ = _release(queue, runs, _runs_done(app, receiver, tenant_ids, LIMIT_RUNS), workers[0])
    rate, most, states = LIMIT_RUNS / seconds, receiver.most_in_flight, _states(app, tenant_ids)
    print(f"one POST held {STALL} s by the receiver     {one * 1000:8.1f} ms: {SLOTS} in flight allow at most "
          f"{ceiling:.1f} runs/s (baseline)")
    print(f"http action runs, {LIMIT_WORKERS} workers            {rate:8.1f} runs/s   ratio {rate / ceiling:6.3f}"
          f" (printed, no target)   ({_outcomes(states, LIMIT_RUNS)})")
    print(f"  most POSTs at the receiver at once   {most:8d}   (limit {SLOTS}) "
          f"limit {'respected' if most <= SLOTS else 'broken'}")
    print(f"  the {LIMIT_WORKERS} workers started in {start_seconds:.2f} s (not counted)")


def main() -> None:
    """Print both phases."""
    logging.disable(logging.WARNING)
    app = bench_app()
    receiver, knobs = https_receiver(app)
    try:
        _make_run_defaults(app, receiver, knobs)
        _slot_limit(app, receiver, knobs)
    finally:
        receiver.stop()


if __name__ == "__main__":
    main()
