"""`flask jobs worker` runs jobs in its own process (no fork per job), still bounds each job by its
timeout, and gives every job a clean database session. Each test runs the real command in burst mode."""
import os
import subprocess
import time

from rq import Retry
from rq.registry import ScheduledJobRegistry
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.exc import DBAPIError

from core.config import PROJECT_ROOT
from core.db import db
from core.queue import enqueue
from core.queue_names import DEFAULT
from desk.models import Tenant
from desk.tenancy import create_tenant
from jobs.worker import OUTAGE_RETRY_INTERVALS
from tests.conftest import FLASK, free_port, process_env

HERE = "tests.jobs.test_worker"


def report_pid() -> int:
    """The process the job runs in."""
    return os.getpid()


def sleep_past_timeout() -> None:
    """Outlives any timeout these tests give it."""
    time.sleep(60)


def spoil_the_session() -> str:
    """Leave a flushed, uncommitted row and (on PostgreSQL) an aborted transaction behind."""
    create_tenant("Never committed")
    try:
        db.session.execute(text("SELECT no_such_column FROM tenant"))
    except DBAPIError:
        pass  # swallowed: the job itself succeeds
    return "spoilt"


def time_out_holding_a_row() -> None:
    """Flush a row, then outlive the timeout inside the open transaction."""
    create_tenant("Timed out")
    time.sleep(60)


# A statement that runs for seconds: PostgreSQL sleeps; SQLite counts (its C call returns before
# the timeout's signal is handled, so there the job fails right after the statement).
LONG_STATEMENT = {"postgresql": "SELECT pg_sleep(60)",
                  "sqlite": "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000000) "
                            "SELECT count(*) FROM n"}


def time_out_inside_a_query() -> None:
    """Outlive the timeout inside a statement the database is running."""
    db.session.execute(text(LONG_STATEMENT[db.engine.dialect.name]))


def reach_a_database_that_is_away() -> None:
    """Meet a real outage: a PostgreSQL that nothing serves (a closed loopback port)."""
    with create_engine(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/away").connect():
        pass


def fail_on_its_own() -> None:
    raise ValueError("a fault of the job itself")


def look() -> dict:
    """What a job finds in its session when it starts."""
    session = db.session()
    return {"in_transaction": session.in_transaction(), "objects": len(session.identity_map),
            "tenants": session.scalar(select(func.count()).select_from(Tenant))}


CLEAN = {"in_transaction": False, "objects": 0, "tenants": 0}


def run_worker(app_config) -> int:
    """Run `flask jobs worker --burst` until the queues are empty; its pid."""
    process = subprocess.Popen([*FLASK, "jobs", "worker", "--burst"], cwd=PROJECT_ROOT,
                               env=process_env(app_config), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    assert process.wait(timeout=120) == 0
    return process.pid


def test_a_worker_started_while_the_database_is_away_starts_all_the_same(app, app_config):
    env = {**process_env(app_config), "DATABASE_URL": "postgresql+psycopg://studio@127.0.0.1:1/none"}
    finished = subprocess.run([*FLASK, "jobs", "worker", "--burst"], cwd=PROJECT_ROOT, env=env, timeout=120,
                              capture_output=True, text=True)
    assert finished.returncode == 0, finished.stderr[-2000:]
    assert "the database is out of reach at start (OperationalError)" in finished.stderr


def test_the_worker_runs_every_job_in_its_own_process_and_fails_one_past_its_timeout(app, app_config):
    first = enqueue(f"{HERE}.report_pid", queue_name=DEFAULT)
    stuck = enqueue(f"{HERE}.sleep_past_timeout", queue_name=DEFAULT, job_timeout=1)
    after = enqueue(f"{HERE}.report_pid", queue_name=DEFAULT)
    pid = run_worker(app_config)
    assert first.return_value() == after.return_value() == pid  # no work horse was forked
    assert stuck.get_status(refresh=True) == "failed"
    assert "JobTimeoutException" in stuck.latest_result().exc_string


def test_each_job_starts_with_a_clean_session(app, app_config):
    jobs = [enqueue(f"{HERE}.spoil_the_session", queue_name=DEFAULT),
            enqueue(f"{HERE}.look", queue_name=DEFAULT),
            enqueue(f"{HERE}.time_out_holding_a_row", queue_name=DEFAULT, job_timeout=1),
            enqueue(f"{HERE}.look", queue_name=DEFAULT)]
    run_worker(app_config)
    assert [job.get_status(refresh=True) for job in jobs] == ["finished", "finished", "failed", "finished"]
    assert jobs[1].return_value() == CLEAN and jobs[3].return_value() == CLEAN
    assert db.session.scalar(select(func.count()).select_from(Tenant)) == 0  # nothing was committed


def test_a_query_cut_by_its_timeout_leaves_the_next_job_a_working_connection(app, app_config):
    cut = enqueue(f"{HERE}.time_out_inside_a_query", queue_name=DEFAULT, job_timeout=1)
    after = enqueue(f"{HERE}.look", queue_name=DEFAULT)
    run_worker(app_config)
    assert cut.get_status(refresh=True) == "failed"
    assert after.return_value() == CLEAN


def test_a_job_that_met_a_store_outage_is_tried_again_and_others_fail_or_keep_their_own_retry(app, app_config,
                                                                                              redis_conn):
    outage = enqueue(f"{HERE}.reach_a_database_that_is_away", queue_name=DEFAULT)
    own_fault = enqueue(f"{HERE}.fail_on_its_own", queue_name=DEFAULT)
    own_retry = enqueue(f"{HERE}.reach_a_database_that_is_away", queue_name=DEFAULT, retry=Retry(max=1, interval=[600]))
    run_worker(app_config)
    for job in (outage, own_fault, own_retry):
        job.refresh()
    assert outage.get_status() == "scheduled" and outage.retries_left == len(OUTAGE_RETRY_INTERVALS) - 1
    scheduled_at = ScheduledJobRegistry(DEFAULT, connection=redis_conn).get_scheduled_time(outage)
    assert abs((scheduled_at - outage.ended_at).total_seconds() - OUTAGE_RETRY_INTERVALS[0]) < 2
    assert own_fault.get_status() == "failed" and own_fault.retries_left is None
    assert own_retry.get_status() == "scheduled" and own_retry.retries_left == 0  # its own policy, not ours
    assert ScheduledJobRegistry(DEFAULT, connection=redis_conn).get_scheduled_time(own_retry) > scheduled_at


def _commands_per_job(redis_conn, worker) -> float:
    """Redis commands the worker sends per job, over 30 trivial jobs in burst mode."""
    for _ in range(30):
        enqueue(f"{HERE}.report_pid", queue_name=DEFAULT)
    before = int(redis_conn.info("stats")["total_commands_processed"])
    worker.work(burst=True)
    return (int(redis_conn.info("stats")["total_commands_processed"]) - before) / 30


def test_the_worker_keeps_rq_s_bookkeeping_lean(app, redis_conn):
    """RQ renews the worker's key three times a job and re-sends states it already stored; ours
    renews it at most every HEARTBEAT_EVERY seconds, in one round trip, and sends a state once:
    a third fewer Redis commands per job (this pins those overrides to RQ's own calls)."""
    from rq import Queue, SimpleWorker

    from jobs.worker import AppWorker

    queues = [Queue(DEFAULT, connection=redis_conn)]
    plain = _commands_per_job(redis_conn, SimpleWorker(queues, connection=redis_conn))
    lean = _commands_per_job(redis_conn, AppWorker(queues, connection=redis_conn, app=app))
    assert lean <= plain - 12, (plain, lean)
