"""The clock process, `python -m jobs.clock`: run as many as you like, on as many hosts.

One of them holds a lease in Redis (a key naming its holder behind a fencing number, renewed every
round) and, while it holds it, queues the 15-second tick and moves every queue's due delayed jobs
(retries, `enqueue_in`) into their queues; the others stand by and take the lease over once it
lapses, within LEASE_SECONDS of the holder dying, being paused or losing Redis. Slots are counted
in Redis server time, so a host's wrong clock moves nothing.

Whatever the clocks believe, each write is a Redis transaction that watches the lease (and what it
changes), so a holder that lost the lease while paused writes nothing when it resumes: a tick is
queued once per 15-second slot (`clock:tick:slot` only moves forward, in the same transaction that
queues the tick, whose job id names the slot), missed slots are caught up (at most CATCH_UP_SLOTS),
and a delayed job is moved once. A clock that loses Redis keeps trying; it never exits for that.
It only talks to Redis (REDIS_URL): it never loads the app. docs/decisions.md, "The clock lease".
"""
import logging
import os
import signal
import socket
import time
import uuid
from collections.abc import Iterable

from prometheus_client.core import GaugeMetricFamily, Metric
from redis import Redis
from redis.exceptions import RedisError, WatchError
from rq import Queue
from rq.job import Job
from rq.registry import ScheduledJobRegistry
from rq.utils import current_timestamp

from core.queue_names import ALL_QUEUES, DEFAULT
from core.redis_policy import refuse_evicting_redis
from jobs.cron import TICK_SECONDS
from jobs.logs import FORMAT

log = logging.getLogger("jobs.clock")  # also when run as __main__

LEASE_KEY, FENCE_KEY, SLOT_KEY = "clock:lease", "clock:fence", "clock:tick:slot"
LEASE_SECONDS = 15  # a silent holder is replaced this long after its last renewal
ROUND_SECONDS = 1.0
CATCH_UP_SLOTS = 40  # ten minutes of ticks queued after a gap; older ones are gone
TICK_JOB = "jobs.cron.tick"

# KEYS: lease, fence; ARGV: this clock's name, lease ms. Renews the lease when this clock holds it,
# takes it with the next fencing number when nobody does; returns the lease's value when this
# clock holds it now, else false.
_HOLD = """
local holder = redis.call('GET', KEYS[1])
if holder then
  if string.sub(holder, string.find(holder, ':', 1, true) + 1) ~= ARGV[1] then return false end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return holder
end
local lease = redis.call('INCR', KEYS[2]) .. ':' .. ARGV[1]
redis.call('SET', KEYS[1], lease, 'PX', ARGV[2])
return lease
"""


class Clock:
    """One clock process's rounds: hold the lease if it can, and while it does, queue due ticks and
    move due delayed jobs."""

    def __init__(self, connection: Redis, tick_seconds: float = TICK_SECONDS,
                 lease_seconds: float = LEASE_SECONDS):
        self.connection = connection
        self.name = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.tick_seconds, self.lease_ms = tick_seconds, int(lease_seconds * 1000)
        self.lease: bytes | None = None
        self._hold = connection.register_script(_HOLD)

    def round(self) -> None:
        """Renew or take the lease; as its holder, queue what is due."""
        lease = self._hold(keys=[LEASE_KEY, FENCE_KEY], args=[self.name, self.lease_ms])
        if (lease is not None) != (self.lease is not None):
            log.info("clock %s %s the lease", self.name, "holds" if lease else "stands by: another clock holds")
        self.lease = lease
        if lease is not None:
            self.queue_ticks()
            self.move_delayed_jobs()

    def _fenced(self, pipe, *watched: str) -> bool:
        """Watch the lease (and `watched`); whether this clock still holds the lease it renewed."""
        pipe.watch(LEASE_KEY, *watched)
        return pipe.get(LEASE_KEY) == self.lease

    def queue_ticks(self) -> int:
        """Queue the tick of every slot since the last one queued (the current one included), each
        in a transaction that moves the slot mark forward; returns how many were queued."""
        seconds, micros = self.connection.time()
        current = int((seconds + micros / 1_000_000) // self.tick_seconds)
        queued = 0
        queue = Queue(DEFAULT, connection=self.connection)
        with self.connection.pipeline() as pipe:
            try:
                if not self._fenced(pipe, SLOT_KEY):
                    return 0
                last = pipe.get(SLOT_KEY)
                first = max(int(last) + 1 if last is not None else current, current - CATCH_UP_SLOTS + 1)
                if first > current:
                    return 0
                pipe.multi()
                for slot in range(first, current + 1):
                    queue.enqueue_call(TICK_JOB, job_id=f"tick-{slot}", pipeline=pipe)
                    queued += 1
                pipe.set(SLOT_KEY, current)
                pipe.execute()
            except WatchError:  # the lease or the mark moved meanwhile: the next round looks again
                return 0
        return queued

    def move_delayed_jobs(self) -> int:
        """Move the due jobs of each queue's scheduled registry into the queue, the registry watched
        with the lease, so each job moves once; returns how many moved."""
        moved = 0
        for name in ALL_QUEUES:
            registry = ScheduledJobRegistry(name, connection=self.connection)
            with self.connection.pipeline() as pipe:
                try:
                    if not self._fenced(pipe, registry.key):
                        return moved
                    job_ids = registry.get_jobs_to_schedule(current_timestamp())
                    if not job_ids:
                        continue
                    jobs = Job.fetch_many(job_ids, connection=self.connection)
                    queue = Queue(name, connection=self.connection)
                    pipe.multi()
                    for job_id, job in zip(job_ids, jobs):
                        if job is not None:
                            queue._enqueue_job(job, pipeline=pipe, at_front=job.should_enqueue_at_front())
                        registry.remove(job_id, pipeline=pipe)
                    pipe.execute()
                    moved += len(job_ids)
                except WatchError:  # a job was scheduled meanwhile, or the lease moved: next round
                    continue
        return moved

    def release(self) -> None:
        """Give the lease up at a polite stop, so a standby takes over at once."""
        if self.lease is not None:
            with self.connection.pipeline() as pipe:
                try:
                    if self._fenced(pipe):
                        pipe.multi()
                        pipe.delete(LEASE_KEY)
                        pipe.execute()
                except (WatchError, RedisError):
                    pass  # it lapses by itself
            self.lease = None


def lease_readings(connection: Redis) -> Iterable[Metric]:
    """The lease as a scrape reads it (wired into /metrics by the app): seconds left on it (-1 when
    no clock holds it) and its fencing number, which grows by one at every takeover."""
    left, fence = connection.pttl(LEASE_KEY), connection.get(FENCE_KEY)
    yield GaugeMetricFamily("clock_lease_seconds_left", "Seconds left on the clock lease; -1 when no clock holds it.",
                            value=left / 1000 if left >= 0 else -1)
    yield GaugeMetricFamily("clock_lease_fence", "The clock lease's fencing number: one more at every takeover.",
                            value=int(fence or 0))


def run(clock: Clock, stop: list, round_seconds: float = ROUND_SECONDS) -> None:
    """Rounds about once a second until `stop` holds something; Redis being away is waited out."""
    away = False
    try:
        while not stop:
            try:
                clock.round()
                if away:
                    log.info("clock %s reaches Redis again", clock.name)
                away = False
            except RedisError as error:
                if not away:
                    log.error("clock %s cannot reach Redis (%s); it keeps trying", clock.name, type(error).__name__)
                away, clock.lease = True, None
            time.sleep(round_seconds)
    finally:
        clock.release()


def main() -> None:
    """Start on REDIS_URL; SIGTERM or Ctrl+C stops it after the current round, giving the lease up.
    CLOCK_TICK_SECONDS and CLOCK_LEASE_SECONDS shorten both for tests (never in production)."""
    logging.basicConfig(level=logging.INFO, format=FORMAT)
    url = os.environ.get("REDIS_URL")
    if not url:
        raise SystemExit("the clock needs REDIS_URL (make run sets it for the embedded Redis)")
    tick = float(os.environ.get("CLOCK_TICK_SECONDS") or TICK_SECONDS)
    lease = float(os.environ.get("CLOCK_LEASE_SECONDS") or LEASE_SECONDS)
    stop = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.append(True))
    connection = Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5)
    refuse_evicting_redis(connection, "the clock")
    clock = Clock(connection, tick, lease)
    log.info("clock %s started: the tick every %g s, delayed jobs of %s; a lease of %g s",
             clock.name, tick, ", ".join(ALL_QUEUES), lease)
    run(clock, stop, min(ROUND_SECONDS, lease / 5))


if __name__ == "__main__":
    main()
