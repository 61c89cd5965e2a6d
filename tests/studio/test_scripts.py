"""Restricted JavaScript: the sandbox contains hostile scripts; the product wires it in safely."""
import json
import os
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select

from core.db import db
from core.redis import get_redis
from core.queue import queue
from core.queue_names import SCRIPTS
from studio.models import StudioRecord
from core.api import ApiError
from core.config import PROJECT_ROOT
from studio.scripting import sandbox as sandbox_module
from studio.catalog import LIMITS
from studio.scripting.runner import SANDBOX, Sandbox
from studio.scripting.sandbox import NOBODY
from studio.scripting.client import TASK_SECONDS, run_code
from tests.conftest import LONG_WINDOW
from tests.support.scripts import CODE_DEFINITION, JOIN, REGEX, TOTAL, script_executions
from tests.support.studio import ConsoleApi, sample_definition


@pytest.fixture(scope="module")
def box():
    """One sandbox process for the module, as the runner holds one."""
    sandbox = Sandbox()
    yield sandbox
    sandbox.close()


def run(box, source: str, data: dict | None = None) -> dict:
    return box.execute(source, json.dumps(data or {}))


# --- the engine and its isolation --------------------------------------------------------------

def test_es2020_syntax_computes_a_total_and_a_label(box):
    reply = run(box, TOTAL, {"title": "order", "amount": 120})
    assert reply == {"ok": True, "output": {"title": "ORDER (big)", "amount": 240, "priority": "low"}}


@pytest.mark.parametrize("source,code", [
    ("while (true) {}", "code_timeout"),
    ("for (;;) { Math.random(); }", "code_timeout"),
    ("const a = []; while (true) a.push(new Array(100000).fill(1));", "code_resource_limit"),
    ("let s = 'x'; while (true) s += s;", "code_resource_limit"),
    ("const b = []; while (true) b.push(new Float64Array(1 << 20));", "code_resource_limit"),
    ("function f(n) { return f(n + 1) + 1; } return {n: f(0)};", "code_resource_limit"),
    ("return {big: 'x'.repeat(40 * 1024)};", "code_invalid_output"),
    ("return {f: () => 1};", "code_invalid_output"),
    ("return {u: undefined};", "code_invalid_output"),
    ("return {nested: {a: 1}};", "code_invalid_output"),
    ("return [1, 2];", "code_invalid_output"),
    ("return 5;", "code_invalid_output"),
    ("return undefined;", "code_invalid_output"),
    ("return {n: NaN};", "code_invalid_output"),
    ("return new Promise(() => {});", "code_invalid_output"),
    ("return import('os');", "code_invalid_output"),
    ("import os from 'os'; return {};", "code_execution_failed"),
    ("throw 42;", "code_execution_failed"),
    ("throw {not: 'an error'};", "code_execution_failed"),
    ("throw null;", "code_execution_failed"),
    ("return require('fs');", "code_execution_failed"),
    ("return {e: process.env.SECRET_KEY};", "code_execution_failed"),
    ("setTimeout(() => 1, 0); return {};", "code_execution_failed"),
    ("return fetch('https://example.com');", "code_execution_failed"),
    ("return {x: std.getenv('HOME')};", "code_execution_failed"),
    ("return {x: os.open('/etc/passwd')};", "code_execution_failed"),
    ("return {x: __date_clock()};", "code_execution_failed"),
    ("const x = ;", "code_execution_failed"),
])
def test_hostile_scripts_are_contained_with_the_right_code(box, source, code):
    reply = run(box, source)
    assert reply["ok"] is False and reply["code"] == code
    assert run(box, "return {still: 'serving'};") == {"ok": True, "output": {"still": "serving"}}


def _children(pid: int) -> list[str]:
    with open(f"/proc/{pid}/task/{pid}/children") as children:
        return children.read().split()


@pytest.mark.parametrize("source", [REGEX, JOIN], ids=["regex", "join"])
def test_native_code_past_the_time_limit_is_killed(box, source):
    reply = run(box, source)
    assert reply["ok"] is False and reply["code"] == "code_timeout"
    assert _children(box.process().pid) == []  # the child was killed and reaped
    assert run(box, "return {still: 'serving'};") == {"ok": True, "output": {"still": "serving"}}


def test_the_sandbox_enforces_the_catalog_limits():
    """The sandbox imports nothing of the project, so its copies of the limits are pinned here."""
    assert sandbox_module.RUN_SECONDS * 1000 == LIMITS["script_execution_ms"]
    assert sandbox_module.HEAP_BYTES == LIMITS["script_heap_bytes"]
    assert sandbox_module.OUTPUT_BYTES == LIMITS["script_output_bytes"]
    # Wall clock: the run limit plus a small margin for the fork and the fresh context, so native
    # code the interrupt cannot stop ends at about the same time as a plain endless loop.
    wall = sandbox_module.CHILD_WALL_SECONDS
    assert sandbox_module.RUN_SECONDS < wall <= sandbox_module.RUN_SECONDS + 0.1
    assert sandbox_module.CHILD_CPU_SECONDS >= wall  # the CPU limit is only a backstop
    assert 2 * wall < TASK_SECONDS  # two runaway tasks ahead still leave a request inside its bound


def test_only_ecmascript_built_ins_are_visible(box):
    reply = run(box, "return {names: Object.getOwnPropertyNames(globalThis).sort().join(',')};")
    names = set(reply["output"]["names"].split(","))
    assert {"require", "process", "fetch", "setTimeout", "std", "os", "__date_clock", "print"} & names == set()
    assert {"JSON", "Math", "Object", "Array", "Promise"} <= names
    assert run(box, "return {x: typeof __source + typeof __input};")["output"] == {"x": "undefinedundefined"}


def test_prototype_pollution_does_not_leak_into_the_next_execution(box):
    run(box, "Object.prototype.polluted = 'yes'; Array.prototype.push = null; return {};")
    assert run(box, "return {p: ({}).polluted ?? 'clean', push: typeof [].push};")["output"] == \
        {"p": "clean", "push": "function"}


def test_globals_do_not_survive_between_executions(box):
    run(box, "globalThis.leak = 1; return {};")
    assert run(box, "return {leak: typeof leak};")["output"] == {"leak": "undefined"}


def test_errors_name_the_script_line(box):
    reply = run(box, "const a = 1;\nconst b = 2;\nnull.boom;")
    assert reply["code"] == "code_execution_failed" and reply["line"] == 3
    assert "null" in reply["message"]
    assert run(box, "const a = 1;\nconst b = ;")["line"] == 2


def test_the_sandbox_process_has_no_environment_and_no_project_files(box, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", "parent-secret")
    sandbox = Sandbox()
    try:
        pid = sandbox.process().pid
        assert run(sandbox, "return {};")["ok"]  # it has locked itself in by now
        with open(f"/proc/{pid}/environ", "rb") as environ:
            assert environ.read() == b""
        assert os.readlink(f"/proc/{pid}/root") == sandbox._root
        assert os.listdir(sandbox._root) == []
        assert os.stat(f"/proc/{pid}").st_uid == NOBODY
    finally:
        sandbox.close()


PROBE = """
import os, sys
sys.path.insert(0, sys.argv[1])
import sandbox
sandbox.lock_down(sys.argv[2])
try:
    open(sys.argv[3]).read()
    print("opened")
except OSError:
    print("refused")
print(os.listdir("/"), os.getuid())
"""


def test_a_locked_down_process_cannot_open_project_files(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    project_file = PROJECT_ROOT / "wsgi.py"
    assert project_file.read_text()  # readable from here
    done = subprocess.run([sys.executable, "-I", "-c", PROBE, str(SANDBOX.parent), str(root),
                           str(project_file)], env={}, capture_output=True,
                          text=True, timeout=30)
    assert done.stdout.split("\n")[:2] == ["refused", f"[] {NOBODY}"], done.stderr


def test_a_killed_sandbox_is_restarted_for_the_next_task(box):
    dead = box.process()
    dead.kill()
    dead.wait()
    assert run(box, "return {ok: true};") == {"ok": True, "output": {"ok": True}}


# --- in the product (through the real runner process) -----------------------------------------

def _live_code_app(api) -> str:
    app_id = api.create(CODE_DEFINITION)
    assert api.simulate(app_id, data={"title": "sample"}).status_code == 200
    assert api.publish(app_id, code_confirmed=True).status_code == 200
    return app_id


def _record(api, app_id: str, data: dict, key: str | None = None):
    return api.post(f"/{app_id}/records", {"version": 1, "input": data, "idempotency_key": key or str(uuid.uuid4())})


def test_simulation_shows_the_script_result(api, runner):
    app_id = api.create(CODE_DEFINITION)
    response = api.simulate(app_id, data={"title": "parcel", "amount": 150})
    assert response.status_code == 200
    assert response.get_json()["data"]["data"] == {"title": "PARCEL (big)", "amount": 300, "priority": "high"}


def test_a_record_is_saved_after_the_script(api, runner):
    app_id = _live_code_app(api)
    response = _record(api, app_id, {"title": "box", "amount": 5})
    assert response.status_code == 200
    assert response.get_json()["data"]["data"] == {"title": "BOX (small)", "amount": 10, "priority": "low"}
    assert db.session.scalar(select(StudioRecord.data)) == {"title": "BOX (small)", "amount": 10, "priority": "low"}


@pytest.mark.parametrize("source,code,status", [
    ("while (true) {}", "code_timeout", 422),
    ("const a = []; while (true) a.push(new Array(100000).fill(1));", "code_resource_limit", 422),
    ("throw new Error('nope');", "code_execution_failed", 422),
    ("return {undeclared: 1};", "code_invalid_output", 422),
    ("return {amount: 'not a number'};", "code_invalid_output", 422),
    ("return {title: null};", "code_invalid_output", 422),
    ("return {title: 'x'.repeat(201)};", "code_invalid_output", 422),
])
def test_a_failing_script_saves_no_record(api, runner, source, code, status):
    app_id = api.create(sample_definition(code={"language": "javascript", "source": source}))
    response = api.simulate(app_id, data={"title": "t"})
    assert response.status_code == status and response.get_json()["error"]["code"] == code
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 0


def test_input_over_32_kib_is_refused_before_the_runner(tenant):
    definition = sample_definition(code={"language": "javascript", "source": "return {};"})
    with pytest.raises(ApiError) as refused:
        run_code(tenant.id, definition, {"title": "\u4e00" * 11_000})
    assert (refused.value.code, refused.value.detail) == ("code_resource_limit", "input")
    assert get_redis().keys("limit:fw:scripts:*") == []  # nothing was counted or queued


def test_script_error_names_the_line(api, runner):
    app_id = api.create(sample_definition(code={"language": "javascript", "source": "const a = 1;\nnull.x;"}))
    error = api.simulate(app_id, data={"title": "t"}).get_json()["error"]
    assert error["detail"] == "code.source" and error["line"] == 2 and "null" in error["message"]


def test_a_replayed_key_does_not_rerun_the_script(api, runner, tenant):
    app_id = _live_code_app(api)
    key = str(uuid.uuid4())
    first = _record(api, app_id, {"title": "once"}, key)
    executions = script_executions(tenant)
    again = _record(api, app_id, {"title": "once"}, key)
    assert again.get_json()["data"] == {"record_id": first.get_json()["data"]["record_id"], "replayed": True}
    assert script_executions(tenant) == executions


def test_thirty_executions_per_minute_then_rate_limited(api, runner, rate_window):
    working = api.create(CODE_DEFINITION)
    failing = api.create(sample_definition(code={"language": "javascript", "source": "null.boom;"}))
    rate_window()
    statuses = [api.simulate(app_id, data={"title": "a"}).status_code for app_id in (working, failing) * 15]
    assert statuses == [200, 422] * 15  # both applications count against their tenant's thirty
    response = api.simulate(working, data={"title": "a"})
    assert response.status_code == 429 and response.get_json()["error"]["code"] == "code_rate_limited"
    assert 0 < int(response.headers["Retry-After"]) <= LONG_WINDOW


def test_requests_behind_a_busy_runner_get_runner_busy_and_the_runner_recovers(api, runner, app):
    app_id = api.create(CODE_DEFINITION)
    # About three seconds of work ahead of the web requests: more than their 2-second bound.
    backlog = [queue(SCRIPTS).enqueue("jobs.tasks.run_script", args=("while (true) {}", "{}"))
               for _ in range(6)]
    cookie = api.client.get_cookie("session").value

    def simulate(_):
        browser = app.test_client()
        browser.set_cookie("session", cookie)
        return ConsoleApi(browser).simulate(app_id, data={"title": "t"})

    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(simulate, range(2)))
    assert [(r.status_code, r.get_json()["error"]["code"]) for r in responses] == [(503, "code_runner_busy")] * 2
    assert all(r.headers["Retry-After"] == "1" for r in responses)
    for _ in range(100):
        if all(job.get_status(refresh=True) == "finished" for job in backlog):
            break
        time.sleep(0.1)
    assert simulate(None).status_code == 200  # the runner serves the next task afterwards


@pytest.mark.parametrize("source", [
    "const o = {}; Object.defineProperty(o, 'toJSON', {value: () => 5}); return o;",
    "const o = {}; Object.defineProperty(o, 'toJSON', {value: () => null}); return o;",
    "let n = 0; return {get a() { n += 1; return n > 1 ? {deep: 1} : 1; }};",
])
def test_output_that_changes_while_it_is_serialized_is_invalid(box, source):
    reply = run(box, source)
    assert reply["ok"] is False and reply["code"] == "code_invalid_output"
