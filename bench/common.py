"""Shared benchmark plumbing: a throwaway app on real services and a rate meter."""
import atexit
import math
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import trustme
from cryptography.fernet import Fernet
from flask_migrate import upgrade
from sqlalchemy import Column, Integer, MetaData, Table

from app import create_app, init_migrations
from core.config import PROJECT_ROOT
from core.db import db
from core.embedded_redis import start_embedded, stop_embedded
from core.redis import get_redis
from tests.peers import HttpsReceiver


def bench_app():
    """An app on BENCH_DATABASE_URL/BENCH_REDIS_URL, or on a temporary SQLite file and embedded Redis."""
    scratch = Path(tempfile.mkdtemp(prefix="bench-"))
    atexit.register(stop_embedded)
    app = create_app({
        "SQLALCHEMY_DATABASE_URI": os.environ.get("BENCH_DATABASE_URL") or f"sqlite:///{scratch / 'bench.db'}",
        "REDIS_URL": os.environ.get("BENCH_REDIS_URL") or start_embedded(scratch / "redis.db"),
        "SECRET_KEY": "bench", "ENCRYPTION_KEY": Fernet.generate_key().decode(),
        "PASSWORD_HASH_METHOD": "pbkdf2:sha256:1000",
    })
    init_migrations(app)
    with app.app_context():
        upgrade()
    return app


def rate(action, seconds: float = 3.0, rounds: int = 3) -> float:
    """Median calls per second of `action` over `rounds` timed rounds."""
    results = []
    for _ in range(rounds):
        count, start = 0, time.perf_counter()
        while time.perf_counter() - start < seconds / rounds:
            action()
            count += 1
        results.append(count / (time.perf_counter() - start))
    return statistics.median(results)


def rates(actions: dict, seconds: float = 4.0, rounds: int = 8) -> dict:
    """Median calls per second of each action, timed in alternating rounds so that the machine's
    drift during the run affects them alike (the difference between two is then meaningful)."""
    samples = {name: [] for name in actions}
    for _ in range(rounds):
        for name, action in actions.items():
            count, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds / rounds / len(actions):
                action()
                count += 1
            samples[name].append(count / (time.perf_counter() - start))
    return {name: statistics.median(values) for name, values in samples.items()}


def median_seconds(action, rounds: int = 15) -> float:
    """Median wall time of `action`."""
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


SCRATCH = Table("bench_durable_write", MetaData(), Column("id", Integer, primary_key=True))


@contextmanager
def scratch_table(app):
    """The bench's own table `bench_durable_write` for the duration of the block."""
    with app.app_context():
        SCRATCH.create(db.engine, checkfirst=True)
    try:
        yield SCRATCH
    finally:
        with app.app_context():
            SCRATCH.drop(db.engine)


@contextmanager
def durable_write(app):
    """The smallest durable write on the bench database, as an action to time: one INSERT and its
    COMMIT on a connection of its own (no app context stays pushed, so requests run as usual).

    It bounds every write endpoint from below: no request that saves something can take less than
    this plus the WSGI stack's own cost.
    """
    with app.app_context():
        engine = db.engine
    with scratch_table(app), engine.connect() as conn:
        def write():
            conn.execute(SCRATCH.insert())
            conn.commit()
        yield write


def durable_write_seconds(app) -> float:
    """Median time of one INSERT and its COMMIT on the bench database (see durable_write)."""
    with durable_write(app) as write:
        return median_seconds(write, rounds=300)


def add_stores_route(app, path: str, work) -> None:
    """A GET route of this bench process alone that runs `work()` and answers 204: the cost of
    the given store round trips inside a request, with none of the application's code.

    Call it before the app serves its first request.
    """
    def stores_only():
        work()
        return "", 204
    app.add_url_rule(path, endpoint=path, view_func=stores_only)


def target(ratio: float, at_least: float | None = None, at_most: float | None = None) -> str:
    """What is printed beside a ratio with a target: the target and whether this run met it."""
    if at_least is not None:
        return f"(target >= {at_least}) target {'met' if ratio >= at_least else 'missed'}"
    return f"(target <= {at_most}) target {'met' if ratio <= at_most else 'missed'}"


def logged_in(app, email: str, password: str):
    """A test client logged in through the real form."""
    client = app.test_client()
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', client.get("/login").get_data(as_text=True))
    client.post("/login", data={"email": email, "password": password, "csrf_token": token.group(1)})
    return client


def percentile(values, fraction: float) -> float:
    """The `fraction` quantile of `values` (nearest rank: 0.95 of 200 values is the 190th)."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1))]


def process_env(app, **extra: str) -> dict:
    """The environment of a real process (worker, clock) on the bench app's database and Redis:
    an embedded Redis is reached through its unix socket, which any process of this user may open."""
    cfg = app.config
    return {**os.environ, "DATABASE_URL": cfg["SQLALCHEMY_DATABASE_URI"], "REDIS_URL": cfg["REDIS_URL"],
            "SECRET_KEY": cfg["SECRET_KEY"], "ENCRYPTION_KEY": cfg["ENCRYPTION_KEY"], **extra}


@contextmanager
def running_workers(app, count: int, env: dict, log_path: Path, ready_seconds: float = 60.0):
    """`count` real `flask jobs worker` processes (as the Procfile runs them) on the app's stores,
    yielded once every one has registered in Redis (its queues are being listened to); stopped
    at the end, on failure too: SIGTERM (RQ's warm shutdown), then SIGKILL of its process group."""
    from rq import Worker  # the bench's other measurements need no RQ

    with app.app_context():
        connection = get_redis()
    log = open(log_path, "ab")
    processes = []
    try:
        for _ in range(count):
            processes.append(subprocess.Popen(
                [sys.executable, "-m", "flask", "--app", "app", "jobs", "worker"], cwd=PROJECT_ROOT,
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        pids, deadline = {process.pid for process in processes}, time.monotonic() + ready_seconds
        while {worker.pid for worker in Worker.all(connection=connection)} & pids != pids:
            for process in processes:
                if process.poll() is not None:
                    raise RuntimeError(f"worker {process.pid} exited ({process.returncode}); see {log_path}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"workers not registered within {ready_seconds} s; see {log_path}")
            time.sleep(0.05)
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(process.pid, signal.SIGKILL)  # anything it left behind
            except ProcessLookupError:
                pass
            process.wait()
        log.close()


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def https_receiver(app) -> tuple[HttpsReceiver, dict]:
    """The loopback HTTPS receiver and the egress knobs that let the app and its workers reach it."""
    ca = trustme.CA()
    receiver = HttpsReceiver(ca, names=("localhost",)).start()
    bundle = tempfile.NamedTemporaryFile(suffix=".pem", delete=False).name
    ca.cert_pem.write_to_path(bundle)
    knobs = {"EGRESS_ALLOW_CIDRS": "127.0.0.0/8", "EGRESS_PORT": receiver.port, "EGRESS_CA_BUNDLE": bundle}
    app.config.update(knobs)
    return receiver, knobs


def hold_queue(redis_conn, key: str) -> list[bytes]:
    """Take every job id off a queue's list (the jobs themselves stay), to release them later at once."""
    with redis_conn.pipeline() as pipe:
        pipe.lrange(key, 0, -1)
        pipe.delete(key)
        held, _ = pipe.execute()
    return held


def cpu_seconds(processes: list[subprocess.Popen]) -> float:
    """User and system CPU time the running processes have used so far (Linux /proc)."""
    ticks = 0
    for process in processes:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")
