"""A polite stop (SIGTERM, what a supervisor or a rolling restart sends) loses nothing: a web
process finishes the request in flight, a worker finishes the job it runs, and both exit 0."""
import threading
import time

import psycopg
import requests
from rq import Queue
from sqlalchemy import text

from core.db import db
from core.queue_names import DEFAULT
from desk.channels import create_channel
from desk.tenancy import create_tenant
from tests.faults.stores import Host, host_env
from tests.support.faults import inbound


class _Client:
    """`inbound` through HTTP to a real web process, with the test client's call shape."""

    def __init__(self, base: str):
        self.base = base

    def post(self, path: str, data: bytes, content_type: str, headers: dict):
        return requests.post(f"{self.base}{path}", data=data, timeout=60,
                             headers={**headers, "Content-Type": content_type})


def test_a_web_process_stopped_mid_request_finishes_it_and_exits_0(fault_stores, faults_context, tmp_path):
    postgres, server = fault_stores
    channel, secret = create_channel(create_tenant("Faults").id, "Chat")
    db.session.commit()
    channel_id = channel.id
    db.session.remove()
    host = Host("host", tmp_path, host_env("host", tmp_path, postgres.url, server.url))
    host.start("web")
    client = _Client(host.base)
    try:
        assert inbound(client, channel_id, secret, "m-1").status_code == 201
        answers = []
        with psycopg.connect(f"host=127.0.0.1 port={postgres.port} user=postgres dbname=faults") as holder:
            holder.execute("SELECT id FROM customer FOR UPDATE")  # the next message waits on it
            request = threading.Thread(target=lambda: answers.append(inbound(client, channel_id, secret, "m-2")))
            request.start()
            time.sleep(1)  # the request is in flight, waiting on the lock
            host.processes["web"].terminate()
            time.sleep(1)
            assert host.processes["web"].poll() is None  # still finishing it
        request.join(timeout=30)  # the lock is gone: the request completes
        assert host.processes["web"].wait(timeout=30) == 0
    finally:
        host.stop_all()
    assert [answer.status_code for answer in answers] == [201]
    assert db.session.scalar(text("SELECT count(*) FROM message WHERE external_id = 'm-2'")) == 1


def test_a_worker_stopped_mid_job_finishes_it_and_exits_0(fault_stores, faults_context, tmp_path):
    postgres, server = fault_stores
    host = Host("host", tmp_path, host_env("host", tmp_path, postgres.url, server.url))
    worker = host.start("worker-1")
    try:
        job = Queue(DEFAULT, connection=server.client()).enqueue("time.sleep", args=(3,))
        deadline = time.monotonic() + 30
        while job.get_status(refresh=True) != "started":
            assert time.monotonic() < deadline, "the worker never started the job"
            time.sleep(0.05)
        worker.terminate()
        assert worker.wait(timeout=30) == 0
    finally:
        host.stop_all()
    assert job.get_status(refresh=True) == "finished"
