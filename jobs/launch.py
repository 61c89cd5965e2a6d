"""`make run`: start embedded Redis if needed, prepare the database in a child process, then run the
Procfile under honcho. Ctrl+C stops all processes and the embedded Redis.

The launcher never loads the app: preparing (`flask --app app prepare`: upgrade, and seed an empty
database) runs in a process that ends, so the launcher stays small while everything runs.
"""
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from core.config import INSTANCE_PATH, PROJECT_ROOT
from core.embedded_redis import start_embedded, stop_embedded


def main() -> int:
    """Prepare, then supervise web, worker, generator, runner and cron (the clock) until Ctrl+C."""
    env = dict(os.environ)
    # Every process writes its Prometheus counters here and the web process serves them all; the
    # files of an earlier run would add up with this one's, so the directory starts empty.
    metrics = Path(env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(INSTANCE_PATH / "metrics")))
    shutil.rmtree(metrics, ignore_errors=True)
    metrics.mkdir(parents=True, mode=0o700)
    if not env.get("REDIS_URL"):
        env["REDIS_URL"] = start_embedded(INSTANCE_PATH / "redis.db")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    prepared = subprocess.run([sys.executable, "-m", "flask", "--app", "app", "prepare"], cwd=PROJECT_ROOT, env=env)
    if prepared.returncode:
        return prepared.returncode
    port = env.get("PORT", "5000")
    print(f"Custom Studio on http://127.0.0.1:{port}  (Ctrl+C stops everything)", flush=True)
    honcho = subprocess.Popen([sys.executable, "-m", "honcho", "start", "-f", "Procfile", "-p", port],
                              cwd=PROJECT_ROOT, env=env)
    # A SIGTERM to the launcher must stop honcho (and so every process) too, never orphan them.
    signal.signal(signal.SIGTERM, lambda signum, frame: honcho.terminate())
    try:
        return honcho.wait()
    except KeyboardInterrupt:
        honcho.send_signal(signal.SIGINT)
        return honcho.wait()


if __name__ == "__main__":
    try:
        sys.exit(main())
    finally:
        stop_embedded()
