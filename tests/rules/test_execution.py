"""Single-run execution: approval of a fresh complete plan, one command per conversation through the
atomic adapter, each rechecked; receipts as the execution status."""
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from rq import Queue
from sqlalchemy import select, update

from core.audit import AuditEntry
from core.clock import utcnow
from core.db import db
from core.queue_names import DEFAULT
from desk.conversations import apply_command, mark_sending
from desk.models import AssignmentReceipt, Conversation, Member, Tenant
from jobs import cron, wiring
from rules import execution
from rules.models import AutomationRun, AutomationRunItem
from tests.conftest import seat
from tests.support.jobs import work
from tests.support.rule_runs import (CONFIRM, age_receipt, complete_plan, executed_with_one_changed, execution_status,
                                     make_conversations)
from tests.support.rules import error

pytestmark = pytest.mark.usefixtures("single_run_switches", "availability_both_ways")


def test_an_approved_plan_queues_one_command_per_conversation_and_answers_before_they_run(
        app, rules, tenant, published, target, redis_conn):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 3))
    response = rules.post(f"/{run.id}/execute-plan", CONFIRM)
    assert response.status_code == 202
    assert response.get_json()["data"]["complete"] is False
    assert [r["status"] for r in execution_status(rules, run)["receipts"]] == ["pending"] * 3
    assert Queue(DEFAULT, connection=redis_conn).count == 3
    work(app, redis_conn, DEFAULT)
    status = execution_status(rules, run)
    assert status["final"] and [r["status"] for r in status["receipts"]] == ["applied"] * 3
    db.session.expire_all()
    assert {c.assignee_member_id for c in db.session.scalars(select(Conversation))} == {target.id}


def test_a_conversation_changed_since_the_plan_ends_state_changed_and_keeps_its_change(
        app, rules, tenant, published, target, redis_conn):
    run, first, second = executed_with_one_changed(app, rules, tenant, published, target, redis_conn)
    outcome = {r["conversation_id"]: r["status"] for r in execution_status(rules, run)["receipts"]}
    assert outcome == {str(first.id): "applied", str(second.id): "state_changed"}
    db.session.expire_all()
    assert db.session.get(Conversation, second.id).assignee_member_id is None


def test_the_finished_execution_is_audited_once_with_its_outcomes(app, rules, tenant, published, target, admin,
                                                                  redis_conn):
    run, _, _ = executed_with_one_changed(app, rules, tenant, published, target, redis_conn)
    [entry] = db.session.scalars(select(AuditEntry).where(AuditEntry.action == "automation.run_executed"))
    assert (entry.actor_id, entry.target) == (admin.user_id, f"automation_run:{run.id}")
    assert entry.summary == {"run_id": str(run.id), "rule_id": published, "kind": "manual", "commands": 2,
                             "outcomes": {"applied": 1, "state_changed": 1}}
    db.session.expire_all()
    assert db.session.get(AutomationRun, run.id).execution_finished_at is not None


def test_workers_finishing_together_write_one_summary(app, rules, tenant, published, target, redis_conn):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 1))
    rules.post(f"/{run.id}/execute-plan", CONFIRM)
    Queue(DEFAULT, connection=redis_conn).empty()
    [conversation] = db.session.scalars(select(Conversation))
    assert apply_command(tenant.id, execution.command_key(run.id), conversation.id) == "applied"
    tenant_id, start = tenant.id, threading.Barrier(4)

    def finish():
        with app.app_context():
            start.wait(20)
            return execution.finish_if_final(tenant_id, run.id)

    with ThreadPoolExecutor(4) as pool:
        assert sorted(pool.map(lambda _: finish(), range(4))) == [False, False, False, True]
    assert len(db.session.scalars(select(AuditEntry).where(AuditEntry.action == "automation.run_executed")).all()) == 1


def test_executing_the_same_plan_twice_applies_each_conversation_once(app, rules, tenant, published, target,
                                                                      redis_conn):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 2))
    assert rules.post(f"/{run.id}/execute-plan", CONFIRM).status_code == 202
    assert rules.post(f"/{run.id}/execute-plan", CONFIRM).status_code == 202
    work(app, redis_conn, DEFAULT)
    receipts = list(db.session.scalars(select(AssignmentReceipt)))
    assert len(receipts) == 2 and {r.status for r in receipts} == {"applied"}


@pytest.mark.parametrize("body", [{"confirm": False, "permission": "conversation.assign_plan"},
                                  {"confirm": True, "permission": "conversation.assign_scheduled"},
                                  {"confirm": "true", "permission": "conversation.assign_plan"}])
def test_execution_needs_confirmation_of_conversation_assign_plan(rules, tenant, published, target, body):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 1))
    response = rules.post(f"/{run.id}/execute-plan", body)
    assert (response.status_code, response.get_json()["error"]["code"]) == (400, "permission_confirmation_required")


@pytest.mark.parametrize("changes, code", [({"status": "partial"}, "plan_not_executable"),
                                           ({"finished_at": utcnow() - timedelta(minutes=6)}, "plan_expired")])
def test_only_a_complete_plan_at_most_five_minutes_old_is_executed(rules, tenant, published, target, changes, code):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 1), **changes)
    response = rules.post(f"/{run.id}/execute-plan", CONFIRM)
    assert (response.status_code, response.get_json()["error"]["code"]) == (409, code)
    assert db.session.scalar(select(AssignmentReceipt.id)) is None


def test_a_plan_without_a_snapshot_must_be_regenerated(rules, tenant, published, target):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 1))
    db.session.execute(update(AutomationRunItem).values(snapshot=None))
    db.session.commit()
    response = rules.post(f"/{run.id}/execute-plan", CONFIRM)
    assert (response.status_code, response.get_json()["error"]["code"]) == (409, "plan_without_snapshot")


@pytest.mark.parametrize("switch, code", [("ATOMIC_ASSIGNMENT_ENABLED", "atomic_assignment_disabled"),
                                          ("AUTOMATION_EXECUTION_ENABLED", "execution_disabled")])
def test_each_switch_off_stops_execution(app, rules, tenant, published, target, monkeypatch, switch, code):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 1))
    monkeypatch.setitem(app.config, switch, False)
    response = rules.post(f"/{run.id}/execute-plan", CONFIRM)
    assert (response.status_code, response.get_json()["error"]["code"]) == (503, code)


def test_pausing_the_rule_after_approval_cancels_its_commands_not_yet_begun(app, rules, tenant, published, target,
                                                                            redis_conn):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 2))
    rules.post(f"/{run.id}/execute-plan", CONFIRM)
    assert rules.pause(published).status_code == 200
    cancelled = {("cancelled", "rule_paused")}
    assert {(r["status"], r["reason"]) for r in execution_status(rules, run)["receipts"]} == cancelled
    work(app, redis_conn, DEFAULT)
    assert {(r["status"], r["reason"]) for r in execution_status(rules, run)["receipts"]} == cancelled
    paused = db.session.scalar(select(AuditEntry).where(AuditEntry.action == "automation.rule_paused"))
    assert paused.summary["commands_cancelled"] == 2
    db.session.expire_all()
    assert {c.assignee_member_id for c in db.session.scalars(select(Conversation))} == {None}


def test_a_command_begun_before_the_pause_is_rejected_by_its_recheck(app, rules, tenant, published, target,
                                                                     redis_conn, monkeypatch):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 1))
    rules.post(f"/{run.id}/execute-plan", CONFIRM)
    recheck = execution.recheck

    def paused_meanwhile(*args):  # the job marked its command sending, then the rule was paused
        assert rules.pause(published).status_code == 200
        return recheck(*args)

    monkeypatch.setattr(execution, "recheck", paused_meanwhile)
    work(app, redis_conn, DEFAULT)
    assert [(r["status"], r["reason"]) for r in execution_status(rules, run)["receipts"]] == [
        ("rejected", "rule_not_published")]
    db.session.expire_all()
    assert {c.assignee_member_id for c in db.session.scalars(select(Conversation))} == {None}


def test_the_sweep_reconciles_a_command_left_sending_and_queues_a_lost_one_again(app, rules, tenant, published,
                                                                                target, redis_conn):
    left_sending, lost, fresh = conversations = make_conversations(tenant, 3)
    run = complete_plan(tenant, published, target, conversations)
    rules.post(f"/{run.id}/execute-plan", CONFIRM)
    Queue(DEFAULT, connection=redis_conn).empty()  # the jobs are lost (Redis restarted)
    assert mark_sending(tenant.id, execution.command_key(run.id), left_sending.id)  # its worker died
    db.session.commit()
    stale = execution.STALE_AFTER.total_seconds() + 1
    age_receipt(run, left_sending, stale)
    age_receipt(run, lost, stale)
    age_receipt(run, fresh, stale - 5)
    assert "rules.execution.sweep" in wiring.tick_handlers()
    cron.tick()
    assert Queue(DEFAULT, connection=redis_conn).job_ids == [f"command-{run.id}-{lost.id}"]
    work(app, redis_conn, DEFAULT)
    outcome = {r["conversation_id"]: (r["status"], r["reason"]) for r in execution_status(rules, run)["receipts"]}
    assert outcome == {str(left_sending.id): ("uncertain", "interrupted"), str(lost.id): ("applied", None),
                       str(fresh.id): ("pending", None)}
    db.session.expire_all()
    assert db.session.get(Conversation, left_sending.id).assignee_member_id is None  # never resent


def test_a_target_deactivated_after_approval_rejects_its_command(app, rules, tenant, published, target, redis_conn):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 1))
    rules.post(f"/{run.id}/execute-plan", CONFIRM)
    db.session.execute(update(Member).where(Member.id == target.id).values(active=False))
    db.session.commit()
    work(app, redis_conn, DEFAULT)
    assert [(r["status"], r["reason"]) for r in execution_status(rules, run)["receipts"]] == [
        ("rejected", "rule_member_unavailable")]


@pytest.mark.parametrize("change, code", [("publisher_left", "publisher_invalid"),
                                          ("approver_left", "approver_invalid"),
                                          ("tenant_deactivated", "tenant_inactive"),
                                          ("target_unsynchronized", "rule_member_unavailable")])
def test_each_fact_rechecked_before_the_write_refuses_its_command(app, rules, tenant, published, target, admin,
                                                                   redis_conn, change, code):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 1))
    rules.post(f"/{run.id}/execute-plan", CONFIRM)
    if change == "publisher_left":  # the administrator who published and approved
        db.session.execute(update(Member).where(Member.id == admin.id).values(role="agent"))
    elif change == "approver_left":  # another administrator approved, then left
        approver = seat(tenant, "admin")
        db.session.execute(update(AutomationRun).where(AutomationRun.id == run.id)
                           .values(approved_by=approver.user_id))
        db.session.execute(update(Member).where(Member.id == approver.id).values(active=False))
    elif change == "tenant_deactivated":
        db.session.execute(update(Tenant).where(Tenant.id == tenant.id).values(active=False))
    else:
        db.session.execute(update(Member).where(Member.id == target.id).values(synchronized=False))
    db.session.commit()
    work(app, redis_conn, DEFAULT)
    assert [(r.status, r.reason) for r in db.session.scalars(select(AssignmentReceipt))] == [("rejected", code)]
    db.session.expire_all()
    assert {c.assignee_member_id for c in db.session.scalars(select(Conversation))} == {None}


@pytest.mark.parametrize("permission", [5, None, ["conversation.assign_plan"], "CONVERSATION.ASSIGN_PLAN"])
def test_a_permission_other_than_the_exact_text_is_not_confirmed(rules, tenant, published, target, permission):
    run = complete_plan(tenant, published, target, make_conversations(tenant, 1))
    response = rules.post(f"/{run.id}/execute-plan", {"confirm": True, "permission": permission})
    assert (response.status_code, response.get_json()["error"]["code"]) == (400, "permission_confirmation_required")
    assert db.session.scalar(select(AssignmentReceipt.id)) is None


def test_the_confirmation_is_checked_before_the_switches_and_the_run(app, rules, monkeypatch):
    unconfirmed = {"confirm": False, "permission": "conversation.assign_plan"}
    assert error(rules.post(f"/{uuid.uuid4()}/execute-plan", {"confirm": True})) == \
        (400, "required_field_missing", "permission")
    assert error(rules.post(f"/{uuid.uuid4()}/execute-plan", {**unconfirmed, "x": 1})) == (400, "invalid_json", "x")
    assert error(rules.post(f"/{uuid.uuid4()}/execute-plan", unconfirmed)) == \
        (400, "permission_confirmation_required", None)
    monkeypatch.setitem(app.config, "ATOMIC_ASSIGNMENT_ENABLED", False)
    assert error(rules.post(f"/{uuid.uuid4()}/execute-plan", unconfirmed)) == \
        (400, "permission_confirmation_required", None)
    assert error(rules.post(f"/{uuid.uuid4()}/execute-plan", CONFIRM)) == (503, "atomic_assignment_disabled", None)


def test_an_unknown_run_is_404(rules):
    response = rules.post(f"/{uuid.uuid4()}/execute-plan", CONFIRM)
    assert (response.status_code, response.get_json()["error"]["code"]) == (404, "not_found")
    assert rules.get(f"/{uuid.uuid4()}/execution-status").status_code == 404
