"""PostgreSQL's own faults, on the suite's own cluster: a row lock held too long, a job cut by its
timeout, a database that refuses writes as a failed-over old primary does, and a restart met by a
request on a pooled connection (no pre-ping: reads need no transaction, and a read runs again)."""
import subprocess
import threading

import psycopg
import pytest
from psycopg.pq import TransactionStatus
from sqlalchemy import event, text

from core.config import PROJECT_ROOT
from core.db import db
from core.queue import enqueue
from core.queue_names import DEFAULT
from desk.channels import create_channel
from desk.tenancy import add_member, create_tenant
from tests.conftest import FLASK, PASSWORD, build_app, login
from tests.faults.stores import host_env
from tests.support.faults import inbound


READ = "/api/extensions/capabilities"  # an authenticated read: the user and the seat, nothing else


@pytest.fixture
def channel(faults_context):
    tenant = create_tenant("Faults")
    found, secret = create_channel(tenant.id, "Chat")
    db.session.commit()
    return found.id, secret


@pytest.fixture
def admin_browser(fault_app, channel):
    """A browser logged in as an administrator of the channel's tenant."""
    add_member(create_tenant("Faults admin").id, "admin@faults.example", PASSWORD, "admin")
    db.session.commit()
    browser = fault_app.test_client()
    assert login(browser, "admin@faults.example").status_code == 302
    return browser


def test_a_request_waits_on_a_row_lock_no_longer_than_the_statement_timeout(fault_config, fault_stores, channel):
    postgres, _ = fault_stores
    impatient = build_app({**fault_config, "DB_STATEMENT_TIMEOUT_SECONDS": 1.5}).test_client()
    assert inbound(impatient, *channel, "m-1").status_code == 201
    with psycopg.connect(f"host=127.0.0.1 port={postgres.port} user=postgres dbname=faults") as holder:
        holder.execute("SELECT id FROM customer FOR UPDATE")  # held until this transaction ends
        # The lock is held until the request has answered, so only statement_timeout can end its
        # wait: without it the request never answers while the lock is held.
        answers = []
        request = threading.Thread(target=lambda: answers.append(inbound(impatient, *channel, "m-2")))
        request.start()
        request.join(timeout=30)
        assert answers, "the request still waits on the lock"
        (waited,) = answers
        assert waited.status_code == 503 and waited.get_json()["error"]["code"] == "service_unavailable"
        assert waited.headers["Retry-After"] == "5"
    assert inbound(impatient, *channel, "m-2").status_code == 201  # the sender's retry, lock gone
    assert db.session.scalar(text("SELECT count(*) FROM message WHERE external_id = 'm-2'")) == 1


def sleeping_statements(postgres) -> int:
    return int(postgres.sql("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                            "AND query LIKE 'SELECT pg_sleep(60)%'"))


def test_a_job_cut_by_its_timeout_leaves_no_statement_running_at_the_server(fault_config, fault_stores,
                                                                             faults_context, tmp_path):
    postgres, server = fault_stores
    cut = enqueue("tests.jobs.test_worker.time_out_inside_a_query", queue_name=DEFAULT, job_timeout=2)
    env = host_env("worker", tmp_path, postgres.url, server.url)
    worker = subprocess.run([*FLASK, "jobs", "worker", "--burst"], cwd=PROJECT_ROOT, env=env, timeout=60,
                            capture_output=True)
    assert worker.returncode == 0
    assert cut.get_status(refresh=True) == "failed"  # its own timeout: failed, never retried
    assert sleeping_statements(postgres) == 0


def backends(postgres) -> set[int]:
    """The server processes of the database's open connections (psql's own excepted)."""
    return {int(pid) for pid in postgres.sql(
        "SELECT pid FROM pg_stat_activity WHERE datname = 'faults' AND pid <> pg_backend_pid()").split()}


def backend_pid() -> int:
    """The server process of the connection the pool hands out next."""
    pid = db.session.scalar(text("SELECT pg_backend_pid()"))
    db.session.remove()
    return pid


def test_a_pool_on_a_database_refusing_writes_is_dropped_and_follows_it_when_it_takes_writes_again(
        fault_app, fault_stores, channel):
    postgres, _ = fault_stores
    client = fault_app.test_client()
    assert inbound(client, *channel, "m-1").status_code == 201
    backend_pid()
    pooled = backends(postgres)
    postgres.read_only(True)  # what a failed-over old primary does, and keeps doing
    refused = inbound(client, *channel, "m-2")
    assert refused.status_code == 503 and refused.get_json()["error"]["code"] == "service_unavailable"
    assert refused.headers["Retry-After"] == "5"
    assert backend_pid() not in pooled  # every pooled connection was dropped: the next one is new
    postgres.read_only(False)
    assert inbound(client, *channel, "m-2").status_code == 201  # at once: no restart, no wait
    assert db.session.scalar(text("SELECT count(*) FROM message WHERE external_id = 'm-2'")) == 1


def test_a_read_only_request_begins_no_transaction_and_a_write_begins_one_that_commits(fault_app, admin_browser,
                                                                                       channel):
    after_each = []

    def record(conn, cursor, *args):
        after_each.append(cursor.connection.info.transaction_status)

    event.listen(db.engine, "after_cursor_execute", record)
    try:
        assert admin_browser.get(READ).status_code == 200
        read, after_each[:] = list(after_each), []
        assert inbound(fault_app.test_client(), *channel, "m-1").status_code == 201
    finally:
        event.remove(db.engine, "after_cursor_execute", record)
    assert read and set(read) == {TransactionStatus.IDLE}  # no BEGIN sent, so no ROLLBACK either
    assert TransactionStatus.INTRANS in after_each
    assert db.session.scalar(text("SELECT count(*) FROM message WHERE external_id = 'm-1'")) == 1


def test_a_restart_costs_a_read_only_request_nothing_and_a_write_one_503(fault_app, fault_stores, admin_browser,
                                                                        channel):
    postgres, _ = fault_stores
    client = fault_app.test_client()
    assert admin_browser.get(READ).status_code == 200 and inbound(client, *channel, "m-1").status_code == 201
    db.session.remove()
    pooled = backends(postgres)
    postgres.ctl("restart")
    postgres.wait_ready()
    assert admin_browser.get(READ).status_code == 200  # met a dead connection, ran again on a new one
    assert not backends(postgres) & pooled
    assert admin_browser.get(READ).status_code == 200
    postgres.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'faults' "
                 "AND pid <> pg_backend_pid()")
    refused = inbound(client, *channel, "m-2")  # a write is never run twice: the client retries
    assert refused.status_code == 503 and refused.headers["Retry-After"] == "5"
    assert inbound(client, *channel, "m-2").status_code == 201
    assert db.session.scalar(text("SELECT count(*) FROM message WHERE external_id = 'm-2'")) == 1
