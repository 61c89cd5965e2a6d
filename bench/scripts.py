"""Restricted scripts: the cost of a script on a record submission, and raw engine speed.

Run: .venv/bin/python -m bench.scripts
Targets (issue 4): a submission with a small script <= 4 x the same submission without code;
raw engine executions with a fresh context >= 1,000/s on one core.
It starts a real script runner process (`python -m jobs.runner`) on the bench Redis, as `make run` does.
"""
import json
import logging
import os
import subprocess
import sys
import time
import uuid

from bench.common import bench_app, logged_in, median_seconds, rate, target
from core.api import ApiError
from core.config import PROJECT_ROOT
from core.db import db
from desk.tenancy import add_member, create_tenant
from studio.apps import create_app, get_app, publish, simulate
from studio.catalog import PUBLISH_PERMISSIONS
from studio.scripting.runner import Sandbox
from studio.scripting.sandbox import evaluate
from studio.scripting.client import _hand_to_runner

SOURCE = ("const {amount = 0, quantity = 1} = input;\n"
          "const total = amount * quantity;\n"
          "return {total, label: `${input.title} (${total > 100 ? 'big' : 'small'})`};")
FIELDS = [{"key": "title", "label": "Title", "type": "text", "required": True},
          {"key": "amount", "label": "Amount", "type": "number", "required": False},
          {"key": "quantity", "label": "Quantity", "type": "number", "required": False},
          {"key": "total", "label": "Total", "type": "number", "required": False},
          {"key": "label", "label": "Label", "type": "text", "required": False}]
PLAIN = {"schema_version": 1, "name": "Plain", "description": "No code.",
         "page": {"title": "Order", "description": "An order.", "columns": 1, "submit_label": "Save"},
         "fields": FIELDS, "table_columns": ["title", "total"],
         "workflow": {"trigger": "form.submitted", "rules": []}}
WITH_CODE = {**PLAIN, "name": "With code", "code": {"language": "javascript", "source": SOURCE}}
SAMPLE = {"title": "Parcel", "amount": 12.5, "quantity": 3}
EMAIL, PASSWORD = "bench@bench.example", "bench-password"


def start_runner(app) -> subprocess.Popen:
    """A real script runner process on the bench services; returns once it serves tasks."""
    process = subprocess.Popen([sys.executable, "-m", "jobs.runner"], cwd=PROJECT_ROOT,
                               env={**os.environ, "REDIS_URL": app.config["REDIS_URL"]},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with app.app_context():
        for _ in range(300):
            try:
                _hand_to_runner("return {};", "{}")
                return process
            except ApiError:  # code_runner_busy: the runner is still starting
                time.sleep(0.1)
    process.kill()
    raise RuntimeError("the script runner did not start")


def _live_apps(app) -> tuple[uuid.UUID, uuid.UUID]:
    """Two published apps with the same fields, one with the script."""
    with app.app_context():
        tenant = create_tenant("Bench")
        admin = add_member(tenant.id, EMAIL, PASSWORD, "admin")
        ids = []
        for definition in (PLAIN, WITH_CODE):
            found = get_app(tenant.id, create_app(tenant.id, admin.user_id, definition).app_id)
            db.session.commit()  # a simulation with a script ends the transaction before it waits
            simulate(found, admin.user_id, 1, SAMPLE)
            publish(found, admin.user_id, 1, None, PUBLISH_PERMISSIONS, True)
            ids.append(found.id)
        db.session.commit()
        return ids[0], ids[1]


def _submissions(app, client, plain_id, code_id) -> None:
    """Median latency of one record submission with and without the script."""
    def submit(app_id):
        body = {"version": 1, "input": SAMPLE, "idempotency_key": str(uuid.uuid4())}
        response = client.post(f"/api/extensions/{app_id}/records", json=body,
                               headers={"Origin": "http://localhost"})
        assert response.status_code == 200, response.get_json()

    # 30 script executions per tenant per minute: stay under the limit by measuring 25 of each.
    plain = median_seconds(lambda: submit(plain_id), rounds=25)
    with_code = median_seconds(lambda: submit(code_id), rounds=25)
    with app.app_context():
        round_trip = median_seconds(lambda: _hand_to_runner(SOURCE, json.dumps(SAMPLE)), rounds=25)
    print(f"record submission, no code         {plain * 1000:8.2f} ms (baseline)")
    print(f"record submission, small script    {with_code * 1000:8.2f} ms   ratio {with_code / plain:6.2f} "
          f"{target(with_code / plain, at_most=4)}")
    print(f"  of which the runner round trip   {round_trip * 1000:8.2f} ms")


def _engine() -> None:
    """Executions per second: a fresh QuickJS context in-process, and the locked-down sandbox."""
    payload = json.dumps(SAMPLE)
    raw = rate(lambda: evaluate(SOURCE, payload))
    box = Sandbox()
    try:
        boxed = rate(lambda: box.execute(SOURCE, payload))
    finally:
        box.close()
    print(f"engine, fresh context per run      {raw:8.0f} exec/s   ratio to 1,000/s {raw / 1000:6.2f} "
          f"{target(raw / 1000, at_least=1)}")
    print(f"sandbox process, child per run     {boxed:8.0f} exec/s   ratio to engine  {boxed / raw:6.3f}")


def main() -> None:
    """Print both comparisons."""
    logging.disable(logging.INFO)
    app = bench_app()
    runner = start_runner(app)
    try:
        plain_id, code_id = _live_apps(app)
        client = logged_in(app, EMAIL, PASSWORD)
        _submissions(app, client, plain_id, code_id)
    finally:
        runner.terminate()
        runner.wait(timeout=20)
    _engine()


if __name__ == "__main__":
    main()
