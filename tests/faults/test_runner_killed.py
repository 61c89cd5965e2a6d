"""The script runner killed (`kill -9` of its process group, sandbox included) while it runs a
submission's script: the submission answers a code_* error and saves nothing, and once a runner
serves the queue again the next submission runs. On the suite's own Redis, so no other test's
runner takes the task."""
import os
import signal
import subprocess
import threading
import time
import uuid

from rq import Queue
from sqlalchemy import func, select

from core.config import PROJECT_ROOT
from core.db import db
from core.queue_names import SCRIPTS
from desk.tenancy import create_tenant
from studio.models import StudioRecord
from tests.conftest import RUNNER, login, seat
from tests.faults.stores import host_env
from tests.support.studio import ConsoleApi, sample_definition

SOURCE = "if (input.title === 'loop') { while (true) {} }\nreturn {title: input.title.toUpperCase()};"


def _runner(env: dict) -> subprocess.Popen:
    return subprocess.Popen(RUNNER, cwd=PROJECT_ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def test_a_runner_killed_mid_script_answers_a_code_error_saves_nothing_and_the_next_submission_runs(
        fault_app, fault_stores, faults_context, tmp_path):
    postgres, server = fault_stores
    tenant = create_tenant("Faults")
    email = seat(tenant, "admin").user.email
    db.session.commit()
    client = fault_app.test_client()
    login(client, email)
    api = ConsoleApi(client)
    env = host_env("runner", tmp_path, postgres.url, server.url)
    runner = _runner(env)
    try:
        app_id = api.create(sample_definition(code={"language": "javascript", "source": SOURCE}))
        assert api.simulate(app_id, data={"title": "sample"}).status_code == 200  # the runner serves
        assert api.publish(app_id, code_confirmed=True).status_code == 200
        answers = []
        submit = threading.Thread(target=lambda: answers.append(api.post(f"/{app_id}/records", {
            "version": 1, "input": {"title": "loop"}, "idempotency_key": str(uuid.uuid4())})))
        submit.start()
        started = Queue(SCRIPTS, connection=server.client()).started_job_registry
        deadline = time.monotonic() + 10
        while not started.get_job_ids():
            assert time.monotonic() < deadline, "the runner never started the script"
            time.sleep(0.02)
        os.killpg(runner.pid, signal.SIGKILL)  # the runner and its sandbox
        runner.wait(timeout=10)
        submit.join(timeout=30)
    finally:
        if runner.poll() is None:
            runner.kill()
    answer = answers[0]
    assert answer.status_code in (422, 503) and answer.get_json()["error"]["code"].startswith("code_"), \
        answer.get_json()
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 0
    runner = _runner(env)  # the supervisor starts it again
    try:
        deadline = time.monotonic() + 30
        while True:  # a client honouring Retry-After
            after = api.post(f"/{app_id}/records", {"version": 1, "input": {"title": "after"},
                                                   "idempotency_key": str(uuid.uuid4())})
            if after.status_code != 503:
                break
            assert time.monotonic() < deadline, after.get_json()
            time.sleep(int(after.headers.get("Retry-After", "1")))
        assert after.status_code == 200, after.get_json()
        assert after.get_json()["data"]["data"] == {"title": "AFTER"}
    finally:
        runner.terminate()
        runner.wait(timeout=20)
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 1
