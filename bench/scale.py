"""Scale-out and recovery on real processes: a PostgreSQL cluster and a redis-server of the bench's
own (tests.faults.stores, created at start and dropped at the end, on failure too) and the hosts'
processes as the Procfile runs them.

1. Webhook deliveries per second to a loopback HTTPS receiver, 1 vs 2 `flask jobs worker`
   processes draining the same number of queued deliveries (records created through the Open API).
2. Signed inbound channel messages per second from 8 concurrent HTTP clients, 1 vs 2 gunicorn web
   processes (one per host), timed in alternating rounds.
   Both ratios 2/1 are printed beside the machine's core count and the CPU used during each run:
   on a machine with few cores a second process cannot double anything, so they have no target.
3. Seconds from `pg_ctlcluster restart` returning until a signed inbound message is saved (201)
   again, one every 0.1 s on a running web process.
4. Seconds from killing (-9) the clock process that holds the lease until the tick slot mark in
   Redis moves again, with two clock processes (1 s ticks, the deployed 15 s lease).

Run: .venv/bin/python -m bench.scale   (as root, for pg_createcluster; needs requirements-dev.txt)
Targets: PostgreSQL restart to the first 201 <= 10 s; lease holder killed to the next tick <= 30 s.
Each is followed by "target met" or "target missed".
"""
import itertools
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import redis
import requests
from flask_migrate import upgrade
from rq import Queue, Worker
from sqlalchemy import func, select

from app import create_app, init_migrations
from bench.common import hold_queue, https_receiver, target
from core.crypto import hmac_sha256_hex
from core.db import db, statement_timeout
from core.queue_names import WEBHOOKS
from desk.channels import create_channel
from desk.tenancy import create_tenant
from jobs.clock import LEASE_KEY, LEASE_SECONDS, SLOT_KEY
from openapi import apps as open_apps
from openapi.models import WebhookEvent
from tests.faults.stores import ENCRYPTION_KEY, SECRET_KEY, Host, Postgres, RedisServer, host_env

EVENTS, DELIVERY_ROUNDS = 200, 2  # deliveries drained in each run; runs per worker count, alternating
CLIENTS = 8  # concurrent HTTP clients of the web processes
CUSTOMERS_PER_CLIENT = 8  # no two clients write to the same customer's conversation
ROUNDS, ROUND_SECONDS = 3, 4.0  # per web count, alternating
RESTART_TARGET, TAKEOVER_TARGET = 10.0, 30.0
CLOCK_ENV = {"CLOCK_TICK_SECONDS": "1", "CLOCK_LEASE_SECONDS": str(LEASE_SECONDS)}  # the lease as deployed
NO_TARGET = "(no target: read with the cores' use)"


class Usage:
    """Wall time and CPU use summed over the blocks it measures: the machine's busy cores
    (/proc/stat), the measured processes with their process groups, the stores (PostgreSQL's
    postmaster and its backends, redis-server) and this process."""

    def __init__(self, name: str, stores: set[int]):
        self.name, self.stores = name, stores
        self.totals = [0.0] * 6  # wall s, busy ticks, all ticks, CPU s of: processes, stores, this process

    @contextmanager
    def over(self, processes: list):
        """Add the block's wall time and CPU use; `processes` each lead a session of their own."""
        groups = {process.pid for process in processes}
        start = self._read(groups)
        yield
        self.totals = [total + end - begin for total, end, begin in zip(self.totals, self._read(groups), start)]

    def _read(self, groups: set[int]) -> list[float]:
        cpu = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
        return [time.perf_counter(), sum(cpu) - cpu[3] - cpu[4], sum(cpu), *_cpu(groups, self.stores),
                time.process_time()]

    @property
    def seconds(self) -> float:
        return self.totals[0]

    def __str__(self) -> str:
        seconds, busy, ticks, processes, stores, here = self.totals
        cores = os.cpu_count()
        machine, processes, stores, here = cores * busy / ticks, processes / seconds, stores / seconds, here / seconds
        return (f"cores busy {machine:.2f} of {cores} = {self.name} {processes:.2f} + stores {stores:.2f}"
                f" + this process {here:.2f} + the rest of the machine {machine - processes - stores - here:.2f}")


def _cpu(groups: set[int], parents: set[int]) -> tuple[float, float]:
    """CPU seconds (user and system, reaped children's included) of the processes in the process
    groups `groups`, and of the processes `parents` with their children."""
    in_groups = of_parents = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            pid, fields = int(stat.parent.name), stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended meanwhile
        ticks = sum(int(value) for value in fields[11:15])  # utime, stime, cutime, cstime
        in_groups += ticks if int(fields[2]) in groups else 0  # pgrp
        of_parents += ticks if pid in parents or int(fields[1]) in parents else 0  # ppid
    clock = os.sysconf("SC_CLK_TCK")
    return in_groups / clock, of_parents / clock


def _store_pids(postgres: Postgres, redis_server: RedisServer) -> set[int]:
    """The postmaster's pid (its backends are its children) and redis-server's."""
    data = Path(postgres.sql("SHOW data_directory", database="postgres").strip())
    return {int((data / "postmaster.pid").read_text().split()[0]), redis_server.process.pid}


def _bench_app(database_url: str, redis_url: str):
    """The app of this process on the bench's stores, with the schema; the hosts share its keys."""
    app = create_app({"SQLALCHEMY_DATABASE_URI": database_url, "REDIS_URL": redis_url, "SECRET_KEY": SECRET_KEY,
                      "ENCRYPTION_KEY": ENCRYPTION_KEY, "OPEN_API_RATE_LIMIT": 10**9})  # records, not the limiter
    init_migrations(app)
    with app.app_context(), statement_timeout(0):
        upgrade()
    return app


def _wait_listening(connection, processes: list, seconds: float = 60) -> None:
    """Until every worker process has registered in Redis (its queues are listened to)."""
    pids, deadline = {process.pid for process in processes}, time.monotonic() + seconds
    while not pids <= {worker.pid for worker in Worker.all(connection=connection)}:
        if any(process.poll() is not None for process in processes) or time.monotonic() > deadline:
            raise RuntimeError("a worker exited or did not register; see its host's worker log")
        time.sleep(0.05)


def _deliveries(app, receiver, host: Host, stores: set[int]) -> None:
    """EVENTS records (each queues its delivery) per run, their jobs held back until the run's
    workers listen, timed from releasing them to the receiver's last request; DELIVERY_ROUNDS
    runs with 1 and 2 workers alternating."""
    with app.app_context():
        tenant_id = create_tenant("Bench hooks").id
        db.session.commit()  # the receiver's address is checked (resolved) before any write
        made = open_apps.create_app(tenant_id, None, "Hooks", ["app.records.write"], receiver.url("localhost"),
                                    processing_confirmed=True, confirmed_scopes=())
        db.session.commit()
        app_id = made.app.id
        queue = Queue(WEBHOOKS, connection=redis.Redis.from_url(app.config["REDIS_URL"]))
    client = app.test_client()
    headers = {"Authorization": f"Bearer {made.token}", "Content-Type": "application/json"}
    usages, counts = {1: Usage("workers", stores), 2: Usage("workers", stores)}, {1: 0, 2: 0}
    for _ in range(DELIVERY_ROUNDS):
        for workers in (1, 2):
            for n in range(EVENTS):
                response = client.post("/api/v1/open/records", data=b'{"data": {"n": %d}}' % n,
                                       headers={**headers, "Idempotency-Key": str(uuid.uuid4())})
                assert response.status_code == 201, response.get_json()
            held = hold_queue(queue.connection, queue.key)
            assert len(held) == EVENTS, len(held)
            roles = [f"worker-{number}" for number in range(1, workers + 1)]
            processes = [host.start(role) for role in roles]
            _wait_listening(queue.connection, processes)
            received, deadline = len(receiver.received), time.monotonic() + 120
            with usages[workers].over(processes):
                queue.connection.rpush(queue.key, *held)
                while len(receiver.received) - received < EVENTS:
                    assert time.monotonic() < deadline, "the deliveries did not arrive within 120 s"
                    time.sleep(0.005)
            for role in roles:
                host.stop(role)  # a warm shutdown: the attempt being recorded ends first
            counts[workers] += EVENTS
    _print_pair("webhook deliveries", "worker", counts, usages)
    with app.app_context():
        delivered = db.session.scalar(select(func.count()).select_from(WebhookEvent).where(
            WebhookEvent.app_id == app_id, WebhookEvent.status == "delivered"))
    print(f"  {delivered}/{sum(counts.values())} events recorded delivered, "
          f"{len(receiver.received)} requests received")


def _print_pair(what: str, process: str, counts: dict, usages: dict) -> None:
    """The rates with 1 and 2 processes, the ratio 2/1, and the CPU use during each."""
    rates = {count: counts[count] / usages[count].seconds for count in (1, 2)}
    for count in (1, 2):
        label = f"{what}, {count} {process}{'s' if count > 1 else ''}"
        print(f"{label:<34}{rates[count]:8.1f}/s"
              + ("   (baseline)" if count == 1 else f"   ratio 2/1 {rates[2] / rates[1]:.3f} {NO_TARGET}"))
        print(f"  {counts[count]} in {usages[count].seconds:.1f} s; {usages[count]}")


def _inbound_poster(app):
    """A channel of a new tenant, and a function POSTing one signed message with a new id to a web
    process (its base URL) through a session, for a customer; returns the status code."""
    with app.app_context():
        channel, secret = create_channel(create_tenant("Bench inbound").id, "Bench chat")
        db.session.commit()
        path = f"/api/channels/{channel.id}/messages"
    counter = itertools.count()

    def post(session: requests.Session, base: str, customer: str) -> int:
        raw = json.dumps({"message_id": f"m-{next(counter)}", "text": "Where is my parcel?",
                          "customer": {"external_id": customer, "name": "Bench Customer"}}).encode()
        ts = str(int(time.time()))
        return session.post(base + path, data=raw, timeout=10, headers={
            "Content-Type": "application/json", "X-Channel-Timestamp": ts,
            "X-Channel-Signature": "v1=" + hmac_sha256_hex(secret, ts.encode() + b"." + raw)}).status_code

    return post


def _inbound(hosts: list[Host], post, stores: set[int]) -> None:
    """CLIENTS threads POST messages for ROUND_SECONDS to the first web, then spread over both, in
    ROUNDS alternating rounds; the rate is all messages over all the rounds' time."""
    webs = [host.start("web") for host in hosts]
    sessions = [requests.Session() for _ in range(CLIENTS)]

    def client(number: int, bases: list[str], seconds: float) -> int:
        base, count, deadline = bases[number % len(bases)], 0, time.perf_counter() + seconds
        while time.perf_counter() < deadline or count < CUSTOMERS_PER_CLIENT:  # each customer at least once
            status = post(sessions[number], base, f"c-{number}-{count % CUSTOMERS_PER_CLIENT}")
            assert status == 201, status
            count += 1
        return count

    usages, counts = {1: Usage("web processes", stores), 2: Usage("web processes", stores)}, {1: 0, 2: 0}
    with ThreadPoolExecutor(CLIENTS) as pool:
        for host in hosts:  # customers, conversations and connections exist before the timed rounds
            list(pool.map(client, range(CLIENTS), itertools.repeat([host.base]), itertools.repeat(0)))
        for _ in range(ROUNDS):
            for count in (1, 2):
                bases = [host.base for host in hosts[:count]]
                with usages[count].over(webs):
                    counts[count] += sum(pool.map(client, range(CLIENTS), itertools.repeat(bases),
                                                  itertools.repeat(ROUND_SECONDS)))
    _print_pair(f"inbound messages ({CLIENTS} clients)", "web", counts, usages)


def _restart(postgres: Postgres, host: Host, post) -> None:
    """Restart PostgreSQL under a running web process; seconds until a message is saved again."""
    session = requests.Session()
    assert post(session, host.base, "c-restart") == 201
    began = time.perf_counter()
    postgres.ctl("restart")
    returned = time.perf_counter()
    failures = []
    while True:
        try:
            status = post(session, host.base, "c-restart")
        except requests.RequestException as error:
            status = type(error).__name__
        if status == 201:
            break
        failures.append(status)
        assert time.perf_counter() - returned < 60, f"no 201 within 60 s after the restart: {failures[-5:]}"
        time.sleep(0.1)
    seconds = time.perf_counter() - returned
    print(f"PostgreSQL restart to the first 201       {seconds:7.2f} s   {target(seconds, at_most=RESTART_TARGET)} (s)")
    print(f"  the restart command took {returned - began:.2f} s; {len(failures)} failed requests after it: "
          f"{sorted(set(map(str, failures)))}")


def _clock_takeover(connection: redis.Redis, hosts: list[Host]) -> None:
    """A clock on each host; kill -9 the lease holder; seconds until the slot mark moves again."""
    clocks = {host.start("clock").pid: host for host in hosts}
    deadline = time.monotonic() + 30
    while connection.get(LEASE_KEY) is None or connection.get(SLOT_KEY) is None:
        assert time.monotonic() < deadline, "no clock took the lease within 30 s"
        time.sleep(0.1)
    holder = int(connection.get(LEASE_KEY).decode().split(":")[2])  # fence:host:pid:nonce
    clocks[holder].kill("clock")
    killed, slot = time.perf_counter(), int(connection.get(SLOT_KEY))
    while int(connection.get(SLOT_KEY)) <= slot:
        assert time.perf_counter() - killed < 60, "no tick within 60 s after the holder died"
        time.sleep(0.1)
    seconds = time.perf_counter() - killed
    successor = int(connection.get(LEASE_KEY).decode().split(":")[2])
    print(f"clock lease holder killed to the next tick {seconds:7.2f} s   "
          f"{target(seconds, at_most=TAKEOVER_TARGET)} (s)")
    print(f"  lease of {CLOCK_ENV['CLOCK_LEASE_SECONDS']} s, ticks every {CLOCK_ENV['CLOCK_TICK_SECONDS']} s; "
          f"holder {holder} killed, now held by {successor} (the other clock: {successor in clocks})")


def main() -> None:
    """Create the stores, print the four measurements, drop the stores."""
    logging.disable(logging.WARNING)
    root = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    postgres, redis_server, hosts, receiver, bundle = Postgres(), RedisServer(root), [], None, None
    try:
        postgres.create()
        redis_server.start()
        app = _bench_app(postgres.url, redis_server.url)
        receiver, knobs = https_receiver(app)
        bundle = knobs["EGRESS_CA_BUNDLE"]
        extra = {**{name: str(value) for name, value in knobs.items()}, **CLOCK_ENV}
        hosts = [Host(name, root / name, host_env(name, root / name, postgres.url, redis_server.url, **extra))
                 for name in ("host-a", "host-b")]
        print(f"{os.cpu_count()} cores (os.cpu_count()); PostgreSQL {postgres.version} and redis-server of this run")
        stores = _store_pids(postgres, redis_server)
        _deliveries(app, receiver, hosts[0], stores)
        post = _inbound_poster(app)
        _inbound(hosts, post, stores)
        _restart(postgres, hosts[0], post)
        _clock_takeover(redis.Redis.from_url(redis_server.url), hosts)
    finally:
        for host in hosts:
            host.stop_all()
        if receiver is not None:
            receiver.stop()
        redis_server.stop()
        postgres.drop()
        if bundle is not None:
            os.unlink(bundle)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
