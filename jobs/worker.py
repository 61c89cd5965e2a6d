"""The worker of the trusted queues: RQ's non-forking worker, each job in a fresh app context, with
fewer Redis round trips of bookkeeping per job (docs/decisions.md, "Webhook deliveries, cheaper"),
its statements bounded by the job's timeout, and a job that met a store outage tried again."""
import logging
import time

from flask import Flask
from redis.exceptions import RedisError
from rq import SimpleWorker
from rq.exceptions import AbandonedJobError
from rq.executions import Execution
from rq.job import Job
from rq.queue import Queue

from core.db import cut_by_statement_timeout, db, is_store_outage, statement_timeout
from core.egress import ca_bundle, tls_context
from core.metrics import JOBS
from jobs.steady import RidesOutRedis

log = logging.getLogger(__name__)

HEARTBEAT_EVERY = 10.0  # seconds between the worker's own heartbeats (its key lives worker_ttl + 60 s)
SUSPENSION_EVERY = 1.0  # seconds between looks at `rq suspend`
# A job without its own RQ Retry that failed because PostgreSQL or Redis was away is tried again
# after these seconds (about four minutes in all); it fails for good only if the outage outlasts them.
OUTAGE_RETRY_INTERVALS = (5, 15, 30, 60, 120)


class AppWorker(RidesOutRedis, SimpleWorker):
    """Runs jobs in its own process (no work horse per job), each inside a new app context.

    Jobs share the process, so each gets its own `g` and database session, and the session is
    closed after the job, rolling back whatever it left open (an aborted transaction, flushed but
    uncommitted rows) before the next job starts. RQ's death penalty still bounds every job:
    SIGALRM raises `JobTimeoutException` inside the job, which fails it, and the worker goes on.
    """

    def __init__(self, queues, *args, app: Flask, **kwargs):
        super().__init__(queues, *args, **kwargs)
        self.app = app
        self.push_exc_handler(_count_abandoned)

    _beaten_at = _suspension_seen_at = float("-inf")

    def heartbeat(self, timeout=None, pipeline=None):
        """RQ's worker heartbeat, at most every HEARTBEAT_EVERY seconds when it only renews the
        worker's key (RQ calls it three times per job; the key lives minutes), in one round trip;
        a heartbeat with its own timeout or pipeline (a job's) always goes through. A Redis that is
        away is waited for (RidesOutRedis)."""
        if timeout is not None or pipeline is not None:
            return super().heartbeat(timeout, pipeline)
        if time.monotonic() - self._beaten_at < HEARTBEAT_EVERY:
            return None
        self._beaten_at = time.monotonic()
        try:
            with self.connection.pipeline(transaction=False) as beat:
                super().heartbeat(None, beat)
                beat.execute()
        except RedisError as error:
            self._wait_for_redis("the heartbeat", error)
        return None

    def set_state(self, state, pipeline=None):
        """RQ's set_state, skipped when the worker is already in that state (idle after a job, then
        idle again before the next dequeue)."""
        if pipeline is None and state == getattr(self, "_state", None):
            return
        super().set_state(state, pipeline)

    def check_for_suspension(self, burst: bool):
        """RQ's look at `rq suspend`, at most every SUSPENSION_EVERY seconds instead of every job."""
        if time.monotonic() - self._suspension_seen_at < SUSPENSION_EVERY:
            return
        self._suspension_seen_at = time.monotonic()
        super().check_for_suspension(burst)

    def warm_up(self) -> None:
        """Open what the first job would otherwise wait for: a database connection and the
        outbound TLS context. A database away right now (restarting) only leaves the connection to
        the first job: a worker started meanwhile starts all the same."""
        with self.app.app_context():
            try:
                with db.engine.connect() as connection:
                    connection.exec_driver_sql("SELECT 1")
            except Exception as error:
                if not is_store_outage(error):
                    raise
                log.warning("the database is out of reach at start (%s): the first job connects", type(error).__name__)
            tls_context(ca_bundle())

    def perform_job(self, job: Job, queue: Queue, execution: Execution) -> bool:
        """RQ's perform_job inside a fresh app context, each statement bounded on PostgreSQL by the
        job's own timeout (RQ cutting the job never leaves its statement running at the server);
        the job's session ends with it. Counted per queue: started, then finished or failed."""
        JOBS.labels(queue.name, "started").inc()
        succeeded = False
        with self.app.app_context(), statement_timeout(job.timeout or self.queue_class.DEFAULT_TIMEOUT):
            try:
                succeeded = super().perform_job(job, queue, execution)
                return succeeded
            finally:
                JOBS.labels(queue.name, "finished" if succeeded else "failed").inc()
                end_session()

    def handle_exception(self, job: Job, *exc_info):
        """A job without a Retry of its own that failed on a store outage gets OUTAGE_RETRY_INTERVALS
        (RQ then schedules it again instead of failing it for good). Every job claims its rows
        before acting, so running it again is what a sweeper's re-queue would do. A statement cut
        by the job's own timeout is the job's failure, as RQ's timeout is."""
        error = exc_info[1]
        if job.retries_left is None and isinstance(error, Exception) and is_store_outage(error) \
                and not cut_by_statement_timeout(error):
            log.warning("job %s met a store outage (%s); it is tried again", job.id, type(error).__name__)
            job.retries_left, job.retry_intervals = len(OUTAGE_RETRY_INTERVALS), list(OUTAGE_RETRY_INTERVALS)
        return super().handle_exception(job, *exc_info)


def _count_abandoned(job: Job, exc_type, exc_value, traceback) -> bool:
    """RQ's registry cleanup found the job still started after its worker died: counted per queue
    (rq_jobs_total{event="abandoned"}, the JobsAbandoned alert). The next handler runs too."""
    if exc_type is AbandonedJobError:
        JOBS.labels(job.origin, "abandoned").inc()
    return True


def end_session() -> None:
    """Close the context's session; a connection that cannot roll back is discarded instead.

    A timeout can cut a statement short: its connection is still busy with the statement and
    refuses the rollback, so it is invalidated (closed, never returned to the pool).
    """
    try:
        db.session.remove()
    except Exception as error:
        log.warning("job session could not roll back (%s); its connection is discarded", type(error).__name__)
        db.session().invalidate()
        db.session.remove()
