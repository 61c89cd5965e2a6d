"""No submitted input, script source or script output reaches the runner's log.

A real script runner process (`python -m jobs.runner`) at DEBUG, its stdout and stderr captured to a
file, serves simulations and record submissions whose input and source carry a unique marker; the captured log
must not contain the marker anywhere.
"""
import subprocess
import time
import uuid

import pytest

from core.config import PROJECT_ROOT
from tests.conftest import RUNNER, process_env
from tests.support.studio import sample_definition

MARKER = f"mk{uuid.uuid4().hex}"


class CapturedRunner:
    """A runner process whose whole output goes to a file."""

    def __init__(self, app_config: dict, path):
        self.path = path
        self._out = open(path, "wb")
        self.process = subprocess.Popen([*RUNNER, "--log-level", "debug"], cwd=PROJECT_ROOT,
                                        env={**process_env(app_config), "PYTHONUNBUFFERED": "1"},
                                        stdout=self._out, stderr=subprocess.STDOUT)
        self.wait_for("Listening on")

    def text(self) -> str:
        return self.path.read_text(errors="replace")

    def served(self) -> int:
        """How many tasks it has finished (RQ's "Job OK" lines)."""
        return self.text().count("Job OK")

    def wait_for(self, needle: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text():
            assert self.process.poll() is None, self.text()
            assert time.monotonic() < deadline, self.text()
            time.sleep(0.1)

    def stop(self) -> str:
        self.process.terminate()
        self.process.wait(timeout=20)
        self._out.close()
        return self.text()


@pytest.fixture
def captured_runner(app_config, tmp_path):
    runner = CapturedRunner(app_config, tmp_path / "runner.log")
    yield runner
    if runner.process.poll() is None:
        runner.stop()


def _until_served_by(runner: CapturedRunner, request, times: int = 2) -> None:
    """Repeat the request until the captured runner (not another one) has served it `times` times."""
    for _ in range(40):
        before = runner.served()
        response = request()
        assert response.status_code in (200, 201), response.get_json()
        for _ in range(20):  # the log line follows the reply by a moment
            if runner.served() > before:
                times -= 1
                break
            time.sleep(0.05)
        if times == 0:
            return
    raise AssertionError("the captured runner served none of the requests")


def test_the_runner_logs_no_input_source_or_output(api, captured_runner):
    source = (f"const tag = 'source-{MARKER}';\n"
              "return {title: input.title + '/' + tag, priority: 'low'};")
    app_id = api.create(sample_definition(code={"language": "javascript", "source": source}))
    data = {"title": f"Ada Lovelace +44 20 7946 {MARKER}"}

    _until_served_by(captured_runner, lambda: api.simulate(app_id, data=data))
    assert api.publish(app_id, code_confirmed=True).status_code == 200
    _until_served_by(captured_runner, lambda: api.post(f"/{app_id}/records", {
        "version": 1, "input": data, "idempotency_key": str(uuid.uuid4())}))
    failing = api.create(sample_definition(code={"language": "javascript",
                                                 "source": f"throw new Error('{MARKER}');"}))
    before = captured_runner.served()
    for _ in range(40):  # a script error is a reply too, not a failed job
        assert api.simulate(failing, data=data).get_json()["error"]["code"] == "code_execution_failed"
        time.sleep(0.1)
        if captured_runner.served() > before:
            break

    log = captured_runner.stop()
    assert "Job OK" in log and "jobs.tasks.run_script" in log  # it did log the tasks it served
    assert MARKER not in log
    assert "Ada Lovelace" not in log and "20 7946" not in log  # hex ids in the log may hold 7946
