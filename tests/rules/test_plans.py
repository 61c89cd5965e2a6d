"""Read-only plans of published rules: POST rule-plan, the plan job, the sweep, GET rule-runs."""
import json
import os
import signal
import subprocess
import time
import uuid
from datetime import datetime, timedelta

import pytest
from rq import Queue
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from core.audit import AuditEntry
from core.clock import BEIJING, utcnow
from core.config import PROJECT_ROOT
from core.db import db
from core.queue_names import DEFAULT
from desk.conversations import snapshot
from desk.models import AiPointsEntry, Conversation
from jobs import cron, wiring
from rules import plans
from rules.models import AutomationRun, AutomationRunItem
from tests.conftest import FLASK, LONG_WINDOW, login, process_env, seat, seconds_left_in_window
from tests.support.jobs import work
from tests.support.rule_runs import plan, say, talk
from tests.support.rules import (KEYWORD, READ_ONLY, SEMANTIC, RulesApi, error, message_rule,
                                 semantic_rule, weekly_rule)

SECRET_TEXT = "Zebra-7731 my refund please"
pytestmark = pytest.mark.usefixtures("planning")


def published(rules: RulesApi, definition: dict, permissions: list) -> str:
    """Save and publish a rule read-only; its id."""
    rule_id = rules.create(definition)
    response = rules.publish(rule_id, permissions)
    assert response.status_code == 200, response.get_json()
    return rule_id


def by_conversation(run: dict) -> dict:
    return {item["conversation_id"]: item for item in run["items"]}


def stored_run(run_id: str) -> AutomationRun:
    db.session.expire_all()
    return db.session.get(AutomationRun, uuid.UUID(run_id))


# --- POST rule-plan -----------------------------------------------------------------------------

def test_planning_switch_off_refuses_plans(app, rules, agent, monkeypatch):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    monkeypatch.setitem(app.config, "AUTOMATION_PLANNING_ENABLED", False)
    assert error(rules.post(f"/{rule_id}/rule-plan", {}))[:2] == (503, "planning_disabled")
    assert db.session.scalar(select(func.count()).select_from(AutomationRun)) == 0


def test_plan_body_must_be_empty_and_rule_published(rules, agent):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    assert error(rules.post(f"/{rule_id}/rule-plan", {"force": True})) == (400, "invalid_json", "force")
    draft = rules.create(message_rule(agent))
    assert error(rules.post(f"/{draft}/rule-plan", {}))[:2] == (409, "rule_not_published")
    assert rules.pause(rule_id).status_code == 200
    assert error(rules.post(f"/{rule_id}/rule-plan", {}))[:2] == (409, "rule_not_published")


def test_a_plan_body_is_checked_before_the_rule_and_the_switch(app, rules, monkeypatch):
    monkeypatch.setitem(app.config, "AUTOMATION_PLANNING_ENABLED", False)
    assert error(rules.post(f"/{uuid.uuid4()}/rule-plan", {"force": True})) == (400, "invalid_json", "force")
    assert error(rules.post(f"/{uuid.uuid4()}/rule-plan", {}))[:2] == (404, "not_found")


def test_a_plan_is_queued_read_only_under_the_current_grant(app, rules, agent, redis_conn):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    response = rules.post(f"/{rule_id}/rule-plan", {})
    assert response.status_code == 202
    data = response.get_json()["data"]
    assert data == {**data, "kind": "manual", "mode": "plan_only", "executed": False, "status": "queued",
                    "planned_for": None, "scanned": 0, "planned_count": 0, "items": []}
    run = stored_run(data["run_id"])
    assert run.grant_id == uuid.UUID(rules.rule(rule_id)["grant_id"]) and run.revision == 1
    assert Queue(DEFAULT, connection=redis_conn).count == 1


def test_one_plan_per_tenant_per_minute(app, rules, agent, other_tenant, rate_window, redis_conn):
    rate_window()  # one long window: both requests count in it
    first = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    second = published(rules, message_rule(agent, name="Other"), READ_ONLY + KEYWORD)
    assert rules.post(f"/{first}/rule-plan", {}).status_code == 202
    refused = rules.post(f"/{second}/rule-plan", {})
    assert error(refused)[:2] == (429, "plan_rate_limited")
    assert abs(int(refused.headers["Retry-After"]) - seconds_left_in_window(redis_conn, LONG_WINDOW)) <= 1
    browser = app.test_client()
    login(browser, seat(other_tenant, "admin").user.email)
    foreign = RulesApi(browser)
    foreign_rule = published(foreign, message_rule(seat(other_tenant, "agent")), READ_ONLY + KEYWORD)
    assert foreign.post(f"/{foreign_rule}/rule-plan", {}).status_code == 202


def expected_next_slot(now: datetime) -> tuple[datetime, int]:
    """The next 09:00 Beijing time on Monday to Friday after `now`, and its weekday."""
    local = now.astimezone(BEIJING)
    for days in range(8):
        moment = (local + timedelta(days=days)).replace(hour=9, minute=0, second=0, microsecond=0)
        if moment > local and moment.isoweekday() <= 5:
            return moment, moment.isoweekday()
    raise AssertionError("no slot")


def test_a_weekly_rule_plans_its_next_slot_time_and_assignee(app, rules, tenant, chat_channel, redis_conn):
    first, second = seat(tenant, "agent"), seat(tenant, "agent")
    rule_id = published(rules, weekly_rule(first, second), READ_ONLY)
    conversation = talk(tenant, chat_channel)
    before = utcnow()
    run = plan(rules, rule_id, app, redis_conn)
    moment, weekday = expected_next_slot(before)
    assert datetime.fromisoformat(run["planned_for"].replace("Z", "+00:00")) == moment
    assert run["planned_for"].endswith("Z")
    target = first if weekday in (1, 3, 5) else second
    item = by_conversation(run)[str(conversation.id)]
    assert item == {"conversation_id": str(conversation.id), "planned": True,
                    "target_member_id": str(target.id), "reason": "slot_matched",
                    "detail": {"weekday": weekday, "time": "09:00", "assignee_ref": str(target.id)}}


def test_a_manual_plan_leaves_the_slot_time_to_the_scheduler_and_may_repeat(app, rules, agent, redis_conn):
    rule_id = published(rules, weekly_rule(agent), READ_ONLY)
    assert rules.post(f"/{rule_id}/rule-plan", {}).status_code == 202
    for key in redis_conn.scan_iter("limit:fw:rules:plan:*"):  # as if the minute had passed
        redis_conn.delete(key)
    assert rules.post(f"/{rule_id}/rule-plan", {}).status_code == 202
    first = db.session.scalar(select(AutomationRun).where(AutomationRun.rule_id == uuid.UUID(rule_id)))
    db.session.add(AutomationRun(tenant_id=first.tenant_id, rule_id=first.rule_id, revision=first.revision,
                                 grant_id=first.grant_id, kind="scheduled", planned_for=first.planned_for))
    db.session.commit()  # the scheduler's run of the same slot still fits
    db.session.add(AutomationRun(tenant_id=first.tenant_id, rule_id=first.rule_id, revision=first.revision,
                                 grant_id=first.grant_id, kind="scheduled", planned_for=first.planned_for))
    with pytest.raises(IntegrityError):
        db.session.commit()  # but only one per rule and slot time
    db.session.rollback()


# --- the scan -----------------------------------------------------------------------------------

def test_the_scan_reads_the_100_newest_mapped_conversations_and_is_partial_beyond(app, rules, tenant, agent,
                                                                                  chat_channel, redis_conn):
    rule_id = published(rules, weekly_rule(agent), READ_ONLY)  # max_actions 20
    conversations = [talk(tenant, chat_channel, None, minutes_ago=index) for index in range(101)]
    unmapped = talk(tenant, chat_channel, None, minutes_ago=0.5, mapped=False)
    run = plan(rules, rule_id, app, redis_conn)
    assert run["status"] == "partial" and run["scanned"] == 100 and run["planned_count"] == 20
    assert [item["conversation_id"] for item in run["items"]] == [str(c.id) for c in conversations[:100]]
    assert str(unmapped.id) not in by_conversation(run)
    assert [item["planned"] for item in run["items"]] == [True] * 20 + [False] * 80
    assert {item["reason"] for item in run["items"][20:]} == {"over_max_actions"}


def test_only_mapped_conversations_newest_first_within_max_actions(app, rules, tenant, agent, chat_channel, redis_conn):
    rule_id = published(rules, message_rule(agent, max_actions=1), READ_ONLY + KEYWORD)
    older = talk(tenant, chat_channel, "refund", minutes_ago=10)
    newer = talk(tenant, chat_channel, "REFUND now", minutes_ago=5)
    unmapped = talk(tenant, chat_channel, "refund", minutes_ago=1, mapped=False)
    run = plan(rules, rule_id, app, redis_conn)
    assert run["status"] == "complete" and run["scanned"] == 2 and run["planned_count"] == 1
    items = by_conversation(run)
    assert str(unmapped.id) not in items
    assert items[str(newer.id)] == {"conversation_id": str(newer.id), "planned": True,
                                    "target_member_id": str(agent.id), "reason": "keyword_matched",
                                    "detail": {"keyword": "refund"}}
    assert items[str(older.id)]["reason"] == "over_max_actions" and not items[str(older.id)]["planned"]


def test_only_the_newest_public_inbound_text_is_read(app, rules, tenant, agent, chat_channel, redis_conn):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    noted = talk(tenant, chat_channel, "hello", minutes_ago=1)
    say(noted, "refund (private note)", kind="private_note")
    answered = talk(tenant, chat_channel, "hello", minutes_ago=2)
    say(answered, "we can refund you", direction="outbound")
    superseded = talk(tenant, chat_channel, "refund", minutes_ago=3)
    say(superseded, "never mind, thanks")
    silent = talk(tenant, chat_channel, None, minutes_ago=4)
    items = by_conversation(plan(rules, rule_id, app, redis_conn))
    assert items[str(noted.id)]["reason"] == "no_keyword_matched"
    assert items[str(answered.id)]["reason"] == "no_keyword_matched"
    assert items[str(superseded.id)]["reason"] == "no_keyword_matched"
    assert items[str(silent.id)]["reason"] == "no_public_inbound_message"


def test_keywords_look_at_the_first_4000_characters_only(app, rules, tenant, agent, chat_channel, redis_conn):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    inside = talk(tenant, chat_channel, "x" * 3994 + "Refund", minutes_ago=1)
    outside = talk(tenant, chat_channel, "x" * 3995 + "refund", minutes_ago=2)
    items = by_conversation(plan(rules, rule_id, app, redis_conn))
    assert items[str(inside.id)]["reason"] == "keyword_matched"
    assert items[str(outside.id)]["reason"] == "no_keyword_matched"


def test_statuses_and_assignees_decide_before_the_text(app, rules, tenant, agent, chat_channel, redis_conn):
    other = seat(tenant, "agent")
    rule_id = published(rules, message_rule(agent, statuses=["open"]), READ_ONLY + KEYWORD)
    cases = {
        "resolved_excluded": talk(tenant, chat_channel, "refund", status="resolved", minutes_ago=1),
        "status_not_selected": talk(tenant, chat_channel, "refund", status="pending", minutes_ago=2),
        "already_assigned": talk(tenant, chat_channel, "refund", assignee=other, minutes_ago=3),
        "no_keyword_matched": talk(tenant, chat_channel, "hello", minutes_ago=4),
        "keyword_matched": talk(tenant, chat_channel, "refund", minutes_ago=5),
    }
    items = by_conversation(plan(rules, rule_id, app, redis_conn))
    assert {reason: items[str(c.id)]["reason"] for reason, c in cases.items()} == {r: r for r in cases}
    assert [reason for reason, c in cases.items() if items[str(c.id)]["planned"]] == ["keyword_matched"]


def test_overwrite_assigned_plans_assigned_conversations_but_not_the_targets_own(app, rules, tenant, agent,
                                                                                  chat_channel, redis_conn):
    other = seat(tenant, "agent")
    rule_id = published(rules, message_rule(agent, overwrite_assigned=True), READ_ONLY + KEYWORD)
    theirs = talk(tenant, chat_channel, "refund", assignee=other, minutes_ago=1)
    own = talk(tenant, chat_channel, "refund", assignee=agent, minutes_ago=2)
    run = plan(rules, rule_id, app, redis_conn)
    items = by_conversation(run)
    assert items[str(theirs.id)]["planned"] and items[str(theirs.id)]["reason"] == "keyword_matched"
    assert items[str(own.id)] == {**items[str(own.id)], "planned": False,
                                  "reason": "already_assigned_to_target", "target_member_id": str(agent.id)}
    assert run["planned_count"] == 1


def test_planned_items_carry_the_atomic_snapshot(app, rules, tenant, agent, chat_channel, redis_conn):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    planned = talk(tenant, chat_channel, "refund", minutes_ago=1)
    skipped = talk(tenant, chat_channel, "hello", minutes_ago=2)
    run = plan(rules, rule_id, app, redis_conn)
    db.session.expire_all()
    stored = {item.conversation_id: item for item in db.session.scalars(select(AutomationRunItem))}
    conversation = db.session.get(Conversation, planned.id)
    assert stored[planned.id].snapshot == snapshot(conversation)
    assert stored[planned.id].snapshot["updated_at"] == conversation.updated_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    assert set(stored[planned.id].snapshot) == {"tenant_id", "conversation_id", "assignee_member_id",
                                                "bot_active", "status", "updated_at"}
    assert stored[skipped.id].snapshot is None
    assert run["planned_count"] == 1


def test_no_message_text_is_stored_in_the_run_its_items_or_the_audit(app, rules, tenant, agent, chat_channel,
                                                                     redis_conn):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    talk(tenant, chat_channel, SECRET_TEXT, minutes_ago=1)
    talk(tenant, chat_channel, "Quokka-1180 hello", minutes_ago=2)
    run = plan(rules, rule_id, app, redis_conn)
    assert run["planned_count"] == 1
    db.session.expire_all()
    rows = [*db.session.scalars(select(AutomationRun)), *db.session.scalars(select(AutomationRunItem)),
            *db.session.scalars(select(AuditEntry))]
    stored = json.dumps([{column.name: getattr(row, column.name) for column in row.__table__.columns}
                         for row in rows], default=str)
    answered = json.dumps(rules.get(f"/{rule_id}/rule-runs").get_json())
    for text in (stored, answered):
        assert "Zebra" not in text and "Quokka" not in text and "please" not in text


def test_a_completed_plan_is_audited_with_counts_only(app, rules, tenant, agent, admin, chat_channel, redis_conn):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    talk(tenant, chat_channel, "refund")
    run = plan(rules, rule_id, app, redis_conn)
    entry = db.session.scalar(select(AuditEntry).where(AuditEntry.action == "automation.plan_completed"))
    assert entry.actor_id == admin.user_id and entry.target == f"automation_run:{run['run_id']}"
    assert entry.summary == {"run_id": run["run_id"], "rule_id": rule_id, "status": "complete",
                             "scanned": 1, "planned_count": 1}


def test_running_the_job_twice_plans_once(app, rules, tenant, agent, chat_channel, redis_conn):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    talk(tenant, chat_channel, "refund")
    run = plan(rules, rule_id, app, redis_conn)
    assert plans.run_plan(uuid.UUID(run["run_id"])) == "complete"
    assert db.session.scalar(select(func.count()).select_from(AutomationRunItem)) == 1


def test_running_out_of_budget_makes_the_run_partial(app, rules, tenant, agent, chat_channel, redis_conn, monkeypatch):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    talk(tenant, chat_channel, "refund")
    monkeypatch.setattr(plans, "BUDGET_SECONDS", -1.0)
    run = plan(rules, rule_id, app, redis_conn)
    assert (run["status"], run["scanned"], run["planned_count"], run["items"]) == ("partial", 0, 0, [])


def test_a_failed_read_makes_the_run_partial(app, rules, tenant, agent, chat_channel, redis_conn, monkeypatch):
    from sqlalchemy.exc import OperationalError

    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    failing = talk(tenant, chat_channel, "refund", minutes_ago=1)
    fine = talk(tenant, chat_channel, "refund", minutes_ago=2)
    read = plans._latest_text

    def flaky(tenant_id, conversation_id):
        if conversation_id == failing.id:
            raise OperationalError("SELECT", {}, Exception("gone"))
        return read(tenant_id, conversation_id)

    monkeypatch.setattr(plans, "_latest_text", flaky)
    run = plan(rules, rule_id, app, redis_conn)
    items = by_conversation(run)
    assert run["status"] == "partial" and run["scanned"] == 2
    assert items[str(failing.id)]["reason"] == "read_failed" and items[str(fine.id)]["planned"]


# --- semantic rules -----------------------------------------------------------------------------

def test_semantic_plans_classify_masked_text_and_meter_the_tokens(app, rules, tenant, agent, chat_channel,
                                                                  redis_conn, model_server):
    rule_id = published(rules, semantic_rule(agent), READ_ONLY + SEMANTIC)
    matched = talk(tenant, chat_channel, "charge on my card, mail me at ann@example.com", minutes_ago=1)
    low = talk(tenant, chat_channel, "maybe billing", minutes_ago=2)
    resolved = talk(tenant, chat_channel, "billing", status="resolved", minutes_ago=3)
    model_server.answer_json({"label": "billing", "confidence": 0.95}, input_tokens=700, output_tokens=20)
    model_server.answer_json({"label": "billing", "confidence": 0.5}, input_tokens=600, output_tokens=30)
    run = plan(rules, rule_id, app, redis_conn)
    items = by_conversation(run)
    assert (run["status"], run["planned_count"]) == ("complete", 1)
    assert items[str(matched.id)] == {"conversation_id": str(matched.id), "planned": True,
                                      "target_member_id": str(agent.id), "reason": "semantic_matched",
                                      "detail": {"label": "billing", "confidence": 0.95}}
    assert items[str(low.id)]["reason"] == "semantic_below_threshold"
    assert items[str(resolved.id)]["reason"] == "resolved_excluded"
    assert len(model_server.received) == 2
    assert "ann@example.com" not in json.dumps([request.body for request in model_server.received])
    entry = db.session.scalar(select(AiPointsEntry))
    assert (entry.kind, entry.input_tokens, entry.output_tokens, entry.reference) == (
        "semantic_routing", 1300, 50, f"automation_run:{run['run_id']}")


def test_semantic_plans_meter_points_even_when_nothing_matches(app, rules, tenant, agent, chat_channel, redis_conn,
                                                               model_server):
    rule_id = published(rules, semantic_rule(agent), READ_ONLY + SEMANTIC)
    undecided = talk(tenant, chat_channel, "hmm")
    model_server.answer_json({"label": "无法判断", "confidence": 0.99}, input_tokens=400, output_tokens=10)
    run = plan(rules, rule_id, app, redis_conn)
    assert run["planned_count"] == 0
    assert by_conversation(run)[str(undecided.id)]["reason"] == "semantic_undetermined"
    assert db.session.scalar(select(func.sum(AiPointsEntry.input_tokens))) == 400


def test_more_than_10_semantic_candidates_classify_nothing_and_plan_nothing(app, rules, tenant, agent, chat_channel,
                                                                            redis_conn, model_server):
    rule_id = published(rules, semantic_rule(agent), READ_ONLY + SEMANTIC)
    for index in range(11):
        talk(tenant, chat_channel, "billing question", minutes_ago=index)
    run = plan(rules, rule_id, app, redis_conn)
    assert (run["status"], run["scanned"], run["planned_count"]) == ("partial", 11, 0)
    assert {item["reason"] for item in run["items"]} == {"semantic_over_limit"}
    assert model_server.received == []
    assert db.session.scalar(select(func.count()).select_from(AiPointsEntry)) == 0


def test_a_model_failure_leaves_a_partial_semantic_plan_that_plans_nothing(app, rules, tenant, agent, chat_channel,
                                                                            redis_conn, model_server):
    rule_id = published(rules, semantic_rule(agent), READ_ONLY + SEMANTIC)
    first = talk(tenant, chat_channel, "billing", minutes_ago=1)
    second = talk(tenant, chat_channel, "billing", minutes_ago=2)
    model_server.answer_json({"label": "billing", "confidence": 0.99}, input_tokens=300, output_tokens=5)
    model_server.answer_status(500)
    model_server.answer_status(500)
    model_server.answer_status(500)
    run = plan(rules, rule_id, app, redis_conn)
    items = by_conversation(run)
    assert (run["status"], run["planned_count"]) == ("partial", 0)
    assert items[str(first.id)] == {**items[str(first.id)], "planned": False, "reason": "plan_incomplete"}
    assert items[str(second.id)]["reason"] == "semantic_not_classified"
    assert db.session.scalar(select(func.sum(AiPointsEntry.input_tokens))) == 300


def test_a_worker_killed_mid_plan_leaves_the_run_failed_and_it_is_never_retried(
        app, app_config, rules, tenant, agent, chat_channel, redis_conn, model_server, monkeypatch):
    rule_id = published(rules, semantic_rule(agent), READ_ONLY + SEMANTIC)
    talk(tenant, chat_channel, "billing")
    model_server.answer_json({"label": "billing", "confidence": 0.99}, delay=30)
    response = rules.post(f"/{rule_id}/rule-plan", {})
    assert response.status_code == 202
    run_id = uuid.UUID(response.get_json()["data"]["run_id"])
    env = {**process_env(app_config), "MODEL_BASE_URL": model_server.url, "MODEL_NAME": "test-model",
           "MODEL_API_KEY": "sk-test-key", "MODEL_READ_TIMEOUT": "60", "AUTOMATION_PLANNING_ENABLED": "1"}
    worker = subprocess.Popen([*FLASK, "jobs", "worker", "--burst"], cwd=PROJECT_ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(600):
            if model_server.received:
                break
            time.sleep(0.05)
        assert model_server.received, "the worker never asked the model"
    finally:
        os.killpg(worker.pid, signal.SIGKILL)  # mid-plan, waiting on the model
        worker.wait(timeout=10)
    db.session.expire_all()
    run = db.session.get(AutomationRun, run_id)
    assert (run.status, run.planned_count, run.finished_at) == ("running", 0, None)  # never marked successful
    assert db.session.scalar(select(func.count()).select_from(AutomationRunItem)) == 0
    later = utcnow() + plans.STUCK_AFTER + timedelta(seconds=1)
    monkeypatch.setattr(plans, "utcnow", lambda: later)
    assert plans.sweep() == 1
    db.session.expire_all()
    assert db.session.get(AutomationRun, run_id).status == "failed"
    work(app, redis_conn, DEFAULT)  # a new worker runs whatever is queued: nothing plans the run again
    assert plans.run_plan(run_id) == "failed"
    assert len(model_server.received) == 1  # the model was asked once; nothing was retried
    db.session.expire_all()
    assert db.session.get(AutomationRun, run_id).status == "failed"


# --- cancelled, failed, listed ------------------------------------------------------------------

def test_pausing_the_rule_cancels_its_queued_plans(app, rules, tenant, agent, chat_channel, redis_conn):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    talk(tenant, chat_channel, "refund")
    run_id = rules.post(f"/{rule_id}/rule-plan", {}).get_json()["data"]["run_id"]
    assert rules.pause(rule_id).status_code == 200
    assert stored_run(run_id).status == "cancelled"
    work(app, redis_conn, DEFAULT)  # the job finds nothing to do
    assert stored_run(run_id).status == "cancelled"
    assert db.session.scalar(select(func.count()).select_from(AutomationRunItem)) == 0


def test_a_run_of_a_replaced_grant_is_cancelled_with_a_reason(app, rules, tenant, agent, chat_channel, redis_conn):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    talk(tenant, chat_channel, "refund")
    run_id = rules.post(f"/{rule_id}/rule-plan", {}).get_json()["data"]["run_id"]
    assert rules.publish(rule_id, READ_ONLY + KEYWORD, expected=1).status_code == 200  # a fresh grant
    work(app, redis_conn, DEFAULT)
    run = stored_run(run_id)
    assert run.status == "cancelled" and run.finished_at is not None and run.planned_count == 0
    entry = db.session.scalar(select(AuditEntry).where(AuditEntry.action == "automation.plan_cancelled"))
    assert entry.summary == {"run_id": run_id, "rule_id": rule_id, "reason": "grant_replaced"}
    assert db.session.scalar(select(func.count()).select_from(AutomationRunItem)) == 0


@pytest.mark.parametrize("change, reason", [("pause", "grant_replaced"), ("switch", "planning_disabled")])
def test_a_rule_paused_or_planning_switched_off_while_planning_cancels_before_writing(
        app, rules, tenant, agent, chat_channel, redis_conn, monkeypatch, change, reason):
    from sqlalchemy import update

    from core.db import end_reads
    from rules.models import AutomationRule

    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    talk(tenant, chat_channel, "refund")

    def meanwhile() -> None:  # between the reads and the writes, from another connection
        end_reads()
        if change == "pause":
            with db.engine.begin() as connection:
                connection.execute(update(AutomationRule).where(AutomationRule.id == uuid.UUID(rule_id))
                                   .values(state="paused", grant_id=None))
        else:
            monkeypatch.setitem(app.config, "AUTOMATION_PLANNING_ENABLED", False)

    monkeypatch.setattr(plans, "end_reads", meanwhile)
    run_id = rules.post(f"/{rule_id}/rule-plan", {}).get_json()["data"]["run_id"]
    work(app, redis_conn, DEFAULT)
    assert stored_run(run_id).status == "cancelled"
    entry = db.session.scalar(select(AuditEntry).where(AuditEntry.action == "automation.plan_cancelled"))
    assert entry.summary["reason"] == reason
    assert db.session.scalar(select(func.count()).select_from(AutomationRunItem)) == 0


def runs_of(rule_id: str, *changes: dict) -> list[AutomationRun]:
    """Store runs of the rule under its current grant directly, one per `changes`."""
    from rules.models import AutomationRule

    rule = db.session.get(AutomationRule, uuid.UUID(rule_id))
    runs = [AutomationRun(tenant_id=rule.tenant_id, rule_id=rule.id, revision=1, grant_id=rule.grant_id,
                          kind="manual", **change) for change in changes]
    db.session.add_all(runs)
    db.session.commit()
    return runs


def test_the_sweep_fails_stuck_runs_and_cancels_old_queued_manual_plans(app, rules, agent):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    now = utcnow()
    old_queued, fresh_queued, stuck, busy = runs_of(
        rule_id, {"created_at": now - timedelta(minutes=16)}, {"created_at": now - timedelta(minutes=14)},
        {"status": "running", "started_at": now - timedelta(minutes=4)},
        {"status": "running", "started_at": now - timedelta(minutes=1)})
    assert "rules.plans.sweep" in wiring.tick_handlers()
    cron.tick()
    db.session.expire_all()
    assert [r.status for r in (old_queued, fresh_queued, stuck, busy)] == ["cancelled", "queued", "failed", "running"]
    assert stuck.finished_at is not None and old_queued.finished_at is not None
    assert plans.run_plan(stuck.id) == "failed"  # a failed run is never retried


def test_rule_runs_lists_the_30_newest(rules, agent):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    now = utcnow()
    runs = runs_of(rule_id, *({"created_at": now - timedelta(minutes=index)} for index in range(32)))
    listed = rules.get(f"/{rule_id}/rule-runs").get_json()["data"]["runs"]
    assert [run["run_id"] for run in listed] == [str(run.id) for run in runs[:30]]
    assert set(listed[0]) == {"run_id", "kind", "mode", "executed", "status", "planned_for", "scanned",
                              "planned_count", "schedule_execution_state", "schedule_execution_code",
                              "created_at", "finished_at", "execution_requested_at", "execution_finished_at",
                              "items"}


def test_agents_are_refused_and_foreign_rules_are_not_found(app, rules, agent, agent_client, other_tenant):
    rule_id = published(rules, message_rule(agent), READ_ONLY + KEYWORD)
    as_agent = RulesApi(agent_client)
    assert error(as_agent.post(f"/{rule_id}/rule-plan", {}))[:2] == (403, "forbidden")
    assert error(as_agent.get(f"/{rule_id}/rule-runs"))[:2] == (403, "forbidden")
    browser = app.test_client()
    login(browser, seat(other_tenant, "admin").user.email)
    foreign = RulesApi(browser)
    assert error(foreign.post(f"/{rule_id}/rule-plan", {}))[:2] == (404, "not_found")
    assert error(foreign.get(f"/{rule_id}/rule-runs"))[:2] == (404, "not_found")
    assert error(rules.get(f"/{uuid.uuid4()}/rule-runs"))[:2] == (404, "not_found")
    assert db.session.scalar(select(func.count()).select_from(AutomationRun)) == 0
