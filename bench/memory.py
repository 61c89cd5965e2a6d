"""The embedded system's memory under `make run`, and how long each kind of process takes to start.

Run: .venv/bin/python -m bench.memory
It starts the launcher as `make run` does (`python -m jobs.launch`: web, worker, generator, script
runner, clock under honcho) on a scratch SQLite file and an embedded Redis of its own, waits for the
demo seed and one round of ticks, then sums PSS and RSS over the launcher's process tree plus the
embedded Redis (issue 19: target <= 400 MB PSS), again after some page traffic. The ratio beside
each total is against one bare Python interpreter measured in the same run. Then it times the
start of each process kind from its own command.
"""
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from cryptography.fernet import Fernet
from redis import Redis

from bench.common import free_port, target
from core.config import PROJECT_ROOT
from core.embedded_redis import start_embedded, stop_embedded
from jobs.cron import HEARTBEAT_KEY

TARGET_MB = 400
DEMO_PASSWORD = "demo-pass-2026"
PAGES = {"admin@acme.example": ("/extensions", "/extensions/automation", "/open-platform", "/knowledge",
                                "/ai-usage", "/template-market/studio"),
         "agent1@lotus.example": ("/workbench", "/workbench?view=mine", "/workbench?view=unassigned")}
ROLES = ("web", "worker", "generator", "runner", "clock")


def _smaps(pid: int) -> tuple[float, float]:
    """(PSS, RSS) of one process in MB (0, 0 once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return 0.0, 0.0
    fields = dict(re.findall(r"^(\w+):\s+(\d+) kB", text, re.M))
    return int(fields["Pss"]) / 1024, int(fields["Rss"]) / 1024


def _tree(root: int) -> list[int]:
    """`root` and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int(Path(entry, "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending += children.get(pid, [])
    return found


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except FileNotFoundError:
        return ""


def _role(command: str) -> str:
    """Which part of the system a process belongs to, from its command line."""
    for needle, role in (("sandbox.py", "runner (sandbox)"), ("jobs.runner", "runner"), ("jobs.clock", "clock"),
                         ("--generator", "generator"), ("jobs worker", "worker"), ("gunicorn", "web"),
                         ("honcho", "honcho"), ("jobs.launch", "launcher"), ("redis-server", "embedded Redis")):
        if needle in command:
            return role
    return "shell" if command.startswith(("/bin/sh", "sh ")) else command[:40]


def measure(pids: list[int], title: str, bare_pss: float) -> float:
    """Print a table of PSS and RSS per part and the totals; returns the total PSS."""
    parts: dict[str, list[float]] = {}
    for pid in pids:
        pss, rss = _smaps(pid)
        if pss:
            part = parts.setdefault(_role(_command(pid)), [0, 0.0, 0.0])
            part[0] += 1
            part[1] += pss
            part[2] += rss
    print(f"\n{title}")
    print(f"  {'part':<18} {'processes':>9} {'PSS MB':>8} {'RSS MB':>8}")
    for name, (count, pss, rss) in sorted(parts.items(), key=lambda item: -item[1][1]):
        print(f"  {name:<18} {count:>9} {pss:8.1f} {rss:8.1f}")
    total_pss, total_rss = sum(p[1] for p in parts.values()), sum(p[2] for p in parts.values())
    print(f"  {'total':<18} {sum(p[0] for p in parts.values()):>9} {total_pss:8.1f} {total_rss:8.1f}   "
          f"{total_pss / bare_pss:.1f} x one bare interpreter; PSS in MB {target(total_pss, at_most=TARGET_MB)}")
    return total_pss


def bare_interpreter_pss() -> float:
    """PSS of a Python interpreter that imported nothing: the floor of every process here."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    time.sleep(1)
    pss = _smaps(process.pid)[0]
    process.kill()
    process.wait()
    return pss


def _browse(base: str) -> int:
    """Log in as an administrator and an agent of the demo and open their pages; pages served."""
    served = 0
    for email, pages in PAGES.items():
        session = requests.Session()
        token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', session.get(f"{base}/login").text)[1]
        session.post(f"{base}/login", data={"email": email, "password": DEMO_PASSWORD, "csrf_token": token})
        for _ in range(5):
            for page in pages:
                served += session.get(f"{base}{page}").status_code == 200
    return served


def _wait(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not happen within {seconds:.0f} s")
        time.sleep(0.2)


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.RequestException:
        return False


def system(env: dict, redis_pid: int, bare_pss: float) -> None:
    """Start the launcher, measure after the seed and a tick, browse, measure again, stop it."""
    base, log = f"http://127.0.0.1:{env['PORT']}", open(Path(env["SCRATCH"]) / "launch.log", "wb")
    launcher = subprocess.Popen([sys.executable, "-m", "jobs.launch"], cwd=PROJECT_ROOT, env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    redis = Redis.from_url(env["REDIS_URL"])
    try:
        _wait(lambda: _answers(f"{base}/login"), 120, "the web process answering")
        _wait(lambda: redis.get(HEARTBEAT_KEY) is not None, 60, "a tick")
        time.sleep(3)  # the tick's handlers finish in the worker
        measure([*_tree(launcher.pid), redis_pid], "After the demo seed and one round of ticks", bare_pss)
        served = _browse(base)
        measure([*_tree(launcher.pid), redis_pid], f"After {served} pages for an administrator and an agent",
                bare_pss)
    finally:
        os.killpg(launcher.pid, signal.SIGINT)
        try:
            launcher.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(launcher.pid, signal.SIGKILL)
        log.close()


def _ready_seconds(command: list[str], env: dict, ready) -> float:
    """Seconds from starting `command` until `ready(process)`; the process is stopped afterwards."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        _wait(lambda: ready(process), 60, f"{command[2:5]} ready")
        return time.perf_counter() - started
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def startup(env: dict) -> None:
    """Median seconds (of 5) for each process kind to be ready: a worker or the runner registered
    in Redis, the clock's first tick queued, the web process answering /healthz."""
    from rq import Queue, Worker

    redis = Redis.from_url(env["REDIS_URL"])
    registered = lambda process: process.pid in {w.pid for w in Worker.all(connection=redis)}  # noqa: E731
    port = free_port()
    web_env = {**env, "PORT": str(port)}
    kinds = {
        "worker (flask --app app jobs worker)": ([sys.executable, "-m", "flask", "--app", "app", "jobs", "worker"],
                                                 env, registered),
        "runner (python -m jobs.runner)": ([sys.executable, "-m", "jobs.runner"], env, registered),
        "clock (python -m jobs.clock)": ([sys.executable, "-m", "jobs.clock"], env,
                                         lambda process: Queue("default", connection=redis).count > 0),
        "web (gunicorn, the Procfile's line)": ([sys.executable, "-m", "gunicorn", "--bind", f"127.0.0.1:{port}",
                                                 "--workers", "1", "--threads", "8", "wsgi:app"], web_env,
                                                lambda process: _answers(f"http://127.0.0.1:{port}/healthz")),
    }
    print("\nStart-up, median of 5 (seconds until ready)")
    for name, (command, command_env, ready) in kinds.items():
        times = []
        for _ in range(5):
            redis.delete("rq:queue:default")
            times.append(_ready_seconds(command, command_env, ready))
        print(f"  {name:<40} {statistics.median(times):6.2f}")


def main() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="bench-memory-"))
    redis_url = start_embedded(scratch / "redis.db")
    redis_pid = int(Redis.from_url(redis_url).info("server")["process_id"])
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{scratch / 'studio.db'}", "REDIS_URL": redis_url,
           "SECRET_KEY": "bench-memory", "ENCRYPTION_KEY": Fernet.generate_key().decode(),
           "PORT": str(free_port()), "SCRATCH": str(scratch)}
    try:
        bare = bare_interpreter_pss()
        print(f"one bare Python interpreter: {bare:.1f} MB PSS (the baseline of the ratios)")
        system(env, redis_pid, bare)
        startup(env)
    finally:
        stop_embedded()


if __name__ == "__main__":
    main()
