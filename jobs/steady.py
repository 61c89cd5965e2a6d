"""Workers that ride out a Redis restart. RQ's work loop quits on any error outside a job, so a Redis
stopped while a worker records a job's outcome, heartbeats or cleans its registries would end the
process; here the worker waits for Redis instead and goes on (docs/decisions.md, "Redis restarts")."""
import logging
import time

from redis.exceptions import RedisError

log = logging.getLogger("jobs.worker")
REDIS_WAIT_SECONDS = 1.0  # between looks at a Redis that is away


class RidesOutRedis:
    """Mixed into an RQ worker class: the work loop's own steps that talk to Redis (suspension,
    maintenance, a job's bookkeeping, the heartbeat) wait for Redis to answer again instead of
    ending the worker. A job whose outcome could not be recorded stays `started`: RQ's abandoned-job
    cleanup fails it later, and the sweepers, which read the database, find what it left."""

    def _wait_for_redis(self, step: str, error: RedisError) -> None:
        log.error("worker %s: Redis is out of reach during %s (%s); waiting for it", self.name, step,
                  type(error).__name__)
        while True:
            time.sleep(REDIS_WAIT_SECONDS)
            try:
                self.connection.ping()
            except RedisError:
                continue
            log.info("worker %s: Redis answers again", self.name)
            return

    def check_for_suspension(self, burst: bool):
        try:
            return super().check_for_suspension(burst)
        except RedisError as error:
            self._wait_for_redis("the look at `rq suspend`", error)

    def run_maintenance_tasks(self):
        try:
            return super().run_maintenance_tasks()
        except RedisError as error:
            self._wait_for_redis("maintenance", error)

    def execute_job(self, job, queue):
        try:
            return super().execute_job(job, queue)
        except RedisError as error:
            self._wait_for_redis(f"the bookkeeping of job {job.id}", error)

    def heartbeat(self, timeout=None, pipeline=None):
        if timeout is not None or pipeline is not None:
            return super().heartbeat(timeout, pipeline)
        try:
            return super().heartbeat()
        except RedisError as error:
            self._wait_for_redis("the heartbeat", error)
