"""Open API v1: keyset paging at depth, record creation rate, webhook delivery throughput.

Run: .venv/bin/python -m bench.openapi   (needs requirements-dev.txt for the trustme receiver)
Targets (issue 5): the last page of 10,000 records <= 1.3 x the first page; POST /records
>= 0.3 x an authenticated read. Issue 19: webhook deliveries with 4 running workers >= 0.5 x signed
POSTs from one process to the same loopback receiver, and <= 6 ms of worker CPU per delivery.
Each ratio with a target is followed by "target met" or "target missed".
"""
import logging
import os
import subprocess
import sys
import tempfile
import time
import uuid

from rq import Queue, Worker
from sqlalchemy import insert, select, update

from bench.common import (bench_app, cpu_seconds, durable_write_seconds, hold_queue, https_receiver, median_seconds,
                          rate, target)
from core.config import PROJECT_ROOT
from core.db import db
from core.egress import post
from core.queue_names import WEBHOOKS
from core.redis import get_redis
from desk.models import Customer
from desk.tenancy import create_tenant
from openapi.apps import CONFIRMED_SCOPES, SCOPES, create_app
from openapi.models import OpenApp, OpenRecord, WebhookEvent
from core.delivery import signed_headers

RECORDS = 10_000
PAGE = 50
EVENTS = 200
WORKERS = 4


def _app_with_records(app) -> tuple[str, list[str]]:
    """An application holding 10,000 records; returns its token and the sorted record ids."""
    with app.app_context():
        tenant = create_tenant("Bench")
        made = create_app(tenant.id, None, "Bench", list(SCOPES), processing_confirmed=True,
                          confirmed_scopes=CONFIRMED_SCOPES)
        rows = [{"id": uuid.uuid4(), "tenant_id": tenant.id, "app_id": made.app.id, "data": {"n": n},
                 "idempotency_key": uuid.uuid4(), "request_digest": "bench"} for n in range(RECORDS)]
        db.session.execute(insert(OpenRecord), rows)
        db.session.execute(update(OpenApp).where(OpenApp.id == made.app.id).values(record_count=RECORDS))
        db.session.commit()
        return made.token, sorted(str(row["id"]) for row in rows)


def _paging(client, token: str, ids: list[str]) -> None:
    """First page vs the last page of 10,000 records (keyset: both are one index range scan)."""
    headers = {"Authorization": f"Bearer {token}"}

    def page(after: str | None):
        query = {"after": after} if after else {}
        assert client.get("/api/v1/open/records", headers=headers, query_string=query).status_code == 200

    for _ in range(20):  # warm both queries first: whichever ran first would otherwise look slower
        page(None)
        page(ids[-PAGE - 1])
    first = median_seconds(lambda: page(None), rounds=40)
    last = median_seconds(lambda: page(ids[-PAGE - 1]), rounds=40)  # the last full page
    print(f"GET /records first page            {first * 1000:8.2f} ms (baseline)")
    print(f"GET /records after 9,949 records    {last * 1000:8.2f} ms   ratio {last / first:6.3f} "
          f"{target(last / first, at_most=1.3)}")


def _creation(app, client) -> None:
    """POST /records per second (a fresh application) against GET /healthz and an authenticated read."""
    with app.app_context():
        tenant = create_tenant("Bench writes")
        token = create_app(tenant.id, None, "Writes", ["app.records.write", "customers.basic.read"],
                           processing_confirmed=True, confirmed_scopes=()).token
        customer = Customer(tenant_id=tenant.id, name="Bench customer")
        db.session.add(customer)
        db.session.commit()
        customer_url = f"/api/v1/open/customers/{customer.id}"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def healthz():
        assert client.get("/healthz").status_code == 200

    def create():
        response = client.post("/api/v1/open/records", data=b'{"data": {"order": "A-1", "amount": 12.5}}',
                               headers={**headers, "Idempotency-Key": str(uuid.uuid4())})
        assert response.status_code == 201, response.get_json()

    def read():
        assert client.get(customer_url, headers=headers).status_code == 200

    def refused():
        # Token check with the row lock and the rate limit, like a creation; refused without a key.
        assert client.post("/api/v1/open/records", data=b"{}", headers=headers).status_code == 400

    base = rate(healthz)
    reads = rate(read)
    refusals = rate(refused)
    created = rate(create)
    print(f"GET /healthz                        {base:8.1f} req/s (baseline)")
    print(f"GET /customers/{{id}} (authenticated) {reads:8.1f} req/s (second baseline)")
    print(f"POST /records refused after auth    {refusals:8.1f} req/s   ratio {refusals / base:6.3f}"
          " (token, row lock, rate limit; saves nothing)")
    print(f"POST /records                       {created:8.1f} req/s   ratio to healthz {created / base:6.3f}")
    print(f"POST /records vs GET /customers/{{id}}                 ratio {created / reads:6.3f} "
          f"{target(created / reads, at_least=0.3)}")
    print(f"one INSERT + COMMIT on this database (floor of any write)   {durable_write_seconds(app) * 1000:7.3f} ms")


def _start_workers(env: dict, queue: Queue) -> tuple[list[subprocess.Popen], float]:
    """Start the `flask jobs worker` processes; returns them once all listen, and how long that took."""
    started = time.perf_counter()
    logs = [tempfile.TemporaryFile() for _ in range(WORKERS)]
    workers = [subprocess.Popen([sys.executable, "-m", "flask", "--app", "app", "jobs", "worker"],
                                cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=log)
               for log in logs]
    pids = {worker.pid for worker in workers}
    while len([w for w in Worker.all(queue=queue) if w.pid in pids]) < WORKERS:
        for worker, log in zip(workers, logs):
            if worker.poll() is not None:
                log.seek(0)
                raise RuntimeError("a worker exited at start:\n" + log.read().decode(errors="replace")[-2000:])
        time.sleep(0.01)
    return workers, time.perf_counter() - started


def _record_events(app, token: str) -> None:
    """Create EVENTS records through the API: each writes an event and queues its delivery."""
    client = app.test_client()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for n in range(EVENTS):
        response = client.post("/api/v1/open/records", data=b'{"data": {"n": %d}}' % n,
                               headers={**headers, "Idempotency-Key": str(uuid.uuid4())})
        assert response.status_code == 201, response.get_json()


def _deliveries(app) -> None:
    """4 real `flask jobs worker` processes deliver 200 events; baseline: signed POSTs in one process.

    The records are created first and their delivery jobs held back while the workers start; the
    rate counts from releasing the jobs to the last delivery recorded. Worker start is timed apart
    and printed with the rate it would leave if it were counted too. The baseline is measured
    before and after the deliveries, and their mean is used.
    """
    receiver, knobs = https_receiver(app)
    url = receiver.url("localhost")
    with app.app_context():
        made = create_app(create_tenant("Bench hooks").id, None, "Hooks", ["app.records.write"], url,
                          processing_confirmed=True, confirmed_scopes=())
        db.session.commit()
        app_id, secret, queue = made.app.id, made.signing_secret, Queue(WEBHOOKS, connection=get_redis())
    body = b'{"id":"x"}'

    def signed_post():
        post(url, body, signed_headers(secret, "x", body, time.time(), "CustomStudio-Webhooks/1"))

    with app.app_context():
        for _ in range(20):  # the first POSTs build the TLS context and the lookup threads
            signed_post()
        before = rate(signed_post)
    _record_events(app, made.token)
    held = hold_queue(queue.connection, queue.key)
    env = {**os.environ, **{k: str(v) for k, v in knobs.items()},
           "DATABASE_URL": app.config["SQLALCHEMY_DATABASE_URI"], "REDIS_URL": app.config["REDIS_URL"],
           "SECRET_KEY": app.config["SECRET_KEY"], "ENCRYPTION_KEY": app.config["ENCRYPTION_KEY"]}
    received_before = len(receiver.received)
    workers, start_seconds = _start_workers(env, queue)
    try:
        released, cpu = time.perf_counter(), (cpu_seconds(workers), time.process_time())
        queue.connection.rpush(queue.key, *held)
        delivered = _wait_for_deliveries(app, app_id, receiver, received_before)
        elapsed = time.perf_counter() - released
        delivery_cpu = (cpu_seconds(workers) - cpu[0], time.process_time() - cpu[1])
        received = len(receiver.received) - received_before
    finally:
        for worker in workers:
            worker.terminate()  # a warm shutdown: idle workers leave at once
        for worker in workers:
            worker.wait(timeout=60)
    with app.app_context():
        after = rate(signed_post)
    receiver.stop()
    print(f"signed POSTs, one process           {(before + after) / 2:8.1f} req/s (baseline: {before:.1f} before"
          f" the deliveries, {after:.1f} after)")
    _print_deliveries((before + after) / 2, delivered, received, elapsed, start_seconds)
    _print_delivery_cpu((before + after) / 2, *delivery_cpu)


def _print_deliveries(baseline: float, delivered: int, received: int, elapsed: float, start_seconds: float) -> None:
    """The delivery rate with running workers, the rate counting their start, and the start's ceiling."""
    throughput = delivered / elapsed
    with_start = delivered / (start_seconds + elapsed)
    ceiling = EVENTS / start_seconds  # even if deliveries took no time at all
    print(f"deliveries, {WORKERS} workers running      {throughput:8.1f} events/s   ratio {throughput / baseline:6.3f}"
          f" {target(throughput / baseline, at_least=0.5)}"
          f"   ({delivered}/{EVENTS} delivered, {received} received)")
    print(f"the same, counting worker start     {with_start:8.1f} events/s   ratio {with_start / baseline:6.3f}"
          f" (printed, no target)")
    print(f"  {WORKERS} workers start in {start_seconds:.2f} s: counted, it caps {EVENTS} events at "
          f"{ceiling:.1f} events/s, ratio {ceiling / baseline:.3f}, with deliveries free")


def _print_delivery_cpu(baseline: float, workers_seconds: float, here_seconds: float) -> None:
    """What the deliveries cost in CPU, and the rate that cost allows on this machine's idle cores."""
    cores = os.cpu_count()
    most = cores * EVENTS / (workers_seconds + here_seconds)
    workers_ms, here_ms = workers_seconds / EVENTS * 1000, here_seconds / EVENTS * 1000
    print(f"  worker CPU per delivery            {workers_ms:8.2f} ms  {target(workers_ms, at_most=6.0)} (ms)")
    print(f"  + {here_ms:.1f} ms in this process (receiver): on {cores} idle cores at most {most:.0f} events/s,"
          f" ratio {most / baseline:.2f}; other load on the machine (and Redis, PostgreSQL) lowers it")


def _wait_for_deliveries(app, app_id, receiver, received_before: int) -> int:
    """Block until every event of the application is delivered (or 10 minutes pass); how many are."""
    deadline = time.perf_counter() + 600
    while len(receiver.received) - received_before < EVENTS and time.perf_counter() < deadline:
        time.sleep(0.005)
    with app.app_context():
        count = select(db.func.count()).select_from(WebhookEvent).where(
            WebhookEvent.app_id == app_id, WebhookEvent.status == "delivered")
        while (delivered := db.session.scalar(count)) < EVENTS and time.perf_counter() < deadline:
            db.session.rollback()
            time.sleep(0.005)
    return delivered


def main() -> None:
    """Print the three comparisons."""
    logging.disable(logging.WARNING)
    app = bench_app()
    app.config["OPEN_API_RATE_LIMIT"] = 10**9  # measure the work, not the limiter
    token, ids = _app_with_records(app)
    client = app.test_client()
    _paging(client, token, ids)
    _creation(app, client)
    _deliveries(app)


if __name__ == "__main__":
    main()
