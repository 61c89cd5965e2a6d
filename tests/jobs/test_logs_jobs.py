"""The worker's log names jobs neutrally and carries no submitted data, token or secret.

A real `flask jobs worker --burst` process at DEBUG, its stdout and stderr captured to a file,
runs an event job and webhook deliveries (one failing, so RQ's failure path logs too) for a record
whose data carries a unique marker.
"""
import json
import logging
import subprocess
import uuid

from rq import Queue, SimpleWorker

from core.config import PROJECT_ROOT
from core.db import db
from core.queue import enqueue
from core.queue_names import DEFAULT
from desk import events
from jobs.logs import keep_payloads_out_of_logs
from openapi.apps import create_app
from tests.conftest import FLASK, process_env

MARKER = f"mk{uuid.uuid4().hex}"


def test_the_worker_logs_neutral_descriptions_and_no_payload(app, app_config, tenant, admin, receiver,
                                                             tmp_path):
    made = create_app(tenant.id, admin.user_id, "Partner CRM", ["app.records.write"], receiver.url("localhost"),
                      processing_confirmed=True, confirmed_scopes=())
    db.session.commit()
    client = app.test_client()
    receiver.answers.append((500, {}, b"", 0))  # the first delivery fails: RQ logs the failure
    for _ in range(2):
        response = client.post("/api/v1/open/records", content_type="application/json",
                                data=json.dumps({"data": {"name": f"Ada {MARKER}", "phone": "+44 20 7946 0999"}}),
                                headers={"Authorization": f"Bearer {made.token}",
                                         "Idempotency-Key": str(uuid.uuid4())})
        assert response.status_code == 201, response.get_json()
    events.emit_message_received(tenant.id, uuid.uuid4(), uuid.uuid4())

    log_path = tmp_path / "worker.log"
    env = {**process_env(app_config), "PYTHONUNBUFFERED": "1", "EGRESS_ALLOW_CIDRS": "127.0.0.0/8",
           "EGRESS_PORT": str(receiver.port), "EGRESS_CA_BUNDLE": app.config["EGRESS_CA_BUNDLE"]}
    with open(log_path, "wb") as out:
        subprocess.run([*FLASK, "jobs", "worker", "--burst", "--log-level", "debug"], cwd=PROJECT_ROOT,
                       env=env, stdout=out, stderr=subprocess.STDOUT, check=True, timeout=120)
    log = log_path.read_text(errors="replace")

    assert len(receiver.received) == 2  # both deliveries ran in this worker
    assert "jobs.tasks.deliver_webhook" in log and "jobs.tasks.notify_subscriber" in log
    assert "exception raised while executing" in log  # the failing attempt was logged
    # Descriptions are the import path alone, never a call string with arguments.
    assert "deliver_webhook(" not in log and "notify_subscriber(" not in log
    assert MARKER not in log and "7946 0999" not in log  # the phone as sent (a worker's hex name may hold 7946)
    assert made.token not in log and made.signing_secret not in log


def failing_job(_value: str) -> None:
    """A job that fails (its argument is the marker)."""
    raise RuntimeError("boom")


def test_a_failed_jobs_log_records_carry_no_arguments(app, redis_conn):
    """RQ attaches a failed job's arguments to its log record as `extra`; they are blanked."""
    keep_payloads_out_of_logs()
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("rq.worker")
    logger.addHandler(handler)
    try:
        job = enqueue("tests.jobs.test_logs_jobs.failing_job", MARKER, queue_name=DEFAULT)
        SimpleWorker([Queue(DEFAULT, connection=redis_conn)], connection=redis_conn).work(burst=True)
    finally:
        logger.removeHandler(handler)
    assert job.get_status(refresh=True) == "failed"
    assert any("exception raised while executing" in record.getMessage() for record in records)
    assert all(MARKER not in repr(vars(record)) for record in records)
