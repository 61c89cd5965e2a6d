"""Message-triggered assignment: the message_received subscriber, through the signed inbound endpoint
and a real worker on the events queue, or called as the worker calls it."""
import json
import uuid
from datetime import timedelta

import pytest
from rq import Queue
from sqlalchemy import event, func, select, update

from core.audit import AuditEntry
from core.clock import utcnow
from core.db import db
from core.queue_names import DEFAULT, EVENTS
from desk.channels import create_channel
from desk.models import AiPointsEntry, AssignmentReceipt, Conversation, Member, Message
from jobs import cron, wiring
from rules import execution, message_events, plans
from rules.execution import command_key
from rules.models import AutomationGrant, AutomationRun, AutomationRunItem
from tests.conftest import seat, worker_killed_once
from tests.support.jobs import work
from tests.support.rule_runs import inbound, publish_rule
from tests.support.rules import (CONTINUOUS_SWITCHES, KEYWORD, MESSAGE_EVENT, READ_ONLY, SCHEDULED, SEMANTIC,
                                 message_rule, semantic_rule, weekly_rule)

pytestmark = pytest.mark.usefixtures("continuous_switches", "availability_both_ways")


def run_directly(tenant, data: dict) -> int:
    """Call the subscriber as its job does (string ids)."""
    return message_events.on_message_received(str(tenant.id), data["conversation_id"], data["message_id"])


def conversation(data: dict) -> Conversation:
    db.session.expire_all()
    return db.session.get(Conversation, uuid.UUID(data["conversation_id"]))


def runs() -> list[AutomationRun]:
    db.session.expire_all()
    return list(db.session.scalars(select(AutomationRun).order_by(AutomationRun.created_at)))


def items() -> list[AutomationRunItem]:
    return list(db.session.scalars(select(AutomationRunItem)))


def receipts() -> list[AssignmentReceipt]:
    db.session.expire_all()
    return list(db.session.scalars(select(AssignmentReceipt)))


def count(model) -> int:
    return db.session.scalar(select(func.count()).select_from(model))


# --- keyword rules, end to end ------------------------------------------------------------------

def test_a_keyword_match_assigns_through_the_adapter(app, client, rules, tenant, agent, channel, redis_conn):
    rule_id = publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    work(app, redis_conn, EVENTS)
    assert conversation(data).assignee_member_id == agent.id
    (run,) = runs()
    assert (run.kind, run.mode, run.status, run.executed, run.planned_count, run.schedule_execution_state) == (
        "message_event", "message_event", "complete", True, 1, "queued")
    assert (str(run.rule_id), str(run.message_id)) == (rule_id, data["message_id"])
    (receipt,) = receipts()
    assert (receipt.command_key, receipt.status, receipt.target_member_id) == (command_key(run.id), "applied", agent.id)
    (item,) = items()
    assert (item.planned, item.reason, item.detail, item.target_member_id) == (
        True, "keyword_matched", {"keyword": "refund"}, agent.id)
    [entry] = db.session.scalars(select(AuditEntry).where(AuditEntry.action == "automation.run_executed"))
    assert entry.summary == {"run_id": str(run.id), "rule_id": rule_id, "kind": "message_event", "commands": 1,
                             "outcomes": {"applied": 1}}
    stored = json.dumps([item.detail, item.snapshot, receipt.snapshot, run.schedule_execution_code, entry.summary])
    assert "Zebra" not in stored


def test_no_keyword_assigns_nothing(app, client, rules, tenant, agent, channel, redis_conn):
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel, text="Where is my parcel?")
    work(app, redis_conn, EVENTS)
    assert conversation(data).assignee_member_id is None
    (run,) = runs()
    assert (run.status, run.executed, run.planned_count) == ("complete", False, 0)
    assert [item.reason for item in items()] == ["no_keyword_matched"]
    assert receipts() == []


def test_only_the_first_4000_characters_are_read_for_keywords(app, client, rules, tenant, agent, channel):
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel, text="hello")  # the endpoint takes 4,000 at most; stored ones may be longer
    db.session.execute(update(Message).values(text="x" * 3995 + "REFUND refund"))
    db.session.commit()
    assert run_directly(tenant, data) == 0
    assert [item.reason for item in items()] == ["no_keyword_matched"]


def test_the_event_carries_ids_only(app, client, rules, tenant, agent, channel, redis_conn):
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    queue = Queue(EVENTS, connection=redis_conn)
    ids = {"tenant_id": str(tenant.id), "conversation_id": data["conversation_id"],
           "message_id": data["message_id"]}
    (notify,) = queue.get_jobs()  # the inbound request queued the subscriber's job itself
    assert notify.args == ("message_received", "rules.message_events.on_message_received")
    assert notify.kwargs == ids
    assert "Zebra" not in json.dumps([notify.args, notify.kwargs, notify.description])
    work(app, redis_conn, EVENTS)
    assert conversation(data).assignee_member_id == agent.id


# --- semantic rules -----------------------------------------------------------------------------

def test_a_semantic_match_assigns_with_one_masked_metered_call(app, client, rules, tenant, agent, channel,
                                                               model_server, redis_conn):
    publish_rule(rules, semantic_rule(agent), MESSAGE_EVENT + SEMANTIC)
    model_server.answer_json({"label": "billing", "confidence": 0.95}, input_tokens=700, output_tokens=20)
    data = inbound(client, channel, text="charge on my card, mail me at ann@example.com")
    work(app, redis_conn, EVENTS)
    assert conversation(data).assignee_member_id == agent.id
    assert len(model_server.received) == 1
    assert "ann@example.com" not in json.dumps([request.body for request in model_server.received])
    (run,) = runs()
    assert [(item.reason, item.detail) for item in items()] == [
        ("semantic_matched", {"label": "billing", "confidence": 0.95})]
    entry = db.session.scalar(select(AiPointsEntry))
    assert (entry.kind, entry.input_tokens, entry.output_tokens, entry.reference) == (
        "semantic_routing", 700, 20, f"automation_run:{run.id}")
    assert [r.status for r in receipts()] == ["applied"]


def test_a_semantic_answer_below_the_threshold_assigns_nothing_but_is_metered(app, client, rules, tenant, agent,
                                                                              channel, model_server):
    publish_rule(rules, semantic_rule(agent), MESSAGE_EVENT + SEMANTIC)
    model_server.answer_json({"label": "billing", "confidence": 0.5}, input_tokens=600, output_tokens=30)
    data = inbound(client, channel, text="maybe billing")
    assert run_directly(tenant, data) == 0
    assert conversation(data).assignee_member_id is None
    assert [item.reason for item in items()] == ["semantic_below_threshold"]
    assert receipts() == []
    assert db.session.scalar(select(func.sum(AiPointsEntry.input_tokens))) == 600


def test_a_model_failure_assigns_nothing(app, client, rules, tenant, agent, channel, model_server):
    publish_rule(rules, semantic_rule(agent), MESSAGE_EVENT + SEMANTIC)
    for _ in range(3):
        model_server.answer_status(500)
    data = inbound(client, channel, text="billing")
    assert run_directly(tenant, data) == 0
    assert [item.reason for item in items()] == ["semantic_not_classified"]
    assert [run.status for run in runs()] == ["complete"] and receipts() == []


def test_a_worker_killed_mid_run_leaves_it_failed_by_the_sweep_and_never_replayed(app, app_config, client, rules,
                                                                                 tenant, agent, channel, model_server,
                                                                                 redis_conn, monkeypatch):
    publish_rule(rules, semantic_rule(agent), MESSAGE_EVENT + SEMANTIC)
    model_server.answer_json({"label": "billing", "confidence": 0.95}, delay=30)
    data = inbound(client, channel, text="billing")
    worker_killed_once(app_config, lambda: model_server.received, MODEL_BASE_URL=model_server.url,
                       MODEL_NAME="test-model", MODEL_API_KEY="sk-test-key",
                       **{switch: "1" for switch in CONTINUOUS_SWITCHES})  # killed while the model is asked
    assert [run.status for run in runs()] == ["running"]  # never marked successful
    later = utcnow() + plans.STUCK_AFTER + timedelta(seconds=1)
    monkeypatch.setattr(plans, "utcnow", lambda: later)
    assert plans.sweep() == 1
    assert [run.status for run in runs()] == ["failed"]
    assert message_events.sweep() == 0  # the message has its run: not replayed
    work(app, redis_conn, EVENTS)
    assert conversation(data).assignee_member_id is None and receipts() == []
    assert len(model_server.received) == 1


# --- what never runs ----------------------------------------------------------------------------

@pytest.mark.parametrize("switch", CONTINUOUS_SWITCHES)
def test_any_switch_off_assigns_nothing(app, client, rules, tenant, agent, channel, monkeypatch, switch):
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    monkeypatch.setitem(app.config, switch, False)
    assert run_directly(tenant, data) == 0
    assert runs() == [] and conversation(data).assignee_member_id is None


def test_read_only_and_scheduled_grants_assign_nothing(app, client, rules, tenant, agent, channel, redis_conn):
    publish_rule(rules, message_rule(agent), READ_ONLY + KEYWORD, mode=None)
    publish_rule(rules, weekly_rule(agent), SCHEDULED, mode="scheduled")
    data = inbound(client, channel)
    work(app, redis_conn, EVENTS)
    assert runs() == [] and receipts() == []
    assert conversation(data).assignee_member_id is None


def test_a_message_older_than_5_minutes_is_skipped(app, client, rules, tenant, agent, channel, redis_conn):
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    db.session.execute(update(Message).where(Message.id == uuid.UUID(data["message_id"]))
                       .values(created_at=utcnow() - timedelta(minutes=5, seconds=1)))
    db.session.commit()
    work(app, redis_conn, EVENTS)
    assert runs() == [] and conversation(data).assignee_member_id is None


def test_a_message_superseded_by_a_later_one_is_skipped(app, client, rules, tenant, agent, channel, redis_conn):
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    first = inbound(client, channel)
    second = inbound(client, channel, text="refund still?")
    assert first["conversation_id"] == second["conversation_id"]
    assert run_directly(tenant, first) == 0
    assert runs() == []
    work(app, redis_conn, EVENTS)  # both events: only the later message runs the rule
    assert [str(run.message_id) for run in runs()] == [second["message_id"]]
    assert conversation(second).assignee_member_id == agent.id


def test_a_conversation_moved_to_another_channel_is_skipped(app, client, rules, tenant, agent, channel):
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    other, _ = create_channel(tenant.id, "Other")
    db.session.execute(update(Conversation).where(Conversation.id == uuid.UUID(data["conversation_id"]))
                       .values(channel_id=other.id))
    db.session.commit()
    assert run_directly(tenant, data) == 0
    assert runs() == []


def test_a_private_note_or_another_tenants_ids_run_nothing(app, client, rules, tenant, other_tenant, agent,
                                                           channel):
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    assert message_events.on_message_received(str(other_tenant.id), data["conversation_id"],
                                              data["message_id"]) == 0
    db.session.execute(update(Message).values(kind="private_note"))
    db.session.commit()
    assert run_directly(tenant, data) == 0
    assert message_events.on_message_received("t-1", "c-1", "m-1") == 0
    assert runs() == []


# --- dedup, limit, overwrite, recheck -----------------------------------------------------------

def test_the_same_event_twice_makes_one_run_and_one_receipt(app, client, rules, tenant, agent, channel,
                                                            redis_conn):
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    work(app, redis_conn, EVENTS)
    from desk.events import emit_message_received
    emit_message_received(tenant.id, uuid.UUID(data["conversation_id"]), uuid.UUID(data["message_id"]))
    work(app, redis_conn, EVENTS)
    assert run_directly(tenant, data) == 0
    assert len(runs()) == 1 and [r.status for r in receipts()] == ["applied"]


def stopped_before_its_commit(app, client, rules, tenant, agent, channel, monkeypatch) -> dict:
    """A message whose subscriber stopped inside its one transaction, after the compare-and-swap
    and the receipt, before the commit (as a killed worker's connection does, it is rolled back);
    the message's ids."""
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)

    def stopped(*args):
        raise RuntimeError("worker stopped")

    monkeypatch.setattr(message_events.execution, "audit_executed", stopped)
    with pytest.raises(RuntimeError):
        run_directly(tenant, data)
    db.session.rollback()
    monkeypatch.undo()
    for name in CONTINUOUS_SWITCHES:
        monkeypatch.setitem(app.config, name, True)
    return data


def test_a_subscriber_stopped_before_its_commit_leaves_nothing_and_the_event_runs_again(
        app, client, rules, tenant, agent, channel, monkeypatch):
    data = stopped_before_its_commit(app, client, rules, tenant, agent, channel, monkeypatch)
    assert (runs(), receipts(), items(), conversation(data).assignee_member_id) == ([], [], [], None)
    assert run_directly(tenant, data) == 1
    assert [r.status for r in receipts()] == ["applied"] and len(runs()) == 1 and len(items()) == 1


def test_a_message_whose_subscriber_stopped_before_its_commit_is_assigned_after_the_sweep(
        app, client, rules, tenant, agent, channel, monkeypatch, redis_conn):
    data = stopped_before_its_commit(app, client, rules, tenant, agent, channel, monkeypatch)
    Queue(EVENTS, connection=redis_conn).empty()  # its job is gone with the worker
    _age(data, message_events.LOST_AFTER.total_seconds() + 5)
    cron.tick()  # no run for the message: the sweep queues its event again
    work(app, redis_conn, EVENTS)
    assert [r.status for r in receipts()] == ["applied"]
    assert conversation(data).assignee_member_id == agent.id


def test_a_keyword_assignment_is_one_transaction_of_at_most_8_statements(app, client, rules, tenant, agent,
                                                                        channel, availability_both_ways):
    """Eight with the availability policy off; with it on, one more: the target's availability under
    its row lock."""
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    counted = {"statements": 0, "commits": 0}

    def statement(*args):
        counted["statements"] += 1

    def commit(*args):
        counted["commits"] += 1

    ids = (str(tenant.id), data["conversation_id"], data["message_id"])
    db.session.remove()  # start as the job does: no connection held
    event.listen(db.engine, "after_cursor_execute", statement)
    event.listen(db.engine, "commit", commit)
    try:
        assert message_events.on_message_received(*ids) == 1
    finally:
        event.remove(db.engine, "after_cursor_execute", statement)
        event.remove(db.engine, "commit", commit)
    most = 8 if availability_both_ways == "policy off" else 9
    assert counted["commits"] == 1 and counted["statements"] <= most, counted
    assert [r.status for r in receipts()] == ["applied"] and conversation(data).assignee_member_id == agent.id


def _busy_runs(tenant, rule_id: str, how_many: int) -> None:
    grant_id = db.session.scalar(select(AutomationGrant.id).where(AutomationGrant.rule_id == uuid.UUID(rule_id)))
    db.session.add_all(AutomationRun(tenant_id=tenant.id, rule_id=uuid.UUID(rule_id), revision=1, grant_id=grant_id,
                                     kind="message_event", mode="message_event", status="running")
                       for _ in range(how_many))
    db.session.commit()


def test_at_most_100_message_event_runs_pending_or_running_per_tenant(app, client, rules, tenant, agent, channel):
    rule_id = publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    _busy_runs(tenant, rule_id, 99)
    first = inbound(client, channel)
    assert run_directly(tenant, first) == 1  # the 100th runs
    _busy_runs(tenant, rule_id, 1)
    second = inbound(client, channel, customer="c-2")
    assert run_directly(tenant, second) == 0
    skipped = db.session.scalar(select(AutomationRun).where(
        AutomationRun.message_id == uuid.UUID(second["message_id"])))
    assert (skipped.status, skipped.schedule_execution_state, skipped.schedule_execution_code) == (
        "cancelled", "skipped", "message_event_limit")
    assert conversation(second).assignee_member_id is None


@pytest.mark.parametrize("overwrite", [False, True])
def test_overwrite_assigned_decides_whether_an_assignee_is_replaced(app, client, rules, tenant, agent, channel,
                                                                    overwrite):
    publish_rule(rules, message_rule(agent, overwrite_assigned=overwrite), MESSAGE_EVENT + KEYWORD)
    colleague = seat(tenant, "agent")
    data = inbound(client, channel, text="hello")
    db.session.execute(update(Conversation).values(assignee_member_id=colleague.id))
    db.session.commit()
    later = inbound(client, channel)
    assert run_directly(tenant, later) == int(overwrite)
    assert conversation(data).assignee_member_id == (agent.id if overwrite else colleague.id)
    assert [item.reason for item in items()] == ["keyword_matched" if overwrite else "already_assigned"]


@pytest.mark.parametrize("change, code", [("republish", "grant_replaced"), ("pause", "rule_not_published"),
                                          ("agent_left", "rule_member_unavailable")])
def test_a_recheck_failing_after_the_decision_skips_the_command(app, client, rules, tenant, agent, channel,
                                                                monkeypatch, change, code):
    rule_id = publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    decide = message_events._decision

    def meanwhile(*args):
        decision = decide(*args)
        if change == "republish":
            assert rules.publish(rule_id, READ_ONLY + KEYWORD, expected=1).status_code == 200
        elif change == "pause":
            assert rules.pause(rule_id).status_code == 200
        else:
            db.session.execute(update(Member).where(Member.id == agent.id).values(active=False))
            db.session.commit()
        return decision

    monkeypatch.setattr(message_events, "_decision", meanwhile)
    assert run_directly(tenant, data) == 0
    (run,) = runs()
    assert (run.status, run.executed, run.schedule_execution_state, run.schedule_execution_code) == (
        "complete", False, "skipped", code)
    assert receipts() == [] and conversation(data).assignee_member_id is None


# --- lost events --------------------------------------------------------------------------------

def _age(data: dict, seconds: float) -> None:
    """Make the message (and its conversation's activity) `seconds` old."""
    moment = utcnow() - timedelta(seconds=seconds)
    db.session.execute(update(Message).where(Message.id == uuid.UUID(data["message_id"])).values(created_at=moment))
    db.session.execute(update(Conversation).where(Conversation.id == uuid.UUID(data["conversation_id"]))
                       .values(last_activity_at=moment))
    db.session.commit()


def test_a_message_whose_event_was_lost_is_assigned_after_the_sweep(app, client, rules, tenant, agent, channel,
                                                                     redis_conn):
    assert message_events.SUBSCRIBER in wiring.subscribers("message_received")
    assert "rules.message_events.sweep" in wiring.tick_handlers()
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    Queue(EVENTS, connection=redis_conn).empty()  # Redis lost the event
    _age(data, message_events.LOST_AFTER.total_seconds() + 5)
    cron.tick()
    (job,) = Queue(EVENTS, connection=redis_conn).get_jobs()
    assert job.kwargs == {"tenant_id": str(tenant.id), "conversation_id": data["conversation_id"],
                          "message_id": data["message_id"]}  # ids only, as the event's own job
    work(app, redis_conn, EVENTS)
    assert conversation(data).assignee_member_id == agent.id
    cron.tick()  # handled: nothing queued again
    assert Queue(EVENTS, connection=redis_conn).count == 0


@pytest.mark.parametrize("case", ["handled", "too_recent", "too_old", "superseded", "no_message_rule",
                                  "switched_off"])
def test_the_sweep_leaves_other_messages_alone(app, client, rules, tenant, agent, channel, redis_conn,
                                               monkeypatch, case):
    mode = "plan_only" if case == "no_message_rule" else "message_event"
    publish_rule(rules, message_rule(agent), (READ_ONLY if mode == "plan_only" else MESSAGE_EVENT) + KEYWORD, mode)
    data = inbound(client, channel)
    if case == "handled":
        work(app, redis_conn, EVENTS)
    Queue(EVENTS, connection=redis_conn).empty()
    age = {"too_recent": 10, "too_old": message_events.MAX_AGE.total_seconds() + 5}.get(case, 40)
    _age(data, age)
    if case == "superseded":
        inbound(client, channel, text="a later message")
        Queue(EVENTS, connection=redis_conn).empty()
        _age(data, 40)
    if case == "switched_off":
        monkeypatch.setitem(app.config, "ATOMIC_ASSIGNMENT_ENABLED", False)
    assert message_events.sweep() == 0
    assert Queue(EVENTS, connection=redis_conn).count == 0
