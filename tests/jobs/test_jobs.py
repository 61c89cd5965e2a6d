"""Jobs run through a real RQ SimpleWorker in burst mode against the test Redis."""
import subprocess
import time

import pytest
from rq import Queue, SimpleWorker

from core.config import PROJECT_ROOT
from core.redis import get_redis
from desk import events
from jobs import cron
from jobs.queues import DEFAULT, EVENTS, SCRIPTS, enqueue
from tests.conftest import FLASK, process_env

SEEN = "test:events:seen"


def record_event(**ids: str) -> None:
    """A subscriber that remembers what it was given."""
    get_redis().rpush(SEEN, ",".join(f"{k}={v}" for k, v in sorted(ids.items())))


def failing_tick() -> None:
    """A tick handler that fails."""
    raise RuntimeError("boom")


def counting_tick() -> None:
    """A tick handler that counts its runs."""
    get_redis().incr("test:ticks")


@pytest.fixture
def subscribed():
    events.subscribe(events.MESSAGE_RECEIVED, "tests.jobs.test_jobs.record_event")
    yield
    events.unsubscribe(events.MESSAGE_RECEIVED, "tests.jobs.test_jobs.record_event")


def work(redis_conn, *names: str) -> None:
    """Drain the queues with a real worker."""
    SimpleWorker([Queue(n, connection=redis_conn) for n in names], connection=redis_conn).work(burst=True)


def test_message_received_event_reaches_subscribers_through_a_worker(app, redis_conn, subscribed):
    events.emit_message_received("t-1", "c-1", "m-1")
    work(redis_conn, EVENTS)
    assert redis_conn.lrange(SEEN, 0, -1) == [b"conversation_id=c-1,message_id=m-1,tenant_id=t-1"]


def test_the_same_event_queued_twice_runs_once(app, redis_conn, subscribed):
    events.emit_message_received("t-1", "c-1", "m-1")
    events.emit_message_received("t-1", "c-1", "m-1")
    assert Queue(EVENTS, connection=redis_conn).count == 1
    work(redis_conn, EVENTS)
    assert redis_conn.llen(SEEN) == 1


def test_an_event_without_subscribers_completes(app, redis_conn):
    job = events.emit_message_received("t-1", "c-1", "m-2")
    work(redis_conn, EVENTS)
    assert job.get_status(refresh=True) == "finished" and job.return_value() == 0


def test_tick_records_a_heartbeat_and_runs_registered_handlers(app, redis_conn):
    cron.register_tick("tests.jobs.test_jobs.counting_tick")
    try:
        job = enqueue("jobs.cron.tick", queue_name=DEFAULT)
        work(redis_conn, DEFAULT)
    finally:
        cron.unregister_tick("tests.jobs.test_jobs.counting_tick")
    assert job.get_status(refresh=True) == "finished"
    assert redis_conn.get("test:ticks") == b"1"
    assert redis_conn.get(cron.HEARTBEAT_KEY) is not None


def test_a_failing_tick_handler_fails_the_job_but_others_still_run(app, redis_conn):
    cron.register_tick("tests.jobs.test_jobs.failing_tick")
    cron.register_tick("tests.jobs.test_jobs.counting_tick")
    try:
        job = enqueue("jobs.cron.tick", queue_name=DEFAULT)
        work(redis_conn, DEFAULT)
    finally:
        cron.unregister_tick("tests.jobs.test_jobs.failing_tick")
        cron.unregister_tick("tests.jobs.test_jobs.counting_tick")
    assert job.get_status(refresh=True) == "failed"
    assert redis_conn.get("test:ticks") == b"1"


def test_flask_jobs_worker_command_runs_jobs_with_the_app_context(app, app_config, redis_conn):
    """The real `flask jobs worker` (forking RQ worker) executes a queued job."""
    job = enqueue("jobs.cron.tick", queue_name=DEFAULT)
    subprocess.run([*FLASK, "jobs", "worker", "--burst"], cwd=PROJECT_ROOT, env=process_env(app_config),
                   check=True, timeout=120, capture_output=True)
    assert job.get_status(refresh=True) == "finished"
    assert redis_conn.get(cron.HEARTBEAT_KEY) is not None


def test_flask_jobs_cron_command_enqueues_the_tick(app, app_config, redis_conn):
    """The real `flask jobs cron` process enqueues the tick at once, then every 15 seconds."""
    process = subprocess.Popen([*FLASK, "jobs", "cron"], cwd=PROJECT_ROOT, env=process_env(app_config),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        default = Queue(DEFAULT, connection=redis_conn)
        for _ in range(300):
            if default.count:
                break
            time.sleep(0.1)
        assert [job.func_name for job in default.get_jobs()] == ["jobs.cron.tick"]
    finally:
        process.terminate()
        process.wait(timeout=20)
    work(redis_conn, DEFAULT)
    assert redis_conn.get(cron.HEARTBEAT_KEY) is not None


def test_flask_jobs_runner_command_serves_only_the_scripts_queue(app, app_config, redis_conn):
    """The real `flask jobs runner --burst` runs script tasks and leaves other queues alone."""
    script = Queue(SCRIPTS, connection=redis_conn).enqueue("jobs.tasks.run_script", args=("return {a: 1};", "{}"))
    other = enqueue("jobs.cron.tick", queue_name=DEFAULT)
    subprocess.run([*FLASK, "jobs", "runner", "--burst"], cwd=PROJECT_ROOT, env=process_env(app_config),
                   check=True, timeout=120, capture_output=True)
    assert script.latest_result().return_value == {"ok": True, "output": {"a": 1}}
    assert other.get_status(refresh=True) == "queued"
