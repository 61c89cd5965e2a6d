"""Cross-process rate limits, quotas and semaphores kept entirely in Redis.

Every check runs as one Lua script so it is atomic across processes and
hosts, and every script reads the clock with ``redis.call('TIME')`` so all
callers share the Redis server's notion of time instead of their own.
Nothing is cached in process memory: any number of workers on any number
of machines can share the same limits through one Redis server.

Lua numbers are doubles, so times are kept as whole microseconds (exact
below 2**53) and passed to commands as numbers, never concatenated into
strings, which would round them to 14 significant digits.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta

import redis
from flask import current_app, has_app_context

from core.redis import SERVER_NOW, run_script

log = logging.getLogger(__name__)

# KEYS[1] key prefix; ARGV[1] window seconds.  The per-window key is built
# here because its index depends on server time, which the client cannot
# know; this is fine on a single Redis server (not Redis Cluster).
_FIXED_WINDOW = """
local window = tonumber(ARGV[1])
local sec = tonumber(redis.call('TIME')[1])
local index = math.floor(sec / window)
local window_end = (index + 1) * window
local key = string.format('%s:%d', KEYS[1], index)
local count = redis.call('INCR', key)
if count == 1 then
  redis.call('EXPIREAT', key, window_end + window)
end
return {count, window_end - sec}
"""

# KEYS[1] zset; ARGV: limit, window microseconds, member.
_ROLLING_RESERVE = SERVER_NOW + """
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_us - window)
local used = redis.call('ZCARD', KEYS[1])
if used < limit then
  redis.call('ZADD', KEYS[1], now_us, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return {1, used + 1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]
local wait = math.ceil((tonumber(oldest) + window - now_us) / 1000000)
return {0, used, math.max(1, wait)}
"""

# KEYS[1] zset; ARGV[1] window microseconds.  Read-only: counts live entries.
_ROLLING_USAGE = SERVER_NOW + """
return redis.call('ZCOUNT', KEYS[1], now_us - tonumber(ARGV[1]) + 1, '+inf')
"""

# KEYS: failure sets; ARGV: window ms, each key's limit, the attempt's id. Returns 0 with the
# attempt counted in every set, or the ms until every set is under its limit again (until the
# failure that put it at its limit leaves the window), counting nothing.
_BEGIN_ATTEMPT = SERVER_NOW + """
local window, wait = tonumber(ARGV[1]), 0
for i, key in ipairs(KEYS) do
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now_ms - window)
  local count, limit = redis.call('ZCARD', key), tonumber(ARGV[i + 1])
  if count >= limit then
    local oldest = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')[2]
    wait = math.max(wait, tonumber(oldest) + window - now_ms)
  end
end
if wait > 0 then return wait end
for _, key in ipairs(KEYS) do
  redis.call('ZADD', key, now_ms, ARGV[#ARGV])
  redis.call('PEXPIRE', key, window)
end
return 0
"""

# Keeps the semaphore key alive a second past its latest lease, so idle
# keys vanish but never before any holder's lease ends.
_SEM_EXTEND_KEY = """
local latest = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2]
redis.call('PEXPIREAT', KEYS[1], math.floor(tonumber(latest) / 1000) + 1000)
"""

# KEYS[1] zset of token -> lease expiry; ARGV: limit, lease us, token.
_SEM_ACQUIRE = SERVER_NOW + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_us)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], now_us + tonumber(ARGV[2]), ARGV[3])
""" + _SEM_EXTEND_KEY + """
return 1
"""

# KEYS[1] zset; ARGV: lease us, token.  Expired leases are purged first so
# a lease that already ran out cannot be revived.
_SEM_REFRESH = SERVER_NOW + """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_us)
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], 'XX', now_us + tonumber(ARGV[1]), ARGV[2])
""" + _SEM_EXTEND_KEY + """
return 1
"""

# KEYS[1] zset.  Read-only: counts leases that have not expired yet.
_SEM_HOLDERS = SERVER_NOW + """
return redis.call('ZCOUNT', KEYS[1], now_us + 1, '+inf')
"""


def _require_positive(name: str, value: float) -> None:
    """Raise ValueError unless ``value`` is positive."""
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}")


@dataclass(frozen=True)
class WindowResult:
    """Outcome of one hit on a fixed-window counter."""

    allowed: bool
    count: int
    remaining: int
    reset_after: int


@dataclass(frozen=True)
class QuotaResult:
    """Outcome of one reservation against a rolling-window quota."""

    allowed: bool
    used: int
    retry_after: int


def window_seconds(window: int) -> int:
    """The length a fixed window of ``window`` seconds counts in.

    The app's ``RATE_WINDOW_SECONDS``, when set, replaces every window's length: tests count the
    spec's per-minute limits in short or long windows instead of waiting for a natural minute.
    Production leaves it unset, so the callers' own lengths (the spec's 60 s) stand.
    """
    if has_app_context() and current_app.config.get("RATE_WINDOW_SECONDS"):
        return current_app.config["RATE_WINDOW_SECONDS"]
    return window


def hit_fixed_window(conn: redis.Redis, key: str, limit: int, window: int = 60) -> WindowResult:
    """Count one hit in the current server-time window and say if it is allowed."""
    window = window_seconds(window)
    _require_positive("window", window)
    count, reset_after = run_script(conn, _FIXED_WINDOW, [f"limit:fw:{key}"], [window])
    return WindowResult(
        allowed=count <= limit,
        count=count,
        remaining=max(0, limit - count),
        reset_after=reset_after,
    )


def reserve_rolling(conn: redis.Redis, key: str, limit: int, window: int = 86400) -> QuotaResult:
    """Reserve one unit of a rolling-window quota; reservations are never released."""
    _require_positive("window", window)
    # The member only has to be unique; the score carries the time.
    args = [limit, window * 1_000_000, uuid.uuid4().hex]
    allowed, used, retry_after = run_script(conn, _ROLLING_RESERVE, [f"limit:roll:{key}"], args)
    return QuotaResult(allowed=bool(allowed), used=used, retry_after=retry_after)


def rolling_usage(conn: redis.Redis, key: str, window: int = 86400) -> int:
    """Return how many reservations currently fall inside the rolling window."""
    _require_positive("window", window)
    return run_script(conn, _ROLLING_USAGE, [f"limit:roll:{key}"], [window * 1_000_000])


@dataclass(frozen=True)
class Attempt:
    """One attempt begun against failure limits: counted (``retry_after`` 0) or refused."""

    id: str
    retry_after: int


def begin_attempt(conn: redis.Redis, keys: Sequence[str], limits: Sequence[int], window: timedelta) -> Attempt:
    """Count one attempt as a failure in each of ``keys``' rolling ``window``, unless one holds its limit.

    Each key is a set of failures with its own limit (``limits``, in the same order). The check and
    the counting are one step, so concurrent attempts never overshoot a limit: an attempt whose
    outcome is not known yet counts as a failure, and ``forgive_attempt`` takes a success back.
    A refused attempt counts nowhere and waits (``retry_after``, whole seconds rounded up) until the
    failure that put a key at its limit leaves the window, so refusals never extend a lock.
    """
    if len(keys) != len(limits):
        raise ValueError(f"{len(keys)} keys but {len(limits)} limits")
    window_ms = int(window.total_seconds() * 1000)
    _require_positive("window", window_ms)
    attempt = uuid.uuid4().hex
    wait_ms = run_script(conn, _BEGIN_ATTEMPT, keys, [window_ms, *limits, attempt])
    return Attempt(id=attempt, retry_after=math.ceil(wait_ms / 1000))


def forgive_attempt(conn: redis.Redis, attempt: Attempt, keys: Sequence[str], clear: Sequence[str] = ()) -> None:
    """The attempt succeeded: it is no failure in ``keys``, and every failure in ``clear`` is forgotten."""
    pipe = conn.pipeline()
    for key in clear:
        pipe.delete(key)
    for key in keys:
        pipe.zrem(key, attempt.id)
    pipe.execute()


class SemaphoreBusy(Exception):
    """Raised by ``Semaphore.hold`` when no slot became free in time."""


class Semaphore:
    """Counting semaphore shared through Redis, with leases that expire."""

    def __init__(self, conn: redis.Redis, name: str, limit: int, lease: float) -> None:
        """Configure a semaphore of ``limit`` slots whose holds last ``lease`` seconds."""
        _require_positive("lease", lease)
        self.conn = conn
        self.name = name
        self.limit = limit
        self.lease = lease
        self.key = f"limit:sem:{name}"
        self._lease_us = max(1, int(lease * 1_000_000))

    def _try_acquire(self, token: str) -> bool:
        """Make one atomic attempt to take a slot for ``token``."""
        return bool(run_script(self.conn, _SEM_ACQUIRE, [self.key], [self.limit, self._lease_us, token]))

    def acquire(self, timeout: float = 0, poll: float = 0.05) -> str | None:
        """Take a slot, waiting up to ``timeout`` seconds; return its token or None."""
        token = uuid.uuid4().hex
        # Local monotonic time only bounds how long *we* wait; the lease
        # itself is judged by Redis server time inside the script.
        deadline = time.monotonic() + timeout
        while not self._try_acquire(token):
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(poll, left))
        return token

    def release(self, token: str) -> None:
        """Give back the slot held by ``token``; unknown or expired tokens are ignored."""
        # A single ZREM is already atomic, so no script is needed.
        if not self.conn.zrem(self.key, token):
            log.warning("semaphore %s: released a token with no live lease", self.name)

    def refresh(self, token: str) -> bool:
        """Extend ``token``'s lease by ``lease`` seconds; False if it was already lost."""
        return bool(run_script(self.conn, _SEM_REFRESH, [self.key], [self._lease_us, token]))

    def holders(self) -> int:
        """Return the number of slots currently held by unexpired leases."""
        return run_script(self.conn, _SEM_HOLDERS, [self.key], [])

    @contextmanager
    def hold(self, timeout: float = 0) -> Iterator[str]:
        """Hold a slot for the ``with`` block, raising SemaphoreBusy if none frees up."""
        token = self.acquire(timeout)
        if token is None:
            raise SemaphoreBusy(f"semaphore {self.name!r} is full ({self.limit} holders)")
        try:
            yield token
        finally:
            self.release(token)
