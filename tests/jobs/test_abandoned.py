"""RQ's abandoned-job handling (rq#2424, fixed in the pinned RQ 3.0.0): a job that finished is never
turned into a failure or run again because its entry was left in the started registry; only a job
still `started` when its worker died counts as abandoned."""
from rq import Queue
from rq.job import JobStatus
from rq.registry import FailedJobRegistry, StartedJobRegistry

from core.queue_names import DEFAULT
from jobs.worker import AppWorker
from tests.support.metrics import delta, scrape


def _left_in_the_started_registry(redis_conn, job) -> StartedJobRegistry:
    """The job's entry in the started registry, expired, as a worker that stopped between the job's
    end and the registry's cleanup leaves it."""
    registry = StartedJobRegistry(DEFAULT, connection=redis_conn)
    redis_conn.zadd(registry.key, {f"{job.id}:worker-gone": 1})
    return registry


def test_a_finished_job_left_in_the_started_registry_is_neither_failed_nor_run_again(app, redis_conn):
    queue = Queue(DEFAULT, connection=redis_conn)
    job = queue.enqueue("jobs.cron.tick")
    AppWorker([queue], connection=redis_conn, app=app).work(burst=True)
    assert job.get_status(refresh=True) == JobStatus.FINISHED
    _left_in_the_started_registry(redis_conn, job).cleanup()
    assert job.get_status(refresh=True) == JobStatus.FINISHED
    assert job.id not in FailedJobRegistry(DEFAULT, connection=redis_conn).get_job_ids()
    assert queue.job_ids == []


def test_a_job_still_started_when_its_worker_died_is_abandoned_and_counted(app, client, redis_conn):
    queue = Queue(DEFAULT, connection=redis_conn)
    job = queue.enqueue("jobs.cron.tick")
    queue.pop_job_id()  # a worker took it and died running it
    job.set_status(JobStatus.STARTED)
    _left_in_the_started_registry(redis_conn, job)
    before = scrape(client)
    AppWorker([queue], connection=redis_conn, app=app).clean_registries()  # as a worker's maintenance does
    assert job.get_status(refresh=True) == JobStatus.FAILED
    assert job.id in FailedJobRegistry(DEFAULT, connection=redis_conn).get_job_ids()
    assert delta(before, scrape(client), "rq_jobs_total", queue=DEFAULT, event="abandoned") == 1
