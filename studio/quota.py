"""Generation quotas, shared by every web and worker process through Redis.

A generation takes, in this order: one of the platform's in-progress slots (a lease that expires,
so a process that dies frees its slot), the tenant's one per minute (a fixed window), the
tenant's 20 per rolling 24 hours (skipped for a tenant metered by AI points), and the platform's
200 per rolling 24 hours. Reservations are never refunded, not even when the generation fails;
a refusal gives back only the in-progress slot. Every key names the tenant id and nothing else.
"""
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import redis

from core.api import ApiError
from core.clock import iso
from core.limits import Semaphore, hit_fixed_window, reserve_rolling, rolling_usage, window_seconds
from core.redis import get_redis
from studio.catalog import LIMITS

log = logging.getLogger(__name__)

GENERATION_LEASE_SECONDS = 180  # longer than a generation job may run: studio.generation.check_timing
BUSY_RETRY_SECONDS = 5  # slots free when generations end, which no clock predicts
MINUTE_SECONDS = 60
DAY_SECONDS = 86_400
PLATFORM = "generation:platform"
# core.limits keeps its counters under these prefixes; it has no read-only look at when a window
# frees up, so quota_state reads the same keys (tests pin the two together).
_FIXED_PREFIX = "limit:fw:"
_ROLLING_PREFIX = "limit:roll:"
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class Reservation:
    """One generation's hold on a platform in-progress slot."""

    slot_token: str  # the platform in-progress lease; released by release_slot()


def _tenant_key(tenant_id: uuid.UUID) -> str:
    """The name of the tenant's counters."""
    return f"generation:tenant:{tenant_id}"


def _slots() -> Semaphore:
    """The platform's generations in progress."""
    return Semaphore(get_redis(), PLATFORM, LIMITS["generations_platform_in_progress"],
                     GENERATION_LEASE_SECONDS)


def _refusal(tenant_id: uuid.UUID, check: str, retry_after: int) -> ApiError:
    """The 429 a refused generation answers with, waiting at least one whole second."""
    log.info("generation refused for tenant %s by the %s limit", tenant_id, check)
    return ApiError("generation_budget_exceeded", 429,
                    headers={"Retry-After": str(max(1, retry_after))})


def _take_rolling(conn: redis.Redis, tenant_id: uuid.UUID, key: str, limit_name: str) -> None:
    """Reserve one unit of a rolling 24-hour quota or refuse until its oldest unit expires."""
    result = reserve_rolling(conn, key, LIMITS[limit_name], DAY_SECONDS)
    if not result.allowed:
        raise _refusal(tenant_id, limit_name, result.retry_after)


def _take_counts(tenant_id: uuid.UUID, metered: bool) -> None:
    """The tenant's minute and day, then the platform's day; each refusal names its own wait."""
    conn = get_redis()
    minute = hit_fixed_window(conn, _tenant_key(tenant_id),
                              LIMITS["generations_per_tenant_per_minute"], MINUTE_SECONDS)
    if not minute.allowed:
        raise _refusal(tenant_id, "generations_per_tenant_per_minute", minute.reset_after)
    if not metered:
        _take_rolling(conn, tenant_id, _tenant_key(tenant_id), "generations_per_tenant_per_day")
    _take_rolling(conn, tenant_id, PLATFORM, "generations_platform_per_day")


def reserve_generation(tenant_id: uuid.UUID, metered: bool) -> Reservation:
    """Take one generation for the tenant, or raise 429 generation_budget_exceeded with Retry-After.

    The in-progress slot is taken first, so a full platform uses none of the tenant's counts; any
    later refusal gives the slot back. Counts taken before a refusal stay counted (they were
    reserved). `metered` (AI points enabled) skips the tenant's 20 per day, never the minute.
    """
    slots = _slots()
    token = slots.acquire()
    if token is None:
        raise _refusal(tenant_id, "generations_platform_in_progress", BUSY_RETRY_SECONDS)
    try:
        _take_counts(tenant_id, metered)
    except Exception:
        slots.release(token)  # a refused reservation holds no slot
        raise
    return Reservation(slot_token=token)


def release_slot(token: str) -> None:
    """Give back a generation's in-progress slot (its counts stay taken)."""
    _slots().release(token)


def _server_time_us(conn: redis.Redis) -> int:
    """The Redis server's clock in whole microseconds, the clock every quota counts in."""
    seconds, micros = conn.time()
    return seconds * 1_000_000 + micros


def _minute_free_at(conn: redis.Redis, tenant_id: uuid.UUID, now_us: int) -> int | None:
    """When the tenant's current minute window ends if it is used up, else None."""
    window = window_seconds(MINUTE_SECONDS)
    index = now_us // 1_000_000 // window
    used = int(conn.get(f"{_FIXED_PREFIX}{_tenant_key(tenant_id)}:{index}") or 0)
    if used < LIMITS["generations_per_tenant_per_minute"]:
        return None
    return (index + 1) * window * 1_000_000


def _day_free_at(conn: redis.Redis, key: str, limit: int, now_us: int) -> int | None:
    """When a full rolling 24-hour quota has room again (its oldest counted unit expires), else None."""
    used = rolling_usage(conn, key, DAY_SECONDS)
    if used < limit:
        return None
    day_us = DAY_SECONDS * 1_000_000
    oldest = conn.zrangebyscore(f"{_ROLLING_PREFIX}{key}", now_us - day_us + 1, "+inf",
                                start=used - limit, num=1, withscores=True)
    return int(oldest[0][1]) + day_us if oldest else None


def quota_state(tenant_id: uuid.UUID, metered: bool) -> dict:
    """The tenant's generation quota as it stands, read-only: what is left today (None when
    metered), when the next generation is allowed (None: now; in-progress slots not counted),
    and how many generations are in progress on the platform."""
    conn = get_redis()
    now_us = _server_time_us(conn)
    free_at = [_minute_free_at(conn, tenant_id, now_us),
               _day_free_at(conn, PLATFORM, LIMITS["generations_platform_per_day"], now_us)]
    remaining = None
    if not metered:
        limit = LIMITS["generations_per_tenant_per_day"]
        remaining = max(0, limit - rolling_usage(conn, _tenant_key(tenant_id), DAY_SECONDS))
        free_at.append(_day_free_at(conn, _tenant_key(tenant_id), limit, now_us))
    latest = max((moment for moment in free_at if moment is not None), default=None)
    return {"remaining_today": remaining,
            "next_allowed_at": None if latest is None else iso(_EPOCH + timedelta(microseconds=latest)),
            "in_progress": _slots().holders(), "metered": metered}
