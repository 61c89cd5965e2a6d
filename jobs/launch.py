"""`make run`: migrate, seed an empty database, start embedded Redis if needed, run the Procfile.

Everything runs under honcho; Ctrl+C stops all processes and the embedded Redis.
"""
import os
import signal
import subprocess
import sys
from pathlib import Path

from flask_migrate import upgrade
from sqlalchemy import select

from app import create_app
from core.config import INSTANCE_PATH, PROJECT_ROOT
from core.db import db
from core.redis import start_embedded, stop_embedded
from desk.cli import demo_logins_text
from desk.demo import seed_demo
from desk.models import Tenant


def prepare_database(app) -> None:
    """Upgrade the schema; seed the demo and print its logins when the database is empty."""
    with app.app_context():
        upgrade()
        if db.session.scalar(select(Tenant.id).limit(1)) is None:
            summary = seed_demo()
            db.session.commit()
            print(demo_logins_text(summary), flush=True)
        else:
            print("Database already has tenants; demo logins use the password demo-pass-2026.", flush=True)


def main() -> int:
    """Prepare, then supervise web, worker, runner and cron until Ctrl+C."""
    env = dict(os.environ)
    if not env.get("REDIS_URL"):
        env["REDIS_URL"] = start_embedded(INSTANCE_PATH / "redis.db")
        os.environ["REDIS_URL"] = env["REDIS_URL"]
    prepare_database(create_app())
    port = env.get("PORT", "5000")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
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
