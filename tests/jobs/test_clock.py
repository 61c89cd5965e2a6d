"""Any number of clocks: one holds the lease and queues each 15-second slot's tick once, the others
stand by and take over when the holder dies, is paused or loses Redis. Real `python -m jobs.clock`
processes run with the tick and the lease shortened (CLOCK_TICK_SECONDS, CLOCK_LEASE_SECONDS)."""
import os
import signal
import subprocess
import time
from datetime import timedelta

import pytest
from rq import Queue
from rq.registry import ScheduledJobRegistry

from core.config import PROJECT_ROOT
from core.queue_names import DEFAULT, WEBHOOKS
from jobs.clock import CATCH_UP_SLOTS, LEASE_KEY, SLOT_KEY, Clock
from tests.conftest import CLOCK
from tests.peers import Forwarder
from tests.support.metrics import scrape, value

TICK, LEASE = 1, 3  # seconds, for the processes under test


def _clock(redis_url: str) -> subprocess.Popen:
    """A real clock process on `redis_url` with a 1 s tick and a 3 s lease."""
    env = {**os.environ, "REDIS_URL": redis_url, "CLOCK_TICK_SECONDS": str(TICK), "CLOCK_LEASE_SECONDS": str(LEASE)}
    return subprocess.Popen(CLOCK, cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _holder(redis_conn, clocks: list) -> subprocess.Popen:
    """The clock process whose name the lease holds (host:pid:…), waiting for one to hold it."""
    for _ in range(100):
        lease = redis_conn.get(LEASE_KEY)
        if lease is not None:
            pid = int(lease.decode().split(":")[2])
            return next(process for process in clocks if process.pid == pid)
        time.sleep(0.1)
    raise AssertionError("no clock took the lease")


def _ticked_slots(redis_conn) -> list[int]:
    """The slots of the ticks queued on `default`, in queue order (a slot queued twice shows twice)."""
    return [int(job_id.decode().removeprefix("tick-")) for job_id in redis_conn.lrange(Queue(DEFAULT, connection=redis_conn).key, 0, -1)]


def _wait_for_ticks(redis_conn, more_than: int, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while len(_ticked_slots(redis_conn)) <= more_than:
        assert time.monotonic() < deadline, "the ticks stopped"
        time.sleep(0.1)


def _stop(processes: list) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.terminate()
    for process in processes:
        process.wait(timeout=20)


def test_three_clocks_one_killed_one_paused_tick_every_slot_once(app, app_config, redis_conn):
    clocks = [_clock(app_config["REDIS_URL"]) for _ in range(3)]
    try:
        _wait_for_ticks(redis_conn, 2, 10)
        killed = _holder(redis_conn, clocks)
        killed.kill()  # kill -9: the lease lapses, nobody gives it up
        seen = len(_ticked_slots(redis_conn))
        _wait_for_ticks(redis_conn, seen + 2, LEASE + 5)  # a standby took over within the lease
        paused = _holder(redis_conn, clocks)
        assert paused is not killed
        paused.send_signal(signal.SIGSTOP)
        seen = len(_ticked_slots(redis_conn))
        _wait_for_ticks(redis_conn, seen + 2, LEASE + 5)  # the third took over
        paused.send_signal(signal.SIGCONT)  # it resumes believing it holds the lease
        time.sleep(3 * TICK)
        assert {process.poll() for process in clocks if process is not killed} == {None}  # still running
    finally:
        _stop(clocks)
    slots = _ticked_slots(redis_conn)
    assert len(slots) == len(set(slots)), "a slot was queued twice"
    assert slots == sorted(slots) and slots == list(range(slots[0], slots[-1] + 1)), "a slot was never queued"


def test_a_clock_that_loses_redis_keeps_trying_and_a_standby_takes_over(app, app_config, redis_conn):
    network = Forwarder(app_config["REDIS_URL"])
    cut_off = _clock(network.url)
    try:
        _wait_for_ticks(redis_conn, 1, 10)
        assert _holder(redis_conn, [cut_off]) is cut_off
        standby = _clock(app_config["REDIS_URL"])
        time.sleep(1)
        network.cut()  # the holder's Redis is gone: it cannot renew
        seen = len(_ticked_slots(redis_conn))
        _wait_for_ticks(redis_conn, seen + 2, LEASE + 5)
        assert _holder(redis_conn, [cut_off, standby]) is standby
        network.mend()
        time.sleep(3 * TICK)  # the first reaches Redis again and stands by
        assert cut_off.poll() is None and _holder(redis_conn, [cut_off, standby]) is standby
    finally:
        _stop([cut_off, standby])
        network.close()
    slots = _ticked_slots(redis_conn)
    assert slots == list(range(slots[0], slots[-1] + 1))


def test_a_polite_stop_gives_the_lease_up_at_once(app, app_config, redis_conn):
    first = _clock(app_config["REDIS_URL"])
    try:
        _wait_for_ticks(redis_conn, 0, 10)
        first.terminate()
        first.wait(timeout=20)
        assert redis_conn.get(LEASE_KEY) is None
    finally:
        _stop([first])


@pytest.fixture
def two(redis_conn) -> tuple[Clock, Clock]:
    """Two clocks in this process on the test Redis, with a 1 s tick and a 3 s lease."""
    return Clock(redis_conn, TICK, LEASE), Clock(redis_conn, TICK, LEASE)


def test_a_holder_that_lost_the_lease_while_paused_writes_nothing(app, redis_conn, two):
    paused, other = two
    paused.round()
    assert paused.lease is not None
    delayed = Queue(WEBHOOKS, connection=redis_conn).enqueue_in(timedelta(seconds=-1), "jobs.cron.tick")
    redis_conn.delete(LEASE_KEY)  # its lease lapsed while it was stopped
    other.round()  # the standby took over and did the work
    time.sleep(TICK)
    assert paused.queue_ticks() == 0 and paused.move_delayed_jobs() == 0  # resumed with a stale lease
    assert _ticked_slots(redis_conn) == sorted(set(_ticked_slots(redis_conn)))
    assert redis_conn.lrange(Queue(WEBHOOKS, connection=redis_conn).key, 0, -1) == [delayed.id.encode()]


def test_a_scrape_reads_the_lease_left_and_its_fence_growing_at_each_takeover(app, client, redis_conn, two):
    first, second = two
    before = scrape(client)
    assert value(before, "clock_lease_seconds_left") == -1 and value(before, "clock_lease_fence") == 0
    first.round()
    held = scrape(client)
    assert 0 < value(held, "clock_lease_seconds_left") <= LEASE and value(held, "clock_lease_fence") == 1
    redis_conn.delete(LEASE_KEY)  # the holder died
    second.round()
    assert value(scrape(client), "clock_lease_fence") == 2


def test_a_standby_never_queues(app, redis_conn, two):
    holder, standby = two
    holder.round()
    standby.round()
    assert standby.lease is None and standby.queue_ticks() == 0 and standby.move_delayed_jobs() == 0


def test_missed_slots_are_caught_up_but_only_the_last_ten_minutes(app, redis_conn, two):
    clock, _ = two
    seconds, _ = redis_conn.time()
    redis_conn.set(SLOT_KEY, seconds // TICK - 5)  # five slots ago, then the clocks stopped
    clock.round()
    assert len(_ticked_slots(redis_conn)) in (5, 6)  # each slot since, the current one included
    redis_conn.delete(Queue(DEFAULT, connection=redis_conn).key)
    redis_conn.set(SLOT_KEY, seconds // TICK - 10_000)
    time.sleep(TICK)
    clock.round()
    assert len(_ticked_slots(redis_conn)) == CATCH_UP_SLOTS


def test_a_delayed_job_moves_once_whoever_holds_the_lease(app, redis_conn, two):
    first, second = two
    job = Queue(WEBHOOKS, connection=redis_conn).enqueue_in(timedelta(seconds=-1), "jobs.cron.tick")
    first.round()
    redis_conn.delete(LEASE_KEY)
    second.round()
    assert redis_conn.lrange(Queue(WEBHOOKS, connection=redis_conn).key, 0, -1) == [job.id.encode()]
    assert ScheduledJobRegistry(WEBHOOKS, connection=redis_conn).count == 0


def test_slots_follow_the_redis_servers_time_not_the_hosts(app, redis_conn, two, monkeypatch):
    clock, _ = two
    before, _ = redis_conn.time()
    monkeypatch.setattr(time, "time", lambda: 0.0)  # a host whose clock is lost
    clock.round()
    after, _ = redis_conn.time()
    (slot,) = _ticked_slots(redis_conn)
    assert before // TICK <= slot <= after // TICK


def test_after_a_redis_flush_one_clock_takes_the_lease_and_ticks_go_on(app, redis_conn, two):
    holder, standby = two
    holder.round()
    redis_conn.flushdb()  # the lease, the slot mark and the queue are gone
    standby.round()
    holder.round()
    assert (holder.lease is None) != (standby.lease is None)
    assert len(_ticked_slots(redis_conn)) == 1  # the current slot, once
