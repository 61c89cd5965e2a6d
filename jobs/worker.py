"""The worker of the trusted queues: RQ's non-forking worker, each job in a fresh app context."""
import logging

from flask import Flask
from rq import SimpleWorker
from rq.executions import Execution
from rq.job import Job
from rq.queue import Queue

from core.db import db

log = logging.getLogger(__name__)


class AppWorker(SimpleWorker):
    """Runs jobs in its own process (no work horse per job), each inside a new app context.

    Jobs share the process, so each gets its own `g` and database session, and the session is
    closed after the job, rolling back whatever it left open (an aborted transaction, flushed but
    uncommitted rows) before the next job starts. RQ's death penalty still bounds every job:
    SIGALRM raises `JobTimeoutException` inside the job, which fails it, and the worker goes on.
    """

    def __init__(self, queues, *args, app: Flask, **kwargs):
        super().__init__(queues, *args, **kwargs)
        self.app = app

    def perform_job(self, job: Job, queue: Queue, execution: Execution) -> bool:
        """RQ's perform_job inside a fresh app context; the job's session ends with it."""
        with self.app.app_context():
            try:
                return super().perform_job(job, queue, execution)
            finally:
                end_session()


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
