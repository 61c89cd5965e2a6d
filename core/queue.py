"""The one way to enqueue a job (below every feature package); the queue names are
`core.queue_names`."""
from dataclasses import dataclass

from rq import Queue, Retry
from rq.job import Job

from core.db import db
from core.queue_names import DEFAULT
from core.redis import get_redis

_PENDING = (b"queued", b"scheduled", b"deferred", b"started")  # a job in these states is not queued again


def queue(name: str) -> Queue:
    """The RQ queue of that name on the app's Redis."""
    return Queue(name, connection=get_redis())


def enqueue(func: str, *args, queue_name: str = DEFAULT, job_id: str | None = None,
            retry: Retry | None = None, job_timeout: int | None = None, ttl: int | None = None,
            result_ttl: int | None = None, failure_ttl: int | None = None, **kwargs):
    """Enqueue `func` (an import path: a job's wire format) with id-only arguments (scripts excepted).

    The job's description is the import path alone: RQ's default is the call with its arguments,
    which workers log and which would put a script's source and input into the runner's log.
    A deterministic `job_id` collapses duplicates while the first is still queued.
    Call it only after the transaction that wrote the rows has committed.
    """
    q = queue(queue_name)
    if job_id is not None and q.connection.hget(Job.key_for(job_id), "status") in _PENDING:
        return q.fetch_job(job_id)  # one round trip to find a twin, the rest only when there is one
    return q.enqueue(func, args=args, kwargs=kwargs, job_id=job_id, retry=retry, job_timeout=job_timeout,
                     ttl=ttl, result_ttl=result_ttl, failure_ttl=failure_ttl, description=func)


@dataclass(frozen=True)
class JobSpec:
    """One job a unit of work queues once it has committed: entry point, ids, queue and options."""

    func: str
    args: tuple[str, ...]
    queue_name: str = DEFAULT
    job_id: str | None = None
    job_timeout: int | None = None

    def enqueue(self):
        """Queue it now (`enqueue`)."""
        return enqueue(self.func, *self.args, queue_name=self.queue_name, job_id=self.job_id,
                       job_timeout=self.job_timeout)


def commit_then_enqueue(*jobs: JobSpec) -> None:
    """Commit the unit of work, then queue its jobs, so no job reads rows that are not committed."""
    db.session.commit()
    for job in jobs:
        job.enqueue()
