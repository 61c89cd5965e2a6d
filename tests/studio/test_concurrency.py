"""Races that must resolve to exactly one outcome (run on PostgreSQL in CI)."""
import threading
import uuid

from sqlalchemy import func, select

from core.db import db
from studio.catalog import PUBLISH_PERMISSIONS
from studio.models import StudioApp, StudioRecord
from tests.support.concurrency import PARALLEL, at_once, browsers_of
from tests.support.scripts import script_executions
from tests.support.studio import ORIGIN, sample_definition


def test_parallel_identical_submissions_with_one_key_create_one_record(app, admin, live_app):
    body = {"version": 1, "input": {"title": "Race"}, "idempotency_key": str(uuid.uuid4())}
    responses = at_once(browsers_of(app, admin.user.email, PARALLEL), f"/api/extensions/{live_app}/records", body)
    assert {r.status_code for r in responses} == {200}, [r.get_json() for r in responses]
    ids = {r.get_json()["data"]["record_id"] for r in responses}
    assert len(ids) == 1
    assert sum(1 for r in responses if r.get_json()["data"].get("replayed") is not True) == 1
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 1
    assert db.session.scalar(select(StudioApp.record_count).where(StudioApp.id == uuid.UUID(live_app))) == 1  # replays uncounted


def test_parallel_publishes_with_the_same_expected_version_have_one_winner(app, admin, api, draft_app):
    api.simulate(draft_app)
    body = {"version": 1, "expected_active_version": None, "permissions": PUBLISH_PERMISSIONS}
    responses = at_once(browsers_of(app, admin.user.email, PARALLEL), f"/api/extensions/{draft_app}/publish", body)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * (PARALLEL - 1)
    assert {r.get_json()["error"]["code"] for r in responses if r.status_code == 409} == {"version_conflict"}


def _submission_overtaken_by(app, admin, live_app, monkeypatch, change) -> tuple:
    """Pause a submission inside its rules step, let `change` commit, then let it finish."""
    from studio import records

    in_rules, go_on = threading.Event(), threading.Event()
    run_rules = records.run_rules

    def pause_in_rules(*args):  # the real step, after a pause the test controls
        in_rules.set()
        go_on.wait(10)
        return run_rules(*args)

    monkeypatch.setattr(records, "run_rules", pause_in_rules)
    submitter, changer = browsers_of(app, admin.user.email, 2)
    answers = []
    body = {"version": 1, "input": {"title": "Late"}, "idempotency_key": str(uuid.uuid4())}
    thread = threading.Thread(target=lambda: answers.append(
        submitter.post(f"/api/extensions/{live_app}/records", json=body, headers=ORIGIN)))
    thread.start()
    assert in_rules.wait(10)
    changed = change(changer)
    go_on.set()
    thread.join(20)
    return changed, answers[0]


def test_a_submission_overtaken_by_a_disable_saves_nothing(app, admin, live_app, monkeypatch):
    disabled, late = _submission_overtaken_by(app, admin, live_app, monkeypatch, lambda browser: browser.post(
        f"/api/extensions/{live_app}/disable", json={}, headers=ORIGIN))
    assert disabled.status_code == 200
    assert late.status_code == 409 and late.get_json()["error"]["code"] == "extension_not_active"
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 0


def test_a_submission_overtaken_by_a_new_live_version_saves_nothing(app, admin, api, live_app, monkeypatch):
    from tests.support.studio import sample_definition

    assert api.post(f"/{live_app}/versions", {"definition": sample_definition(name="Second")}).status_code == 201
    assert api.simulate(live_app, version=2).status_code == 200
    published, late = _submission_overtaken_by(app, admin, live_app, monkeypatch, lambda browser: browser.post(
        f"/api/extensions/{live_app}/publish", headers=ORIGIN,
        json={"version": 2, "expected_active_version": 1, "permissions": PUBLISH_PERMISSIONS}))
    assert published.status_code == 200
    assert late.status_code == 409 and late.get_json()["error"]["code"] == "extension_not_active"
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 0
    assert db.session.scalar(select(StudioApp.record_count).where(StudioApp.id == uuid.UUID(live_app))) == 0


SLOW_SCRIPT = "for (let i = 0; i < 2e6; i++) {} return {title: input.title + '!'};"


def test_parallel_submissions_with_one_key_run_the_script_once(app, admin, api, runner, tenant, rate_window):
    rate_window()
    app_id = api.create(sample_definition(code={"language": "javascript", "source": SLOW_SCRIPT}))
    assert api.simulate(app_id, data={"title": "sample"}).status_code == 200
    assert api.publish(app_id, code_confirmed=True).status_code == 200
    before = script_executions(tenant)
    body = {"version": 1, "input": {"title": "Storm"}, "idempotency_key": str(uuid.uuid4())}
    responses = at_once(browsers_of(app, admin.user.email, 8), f"/api/extensions/{app_id}/records", body)
    assert {r.status_code for r in responses} == {200}, [r.get_json() for r in responses]
    assert len({r.get_json()["data"]["record_id"] for r in responses}) == 1
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 1
    assert script_executions(tenant) - before == 1


def test_a_slow_script_holds_no_database_connection_while_it_waits(app_config, admin_client, api, runner,
                                                                  tenant, redis_conn):
    from tests.conftest import build_app

    slow = api.create(sample_definition(code={"language": "javascript", "source": "while (true) {}"}))
    plain = api.create()
    narrow = build_app({**app_config, "SQLALCHEMY_ENGINE_OPTIONS": {  # one connection, a short wait for it
        "pool_size": 1, "max_overflow": 0, "pool_timeout": 0.3}})
    cookie = admin_client.get_cookie("session").value

    def browser():
        client = narrow.test_client()
        client.set_cookie("session", cookie)
        return client

    answers = []
    waiting = threading.Thread(target=lambda: answers.append(browser().post(
        f"/api/extensions/{slow}/simulate", json={"version": 1, "input": {"title": "t"}}, headers=ORIGIN)))
    waiting.start()
    for _ in range(200):  # until the slow simulation holds its tenant's runner slot: it is waiting
        if redis_conn.zcard(f"limit:sem:scripts:tenant:{tenant.id}"):
            break
        threading.Event().wait(0.01)
    meanwhile = browser().get(f"/api/extensions/{plain}")
    waiting.join(10)
    assert meanwhile.status_code == 200
    assert answers[0].get_json()["error"]["code"] == "code_timeout"
