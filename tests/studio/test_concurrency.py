"""Races that must resolve to exactly one outcome (run on PostgreSQL in CI)."""
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import func, select

from core.db import db
from studio.catalog import PUBLISH_PERMISSIONS
from studio.models import StudioApp, StudioRecord
from tests.conftest import login
from tests.studio.conftest import ORIGIN

PARALLEL = 20


def _browsers(app, email: str, count: int) -> list:
    """Separate browsers sharing one login (a login per browser would trip the login throttle)."""
    first = app.test_client()
    login(first, email)
    cookie = first.get_cookie("session").value
    browsers = [first]
    for _ in range(count - 1):
        browser = app.test_client()
        browser.set_cookie("session", cookie)
        browsers.append(browser)
    return browsers


def _at_once(browsers, path: str, body: dict) -> list:
    """POST the same body from every browser at the same moment."""
    barrier = threading.Barrier(len(browsers))

    def send(browser):
        barrier.wait()
        return browser.post(path, json=body, headers=ORIGIN)

    with ThreadPoolExecutor(len(browsers)) as pool:
        return list(pool.map(send, browsers))


def test_parallel_identical_submissions_with_one_key_create_one_record(app, admin, live_app):
    body = {"version": 1, "input": {"title": "Race"}, "idempotency_key": str(uuid.uuid4())}
    responses = _at_once(_browsers(app, admin.user.email, PARALLEL), f"/api/extensions/{live_app}/records", body)
    assert {r.status_code for r in responses} == {200}, [r.get_json() for r in responses]
    ids = {r.get_json()["data"]["record_id"] for r in responses}
    assert len(ids) == 1
    assert sum(1 for r in responses if r.get_json()["data"].get("replayed") is not True) == 1
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 1
    assert db.session.scalar(select(StudioApp.record_count).where(StudioApp.id == uuid.UUID(live_app))) == 1  # replays uncounted


def test_parallel_publishes_with_the_same_expected_version_have_one_winner(app, admin, api, draft_app):
    api.simulate(draft_app)
    body = {"version": 1, "expected_active_version": None, "permissions": PUBLISH_PERMISSIONS}
    responses = _at_once(_browsers(app, admin.user.email, PARALLEL), f"/api/extensions/{draft_app}/publish", body)
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200] + [409] * (PARALLEL - 1)
    assert {r.get_json()["error"]["code"] for r in responses if r.status_code == 409} == {"version_conflict"}
