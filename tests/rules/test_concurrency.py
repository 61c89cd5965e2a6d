"""Rule races that must resolve to exactly one outcome (run on PostgreSQL in CI)."""
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select

from core.db import db
from rules.models import AutomationGrant, AutomationRule, AutomationRuleRevision
from tests.support.concurrency import PARALLEL, at_once, browsers_of
from tests.support.rules import READ_ONLY, weekly_rule
from tests.support.studio import ORIGIN

pytestmark = pytest.mark.usefixtures("planning")  # publishing needs the planning switch


def _outcomes(responses) -> list:
    """Sorted (status, error code or None) of each answer."""
    return sorted((r.status_code, r.get_json().get("error", {}).get("code")) for r in responses)


def test_parallel_saves_from_the_same_revision_have_one_winner(app, admin, agent, rules):
    rule_id = rules.create(weekly_rule(agent))
    body = {"definition": weekly_rule(agent, name="Edited"), "rule_id": rule_id, "expected_revision": 1}
    responses = at_once(browsers_of(app, admin.user.email, PARALLEL), "/api/extensions/automation-rules", body)
    assert _outcomes(responses) == [(201, None)] + [(409, "version_conflict")] * (PARALLEL - 1)
    assert db.session.scalar(select(AutomationRule.latest_revision)) == 2
    assert db.session.scalar(select(func.count()).select_from(AutomationRuleRevision)) == 2


def test_parallel_new_rules_never_pass_the_tenant_limit(app, admin, agent, rules):
    for n in range(19):
        rules.create(weekly_rule(agent, name=f"Rule {n}"))
    responses = at_once(browsers_of(app, admin.user.email, 8), "/api/extensions/automation-rules",
                        {"definition": weekly_rule(agent)})
    assert _outcomes(responses) == [(201, None)] + [(429, "rule_limit")] * 7
    assert db.session.scalar(select(func.count()).select_from(AutomationRule)) == 20


def _live_grants(rule_id: str) -> int:
    """How many grants of the rule are not revoked."""
    return db.session.scalar(select(func.count()).select_from(AutomationGrant).where(
        AutomationGrant.rule_id == uuid.UUID(rule_id), AutomationGrant.revoked_at.is_(None)))


def test_parallel_first_publications_have_one_winner(app, admin, agent, rules):
    rule_id = rules.create(weekly_rule(agent))
    body = {"revision": 1, "expected_active_revision": None, "permissions": READ_ONLY, "confirm": True}
    responses = at_once(browsers_of(app, admin.user.email, PARALLEL), f"/api/extensions/{rule_id}/rule-publish", body)
    assert _outcomes(responses) == [(200, None)] + [(409, "version_conflict")] * (PARALLEL - 1)
    assert db.session.scalar(select(func.count()).select_from(AutomationGrant)) == 1
    assert _live_grants(rule_id) == 1


def test_parallel_republications_from_the_same_active_revision_have_one_winner(app, admin, agent, rules):
    rule_id = rules.create(weekly_rule(agent))
    assert rules.publish(rule_id, READ_ONLY).status_code == 200
    rules.save(weekly_rule(agent, name="Second"), rule_id=rule_id, expected_revision=1)
    body = {"revision": 2, "expected_active_revision": 1, "permissions": READ_ONLY, "confirm": True}
    responses = at_once(browsers_of(app, admin.user.email, PARALLEL), f"/api/extensions/{rule_id}/rule-publish", body)
    assert _outcomes(responses) == [(200, None)] + [(409, "version_conflict")] * (PARALLEL - 1)
    assert db.session.scalar(select(func.count()).select_from(AutomationGrant)) == 2
    assert _live_grants(rule_id) == 1
    assert db.session.scalar(select(AutomationRule.active_revision)) == 2


def test_a_pause_racing_republications_leaves_only_the_rules_own_grant_live(app, admin, agent, rules):
    rule_id = rules.create(weekly_rule(agent))
    assert rules.publish(rule_id, READ_ONLY).status_code == 200
    republish = {"revision": 1, "expected_active_revision": 1, "permissions": READ_ONLY, "confirm": True}
    browsers = browsers_of(app, admin.user.email, PARALLEL)
    barrier = threading.Barrier(PARALLEL)

    def send(index: int):
        barrier.wait()
        if index == 0:
            return browsers[0].post(f"/api/extensions/{rule_id}/rule-pause", json={}, headers=ORIGIN)
        return browsers[index].post(f"/api/extensions/{rule_id}/rule-publish", json=republish, headers=ORIGIN)

    with ThreadPoolExecutor(PARALLEL) as pool:
        responses = list(pool.map(send, range(PARALLEL)))
    assert responses[0].status_code == 200
    assert {r.status_code for r in responses[1:]} <= {200, 409}
    state, grant_id = db.session.execute(select(AutomationRule.state, AutomationRule.grant_id)).one()
    live = set(db.session.scalars(select(AutomationGrant.id).where(AutomationGrant.revoked_at.is_(None))))
    assert live == (set() if state == "paused" else {grant_id})
    assert (grant_id is None) == (state == "paused")


def _publication_overtaken_by(app, admin, rule_id: str, monkeypatch, change) -> tuple:
    """Hold a republication of revision 1 after its checks, let `change` commit, then let it finish."""
    from rules import service

    checked, go_on = threading.Event(), threading.Event()
    check_bindings = service._check_bindings

    def hold_after_checks(*args):  # the real check, then a pause the test controls
        check_bindings(*args)
        checked.set()
        go_on.wait(10)

    monkeypatch.setattr(service, "_check_bindings", hold_after_checks)
    publisher, changer = browsers_of(app, admin.user.email, 2)
    answers = []
    body = {"revision": 1, "expected_active_revision": 1, "permissions": READ_ONLY, "confirm": True}
    thread = threading.Thread(target=lambda: answers.append(
        publisher.post(f"/api/extensions/{rule_id}/rule-publish", json=body, headers=ORIGIN)))
    thread.start()
    assert checked.wait(10)
    monkeypatch.setattr(service, "_check_bindings", check_bindings)
    changed = change(changer)
    go_on.set()
    thread.join(20)
    return changed, answers[0]


def test_a_publication_overtaken_by_a_pause_does_not_undo_it(app, admin, agent, rules, monkeypatch):
    rule_id = rules.create(weekly_rule(agent))
    rules.publish(rule_id, READ_ONLY)
    paused, late = _publication_overtaken_by(app, admin, rule_id, monkeypatch, lambda browser: browser.post(
        f"/api/extensions/{rule_id}/rule-pause", json={}, headers=ORIGIN))
    assert paused.status_code == 200
    assert late.status_code == 409 and late.get_json()["error"]["code"] == "version_conflict"
    assert db.session.scalar(select(AutomationRule.state)) == "paused"
    assert _live_grants(rule_id) == 0


def test_a_publication_overtaken_by_another_one_of_the_same_revision_loses(app, admin, agent, rules, monkeypatch):
    rule_id = rules.create(weekly_rule(agent))
    rules.publish(rule_id, READ_ONLY)
    other, late = _publication_overtaken_by(app, admin, rule_id, monkeypatch, lambda browser: browser.post(
        f"/api/extensions/{rule_id}/rule-publish", headers=ORIGIN,
        json={"revision": 1, "expected_active_revision": 1, "permissions": READ_ONLY, "confirm": True}))
    assert other.status_code == 200
    assert late.status_code == 409 and late.get_json()["error"]["code"] == "version_conflict"
    assert db.session.scalar(select(AutomationRule.grant_id)) == uuid.UUID(other.get_json()["data"]["grant_id"])
    assert _live_grants(rule_id) == 1
