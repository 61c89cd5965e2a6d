"""Tests for core.limits against a real Redis server and real OS processes.

Workers run in processes started with the "spawn" context, so they share
nothing with the test process except the Redis URL (and a start barrier);
results travel back through Redis lists.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator

import pytest
import redis

from core.limits import (
    QuotaResult,
    Semaphore,
    SemaphoreBusy,
    WindowResult,
    hit_fixed_window,
    reserve_rolling,
    rolling_usage,
)

SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def limits_conn(redis_url) -> Iterator[redis.Redis]:
    """Connection to the suite's test Redis (see conftest), emptied before and after each test."""
    conn = redis.Redis.from_url(redis_url)
    conn.flushdb()
    yield conn
    conn.flushdb()
    conn.close()


def run_processes(
    target: Callable[..., None], arg_tuples: list[tuple], timeout: float = 30
) -> None:
    """Run ``target`` once per argument tuple in spawned processes; require clean exits."""
    procs = [SPAWN.Process(target=target, args=args) for args in arg_tuples]
    for proc in procs:
        proc.start()
    deadline = time.monotonic() + timeout  # generous: only reached if a worker hangs
    for proc in procs:
        proc.join(max(0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            proc.kill()
    assert [proc.exitcode for proc in procs] == [0] * len(procs)


def server_time_us(conn: redis.Redis) -> int:
    """Return the Redis server clock in whole microseconds."""
    sec, usec = conn.time()
    return sec * 1_000_000 + usec


def sleep_to_second_start(conn: redis.Redis) -> None:
    """Sleep until just after the server clock ticks over to a new second."""
    time.sleep(1.02 - server_time_us(conn) % 1_000_000 / 1_000_000)


# --- workers (module level so "spawn" can import them) ---------------------


def fixed_window_worker(url: str, barrier, key: str, hits: int, limit: int, window: int) -> None:
    """Hit a fixed window ``hits`` times and push every result to Redis."""
    conn = redis.Redis.from_url(url)
    barrier.wait()
    results = [hit_fixed_window(conn, key, limit, window) for _ in range(hits)]
    conn.rpush("test:results", *(json.dumps(vars(r)) for r in results))


def rolling_worker(url: str, barrier, key: str, tries: int, limit: int) -> None:
    """Reserve a rolling quota ``tries`` times and push every result to Redis."""
    conn = redis.Redis.from_url(url)
    barrier.wait()
    results = [reserve_rolling(conn, key, limit) for _ in range(tries)]
    conn.rpush("test:results", *(json.dumps(vars(r)) for r in results))


def semaphore_worker(url: str, barrier, worker_id: int, rounds: int) -> None:
    """Repeatedly enter a limit-2 semaphore, recording how many are inside at once."""
    conn = redis.Redis.from_url(url)
    sem = Semaphore(conn, "shared", limit=2, lease=5)
    barrier.wait()
    for _ in range(rounds):
        token = sem.acquire(timeout=8)
        assert token is not None
        conn.rpush("test:inside", conn.incr("test:count"))
        time.sleep(0.03)
        conn.decr("test:count")
        sem.release(token)
        conn.rpush("test:entered", worker_id)


def crashing_holder(url: str) -> None:
    """Take the only slot, report the token, then die without releasing it."""
    conn = redis.Redis.from_url(url)
    token = Semaphore(conn, "crash", limit=1, lease=1.0).acquire()
    conn.rpush("test:holder", token or "")
    os._exit(0)


def waiting_acquirer(url: str) -> None:
    """Wait for the slot and report the server time at which it was obtained."""
    conn = redis.Redis.from_url(url)
    started_us = server_time_us(conn)
    token = Semaphore(conn, "crash", limit=1, lease=1.0).acquire(timeout=5, poll=0.02)
    report = {"token": token, "started_us": started_us, "at_us": server_time_us(conn)}
    conn.rpush("test:waiter", json.dumps(report))


def results_from(conn: redis.Redis, cls: type) -> list:
    """Load the result dataclasses the workers pushed to ``test:results``."""
    return [cls(**json.loads(raw)) for raw in conn.lrange("test:results", 0, -1)]


# --- fixed window ------------------------------------------------------------


def test_fixed_window_allows_exactly_limit_across_processes(limits_conn, redis_url):
    # A one-hour window makes crossing a boundary mid-test practically impossible.
    barrier = SPAWN.Barrier(4)
    run_processes(fixed_window_worker, [(redis_url, barrier, "app:1", 40, 60, 3600)] * 4)

    results = results_from(limits_conn, WindowResult)
    assert len(results) == 160
    assert sum(r.allowed for r in results) == 60
    # Every hit, rejected ones included, took its own count.
    assert sorted(r.count for r in results) == list(range(1, 161))
    for r in results:
        assert r.allowed == (r.count <= 60)
        assert r.remaining == max(0, 60 - r.count)
        assert 0 < r.reset_after <= 3600


def test_fixed_window_remaining_counts_down_and_key_expires_after_window(limits_conn):
    results = [hit_fixed_window(limits_conn, "app:1", 3, window=3600) for _ in range(5)]
    assert [r.remaining for r in results] == [2, 1, 0, 0, 0]
    assert [r.allowed for r in results] == [True, True, True, False, False]

    [key] = limits_conn.keys("limit:fw:app:1:*")
    index = int(key.decode().rsplit(":", 1)[1])
    assert index == server_time_us(limits_conn) // 1_000_000 // 3600
    reset_after = results[-1].reset_after
    # The key outlives its window by one more window length.
    assert reset_after + 3600 - 2 <= limits_conn.ttl(key) <= reset_after + 3600


def test_fixed_window_keys_are_independent(limits_conn):
    for _ in range(3):
        hit_fixed_window(limits_conn, "app:1", 2, window=3600)
    assert not hit_fixed_window(limits_conn, "app:1", 2, window=3600).allowed

    other = hit_fixed_window(limits_conn, "app:2", 2, window=3600)
    assert (other.allowed, other.count, other.remaining) == (True, 1, 1)


def test_fixed_window_rollover_lets_hits_through_again(limits_conn):
    sleep_to_second_start(limits_conn)
    results = [hit_fixed_window(limits_conn, "app:1", 2, window=1) for _ in range(3)]
    assert [r.allowed for r in results] == [True, True, False]
    assert results[-1].reset_after == 1

    time.sleep(1)
    fresh = hit_fixed_window(limits_conn, "app:1", 2, window=1)
    assert (fresh.allowed, fresh.count, fresh.remaining) == (True, 1, 1)


def hit_a_per_minute_limit(conn: redis.Redis, window: int) -> tuple[bool, int]:
    """Hit a 60-second fixed window once: is its key that of a `window`-second window, and its TTL."""
    before = server_time_us(conn) // 1_000_000
    hit_fixed_window(conn, "app:1", 5, 60)
    after = server_time_us(conn) // 1_000_000
    [key] = conn.keys("limit:fw:app:1:*")
    index = int(key.decode().rsplit(":", 1)[1])
    return index in {before // window, after // window}, conn.ttl(key)


def test_the_app_setting_replaces_the_length_of_every_fixed_window(app, limits_conn, monkeypatch):
    monkeypatch.setitem(app.config, "RATE_WINDOW_SECONDS", 3600)
    hourly, ttl = hit_a_per_minute_limit(limits_conn, 3600)
    assert hourly and 3600 < ttl <= 7200


def test_without_the_app_setting_a_window_keeps_its_own_length(app, limits_conn):
    per_minute, ttl = hit_a_per_minute_limit(limits_conn, 60)
    assert per_minute and 60 < ttl <= 120


# --- rolling quota -----------------------------------------------------------


def test_rolling_quota_allows_exactly_limit_across_processes(limits_conn, redis_url):
    barrier = SPAWN.Barrier(5)
    run_processes(rolling_worker, [(redis_url, barrier, "tenant:1", 8, 20)] * 5)

    results = results_from(limits_conn, QuotaResult)
    assert len(results) == 40
    allowed = [r for r in results if r.allowed]
    refused = [r for r in results if not r.allowed]
    assert sorted(r.used for r in allowed) == list(range(1, 21))
    assert all(r.used == 20 and 0 < r.retry_after <= 86400 for r in refused)
    assert rolling_usage(limits_conn, "tenant:1") == 20
    assert rolling_usage(limits_conn, "tenant:2") == 0


def test_rolling_quota_frees_reservations_as_they_age_out(limits_conn):
    first = reserve_rolling(limits_conn, "tenant:1", 2, window=2)
    time.sleep(1)
    second = reserve_rolling(limits_conn, "tenant:1", 2, window=2)
    refused = reserve_rolling(limits_conn, "tenant:1", 2, window=2)
    assert (first.allowed, second.allowed, refused.allowed) == (True, True, False)
    # Only the first reservation is close to leaving the window.
    assert refused.retry_after == 1

    time.sleep(1.05)
    assert rolling_usage(limits_conn, "tenant:1", window=2) == 1
    assert reserve_rolling(limits_conn, "tenant:1", 2, window=2).allowed
    # Unlike a fixed window, the second reservation still counts.
    assert not reserve_rolling(limits_conn, "tenant:1", 2, window=2).allowed


# --- semaphore ---------------------------------------------------------------


def test_semaphore_never_admits_more_than_limit_across_processes(limits_conn, redis_url):
    barrier = SPAWN.Barrier(6)
    run_processes(semaphore_worker, [(redis_url, barrier, i, 4) for i in range(6)])

    observed = [int(n) for n in limits_conn.lrange("test:inside", 0, -1)]
    entered = [int(n) for n in limits_conn.lrange("test:entered", 0, -1)]
    assert max(observed) == 2
    assert sorted(entered) == sorted(list(range(6)) * 4)
    assert Semaphore(limits_conn, "shared", limit=2, lease=5).holders() == 0


def test_semaphore_slot_of_crashed_holder_frees_after_lease(limits_conn, redis_url):
    run_processes(crashing_holder, [(redis_url,)])
    token = limits_conn.lpop("test:holder").decode()
    sem = Semaphore(limits_conn, "crash", limit=1, lease=1.0)
    assert token and sem.holders() == 1
    assert sem.acquire() is None
    lease_end_us = limits_conn.zscore(sem.key, token)

    run_processes(waiting_acquirer, [(redis_url,)])
    waiter = json.loads(limits_conn.lpop("test:waiter"))
    assert waiter["token"]
    # Blocked until the lease ended, then admitted promptly (not only once
    # the idle key itself expired).
    assert waiter["at_us"] >= lease_end_us
    assert waiter["at_us"] <= max(waiter["started_us"], lease_end_us) + 500_000


def test_semaphore_refresh_keeps_lease_alive(limits_conn):
    sem = Semaphore(limits_conn, "refresh", limit=1, lease=0.4)
    token = sem.acquire()
    for _ in range(4):  # 0.8 s in total, twice the original lease
        time.sleep(0.2)
        assert sem.refresh(token)
    assert sem.holders() == 1
    assert sem.acquire() is None

    time.sleep(0.5)
    # holders() must ignore the expired lease even before anything purges it.
    assert sem.holders() == 0
    assert not sem.refresh(token)
    assert sem.acquire() is not None


def test_semaphore_key_expires_shortly_after_lease(limits_conn):
    sem = Semaphore(limits_conn, "ttl", limit=3, lease=2.0)
    sem.acquire()
    assert 2000 < limits_conn.pttl(sem.key) <= 3000


def test_semaphore_hold_raises_busy_when_full_and_always_releases(limits_conn):
    sem = Semaphore(limits_conn, "hold", limit=1, lease=5)
    with sem.hold() as token:
        assert token and sem.holders() == 1
        with pytest.raises(SemaphoreBusy):
            with sem.hold(timeout=0.1):
                pass
    assert sem.holders() == 0

    with pytest.raises(RuntimeError):
        with sem.hold():
            raise RuntimeError("boom")
    assert sem.holders() == 0


def test_semaphore_acquire_times_out_when_full_and_succeeds_after_release(limits_conn):
    sem = Semaphore(limits_conn, "wait", limit=1, lease=5)
    token = sem.acquire()
    assert sem.acquire(timeout=0.1) is None
    sem.release(token)
    assert sem.acquire(timeout=0.1) is not None


def test_semaphore_release_of_unknown_token_is_harmless(limits_conn):
    sem = Semaphore(limits_conn, "unknown", limit=1, lease=5)
    token = sem.acquire()
    sem.release("not-a-token")
    sem.release("not-a-token")
    assert sem.holders() == 1
    sem.release(token)
    assert sem.holders() == 0
