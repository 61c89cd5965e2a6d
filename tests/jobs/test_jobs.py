"""Jobs run through a real RQ SimpleWorker in burst mode against the test Redis."""
import os
import subprocess
import time
from datetime import timedelta

import pytest
from rq import Queue
from rq.registry import ScheduledJobRegistry

from core.config import PROJECT_ROOT
from core.queue import enqueue
from core.queue_names import ALL_QUEUES, DEFAULT, EVENTS, SCRIPTS
from core.redis import get_redis
from desk import events
from jobs import cron, wiring
from tests.conftest import CLOCK, FLASK, RUNNER, process_env
from tests.support.jobs import work

SEEN = "test:events:seen"
RECORD_EVENT = "tests.jobs.test_jobs.record_event"
FAILING_SUBSCRIBER = "tests.jobs.test_jobs.failing_subscriber"
FLAKY_SUBSCRIBER = "tests.jobs.test_jobs.flaky_subscriber"


def record_event(**ids: str) -> None:
    """A subscriber that remembers what it was given."""
    get_redis().rpush(SEEN, ",".join(f"{k}={v}" for k, v in sorted(ids.items())))


def failing_subscriber(**ids: str) -> None:
    """A subscriber that counts its runs and always fails."""
    get_redis().incr("test:failing")
    raise RuntimeError("boom")


def flaky_subscriber(**ids: str) -> None:
    """A subscriber that fails on its first run only."""
    if get_redis().incr("test:flaky") == 1:
        raise RuntimeError("once")


def failing_tick() -> None:
    """A tick handler that fails."""
    raise RuntimeError("boom")


def counting_tick() -> None:
    """A tick handler that counts its runs."""
    get_redis().incr("test:ticks")


def subscribe(app, monkeypatch, *paths: str) -> None:
    """Add subscribers to message_received for this test only (the app's config, not the list)."""
    monkeypatch.setitem(app.config, "EXTRA_EVENT_SUBSCRIBERS", {events.MESSAGE_RECEIVED: paths})


def on_tick(app, monkeypatch, *paths: str) -> None:
    """Add tick handlers for this test only."""
    monkeypatch.setitem(app.config, "EXTRA_TICK_HANDLERS", paths)


@pytest.fixture
def subscribed(app, monkeypatch):
    subscribe(app, monkeypatch, RECORD_EVENT)


def test_message_received_event_reaches_subscribers_through_a_worker(app, redis_conn, subscribed):
    events.emit_message_received("t-1", "c-1", "m-1")
    work(app, redis_conn, EVENTS)
    assert redis_conn.lrange(SEEN, 0, -1) == [b"conversation_id=c-1,message_id=m-1,tenant_id=t-1"]


def test_the_same_event_queued_twice_runs_once(app, redis_conn, subscribed):
    events.emit_message_received("t-1", "c-1", "m-1")
    events.emit_message_received("t-1", "c-1", "m-1")
    assert Queue(EVENTS, connection=redis_conn).count == 2  # one job per subscriber, not per emission
    work(app, redis_conn, EVENTS)
    assert redis_conn.llen(SEEN) == 1


def test_a_job_id_collapses_only_a_pending_twin_and_a_finished_one_is_queued_again(app, redis_conn):
    first = enqueue("jobs.tasks.notify_subscriber", "message_received", RECORD_EVENT, queue_name=EVENTS,
                    job_id="collapse-test", tenant_id="t-1", conversation_id="c-1", message_id="m-1")
    twin = enqueue("jobs.tasks.notify_subscriber", "message_received", RECORD_EVENT, queue_name=EVENTS,
                   job_id="collapse-test", tenant_id="t-1", conversation_id="c-1", message_id="m-1")
    assert twin.id == first.id and Queue(EVENTS, connection=redis_conn).count == 1
    work(app, redis_conn, EVENTS)
    assert first.get_status(refresh=True) == "finished"
    enqueue("jobs.tasks.notify_subscriber", "message_received", RECORD_EVENT, queue_name=EVENTS,
            job_id="collapse-test", tenant_id="t-1", conversation_id="c-1", message_id="m-1")
    assert Queue(EVENTS, connection=redis_conn).job_ids == ["collapse-test"]


def test_an_event_without_subscribers_queues_nothing(app, redis_conn, monkeypatch):
    monkeypatch.setitem(wiring.EVENT_SUBSCRIBERS, events.MESSAGE_RECEIVED, ())
    assert events.emit_message_received("t-1", "c-1", "m-2") == 0
    assert Queue(EVENTS, connection=redis_conn).count == 0


def test_each_subscriber_runs_in_a_job_of_its_own_named_by_message_and_subscriber(app, redis_conn, monkeypatch):
    subscribe(app, monkeypatch, RECORD_EVENT, FLAKY_SUBSCRIBER)
    assert events.emit_message_received("t-1", "c-1", "m-1") == 3
    queued = Queue(EVENTS, connection=redis_conn).get_jobs()  # queued by the emitter: one hop
    # The production subscriber (jobs.wiring) comes first, then the test's, each in its own job.
    assert [(job.id, job.func_name, job.args) for job in queued] == [
        (f"event-message_received-m-1-{path.replace('.', '-')}", "jobs.tasks.notify_subscriber",
         ("message_received", path))
        for path in ("rules.message_events.on_message_received", RECORD_EVENT, FLAKY_SUBSCRIBER)]
    assert all(job.kwargs == {"tenant_id": "t-1", "conversation_id": "c-1", "message_id": "m-1"} for job in queued)


def test_a_failing_subscriber_is_retried_alone(app, redis_conn, monkeypatch):
    monkeypatch.setattr(events, "RETRY_INTERVALS", (0, 0))  # retry at once, within the burst
    subscribe(app, monkeypatch, RECORD_EVENT, FAILING_SUBSCRIBER, FLAKY_SUBSCRIBER)
    events.emit_message_received("t-1", "c-1", "m-1")
    work(app, redis_conn, EVENTS)
    assert redis_conn.llen(SEEN) == 1  # never re-run by another subscriber's failure
    assert redis_conn.get("test:failing") == b"3"  # its first run and both retries
    assert redis_conn.get("test:flaky") == b"2"  # failed once, then succeeded on its retry
    job = Queue(EVENTS, connection=redis_conn).fetch_job(
        "event-message_received-m-1-tests-jobs-test_jobs-failing_subscriber")
    assert job.get_status(refresh=True) == "failed"


def test_a_dispatch_job_queued_before_the_upgrade_still_reaches_subscribers(app, redis_conn, subscribed):
    """`jobs.tasks.dispatch_event` is a wire format: a job the previous release queued runs unchanged."""
    Queue(EVENTS, connection=redis_conn).enqueue(
        "jobs.tasks.dispatch_event", args=("message_received",), job_id="event-message_received-m-9",
        kwargs={"tenant_id": "t-1", "conversation_id": "c-1", "message_id": "m-9"})
    work(app, redis_conn, EVENTS)
    assert redis_conn.lrange(SEEN, 0, -1) == [b"conversation_id=c-1,message_id=m-9,tenant_id=t-1"]


def test_a_subscriber_no_longer_listed_is_skipped(app, redis_conn):
    job = enqueue("jobs.tasks.notify_subscriber", "message_received", RECORD_EVENT, queue_name=EVENTS,
                  tenant_id="t-1", conversation_id="c-1", message_id="m-1")
    work(app, redis_conn, EVENTS)
    assert job.get_status(refresh=True) == "finished" and job.return_value() is False
    assert redis_conn.llen(SEEN) == 0


def test_tick_records_a_heartbeat_and_runs_listed_handlers(app, redis_conn, monkeypatch):
    on_tick(app, monkeypatch, "tests.jobs.test_jobs.counting_tick")
    job = enqueue("jobs.cron.tick", queue_name=DEFAULT)
    work(app, redis_conn, DEFAULT)
    assert job.get_status(refresh=True) == "finished"
    assert redis_conn.get("test:ticks") == b"1"
    assert redis_conn.get(cron.HEARTBEAT_KEY) is not None


def test_a_failing_tick_handler_fails_the_job_but_others_still_run(app, redis_conn, monkeypatch):
    on_tick(app, monkeypatch, "tests.jobs.test_jobs.failing_tick", "tests.jobs.test_jobs.counting_tick")
    job = enqueue("jobs.cron.tick", queue_name=DEFAULT)
    work(app, redis_conn, DEFAULT)
    assert job.get_status(refresh=True) == "failed"
    assert redis_conn.get("test:ticks") == b"1"


def test_flask_jobs_worker_command_runs_jobs_with_the_app_context(app, app_config, redis_conn):
    """The real `flask jobs worker` executes a queued job."""
    job = enqueue("jobs.cron.tick", queue_name=DEFAULT)
    subprocess.run([*FLASK, "jobs", "worker", "--burst"], cwd=PROJECT_ROOT, env=process_env(app_config),
                   check=True, timeout=120, capture_output=True)
    assert job.get_status(refresh=True) == "finished"
    assert redis_conn.get(cron.HEARTBEAT_KEY) is not None


def test_the_clock_process_enqueues_the_tick(app, app_config, redis_conn):
    """The real clock process (`python -m jobs.clock`) enqueues the tick at once, then every 15 seconds."""
    process = subprocess.Popen(CLOCK, cwd=PROJECT_ROOT, env=process_env(app_config),
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
    work(app, redis_conn, DEFAULT)
    assert redis_conn.get(cron.HEARTBEAT_KEY) is not None


def test_the_clock_moves_the_due_delayed_jobs_of_every_queue(app, app_config, redis_conn):
    """Retries and `enqueue_in` wait in RQ's scheduled registries; the clock (no worker runs a
    scheduler) moves each into its queue once due."""
    delayed = [Queue(name, connection=redis_conn).enqueue_in(timedelta(seconds=1), "jobs.cron.tick")
               for name in ALL_QUEUES]
    assert {job.get_status() for job in delayed} == {"scheduled"}
    process = subprocess.Popen(CLOCK, cwd=PROJECT_ROOT, env={**os.environ, "REDIS_URL": app_config["REDIS_URL"]},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if not any(job.get_status(refresh=True) == "scheduled" for job in delayed):
                break
            time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(timeout=20)
    # In its queue now (a session's runner may already have taken the one on `scripts`).
    for job in delayed:
        job.refresh()
    assert all(job.get_status() != "scheduled" and job.enqueued_at is not None for job in delayed)
    assert [ScheduledJobRegistry(name, connection=redis_conn).count for name in ALL_QUEUES] == [0] * len(ALL_QUEUES)


def test_the_runner_process_serves_only_the_scripts_queue(app, app_config, redis_conn):
    """The real `python -m jobs.runner --burst` runs script tasks and leaves other queues alone."""
    script = Queue(SCRIPTS, connection=redis_conn).enqueue("jobs.tasks.run_script", args=("return {a: 1};", "{}"))
    other = enqueue("jobs.cron.tick", queue_name=DEFAULT)
    subprocess.run([*RUNNER, "--burst"], cwd=PROJECT_ROOT, env={**os.environ, "REDIS_URL": app_config["REDIS_URL"]},
                   check=True, timeout=120, capture_output=True)
    assert script.latest_result().return_value == {"ok": True, "output": {"a": 1}}
    assert other.get_status(refresh=True) == "queued"
