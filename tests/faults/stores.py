"""Stores of the fault suite's own, to restart and break without touching those of the rest of the
tests: a PostgreSQL cluster made with Debian's pg_createcluster (as root) and a redis-server, each on
a free loopback port, and "hosts": the processes one machine of a deployment runs (web, two workers,
runner, clock), each host with its own process groups, working directory (logs, metrics) and web port."""
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import redis
import requests

from core.config import PROJECT_ROOT
from tests.conftest import CLOCK, FLASK, RUNNER, free_port

SECRET_KEY = "fault-suite-secret-key"
ENCRYPTION_KEY = "0Yk9e4kWl3k5hmtWdZ7QbN1qk0H7mDq0Yb0s2yRr4mE="


def _run(*command: str) -> str:
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


@dataclass
class Postgres:
    """A cluster of its own (`pg_createcluster <version> <name> -p <port>`), trust authentication on
    loopback, one database `faults`."""

    name: str = field(default_factory=lambda: f"faults{uuid.uuid4().hex[:8]}")
    port: int = field(default_factory=free_port)

    @property
    def version(self) -> str:
        return sorted(os.listdir("/usr/lib/postgresql"), key=int)[-1]

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/faults"

    def create(self) -> "Postgres":
        """Make and start the cluster and its database; dropped again if that fails half-way."""
        _run("pg_createcluster", self.version, self.name, "-p", str(self.port), "--start",
             "-o", "fsync=off", "-o", "max_connections=200", "--", "--auth=trust")
        try:
            self.wait_ready()
            self.sql("CREATE DATABASE faults", database="postgres")
        except BaseException:
            self.drop()
            raise
        return self

    def sql(self, statement: str, database: str = "faults") -> str:
        return _run("psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database,
                    "-tAqc", statement)

    def wait_ready(self, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while subprocess.run(["pg_isready", "-h", "127.0.0.1", "-p", str(self.port), "-q"]).returncode:
            assert time.monotonic() < deadline, "PostgreSQL did not come up"
            time.sleep(0.1)

    def ctl(self, action: str) -> None:
        """`pg_ctlcluster … <action>` (start, stop, restart), fast shutdown."""
        _run("pg_ctlcluster", "--skip-systemctl-redirect", self.version, self.name, action, "-m", "fast")

    def read_only(self, on: bool) -> None:
        """Refuse writes as a failed-over old primary does: every session's transactions read only
        (SQLSTATE 25006 on a write), existing sessions included once the configuration reloads."""
        value = "on" if on else "off"
        self.sql(f"ALTER SYSTEM SET default_transaction_read_only = {value}", database="postgres")
        self.sql("SELECT pg_reload_conf()", database="postgres")

    def drop(self) -> None:
        """Stop and remove the cluster; a cluster that could not be removed is named on stderr."""
        dropped = subprocess.run(["pg_dropcluster", "--stop", self.version, self.name], capture_output=True, text=True)
        if dropped.returncode:
            print(f"PostgreSQL cluster {self.version}/{self.name} was not dropped: {dropped.stderr}", file=sys.stderr)


@dataclass
class RedisServer:
    """A redis-server of its own that keeps its data across a restart (append-only file)."""

    directory: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port)

    def start(self) -> "RedisServer":
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory),
             "--save", "", "--appendonly", "yes", "--appendfsync", "no", "--maxmemory-policy", "noeviction"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                assert time.monotonic() < deadline, "redis-server did not come up"
                time.sleep(0.05)

    def stop(self) -> None:
        """Shut down as an operator does: the data is on disk, clients are cut."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


ROLES = ("web", "worker-1", "worker-2", "runner", "clock")


@dataclass
class Host:
    """One machine of a deployment: its processes, each in its own process group, its own working
    directory (logs, metrics) and web port, on the shared PostgreSQL and Redis."""

    name: str
    root: Path
    env: dict
    port: int = field(default_factory=free_port)
    processes: dict = field(default_factory=dict)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self, role: str) -> list[str]:
        if role == "web":
            web = next(line for line in (PROJECT_ROOT / "Procfile").read_text().splitlines()
                       if line.startswith("web:"))
            return [sys.executable, "-m", *shlex.split(web.removeprefix("web:").replace("$PORT", str(self.port)))]
        if role.startswith("worker"):
            return [*FLASK, "jobs", "worker"]
        return {"runner": RUNNER, "clock": CLOCK}[role]

    def start(self, role: str) -> subprocess.Popen:
        log = open(self.root / f"{role}.log", "ab")
        process = subprocess.Popen(self.command(role), cwd=PROJECT_ROOT, env=self.env, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.processes[role] = process
        if role == "web":
            self.wait_serving()
        return process

    def start_all(self) -> "Host":
        for role in ROLES:
            self.start(role)
        return self

    def wait_serving(self, seconds: float = 60) -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                if requests.get(f"{self.base}/healthz", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, f"{self.name}'s web did not start"
            time.sleep(0.1)

    def kill(self, role: str) -> None:
        """kill -9 of the role's whole process group (a runner's sandbox too): no handler runs,
        nothing is given up."""
        os.killpg(self.processes[role].pid, signal.SIGKILL)
        self.processes[role].wait()

    def stop(self, role: str, timeout: float = 60) -> int:
        """SIGTERM, as a supervisor's stop or a rolling restart sends it; the exit status."""
        process = self.processes[role]
        process.send_signal(signal.SIGCONT)
        process.terminate()
        return process.wait(timeout=timeout)

    def running(self) -> dict:
        return {role: process.poll() is None for role, process in self.processes.items()}

    def stop_all(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def host_env(name: str, root: Path, database_url: str, redis_url: str, **extra: str) -> dict:
    """The environment of every process of one host: the shared stores, its own metrics directory."""
    metrics = root / "metrics"
    shutil.rmtree(metrics, ignore_errors=True)
    metrics.mkdir(parents=True)
    return {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url, "SECRET_KEY": SECRET_KEY,
            "ENCRYPTION_KEY": ENCRYPTION_KEY, "PROMETHEUS_MULTIPROC_DIR": str(metrics), **extra}


def wait_for_a_lock(postgres: "Postgres", statement: str) -> None:
    """Until one statement starting with `statement` waits on a row lock (a sweep reached the row
    a test holds)."""
    deadline = time.monotonic() + 60
    while postgres.sql("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                       f"AND query LIKE '{statement}%'").strip() != "1":
        assert time.monotonic() < deadline, f"no {statement} reached the locked row"
        time.sleep(0.05)

