"""The clock process, `python -m jobs.clock` (run exactly one): RQ's cron scheduler queues the
15-second tick, and RQ's scheduler moves the delayed jobs of every queue (retries, `enqueue_in`)
into their queues when they fall due, so no worker forks a scheduler of its own. It only talks to
Redis (REDIS_URL): it never loads the app. docs/decisions.md, "Processes of the embedded system"."""
import logging
import os
import signal
import time

from redis import Redis
from rq.cron import CronScheduler
from rq.scheduler import RQScheduler

from core.queue_names import ALL_QUEUES, DEFAULT
from jobs.cron import TICK_SECONDS, tick
from jobs.logs import FORMAT

log = logging.getLogger("jobs.clock")  # also when run as __main__


def run(connection: Redis, stop: list) -> None:
    """Keep both schedulers going, about once a second, until `stop` holds something."""
    scheduler = RQScheduler(ALL_QUEUES, connection=connection)
    cron = CronScheduler(connection=connection)
    cron.register(tick, queue_name=DEFAULT, interval=TICK_SECONDS)
    scheduler.register_birth()
    cron.register_birth()
    try:
        while not stop:
            if scheduler.should_reacquire_locks:
                scheduler.acquire_locks()
            scheduler.heartbeat()
            scheduler.enqueue_scheduled_jobs()
            if cron.enqueue_jobs():
                cron.save()
            cron.heartbeat()
            time.sleep(scheduler.interval)
    finally:
        scheduler.stop()
        cron.register_death()


def main() -> None:
    """Start on REDIS_URL; SIGTERM or Ctrl+C stops it after the current round."""
    logging.basicConfig(level=logging.INFO, format=FORMAT)
    url = os.environ.get("REDIS_URL")
    if not url:
        raise SystemExit("the clock needs REDIS_URL (make run sets it for the embedded Redis)")
    stop = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.append(True))
    log.info("clock started: the tick every %d s, delayed jobs of %s", TICK_SECONDS, ", ".join(ALL_QUEUES))
    run(Redis.from_url(url), stop)


if __name__ == "__main__":
    main()
