"""Availability in the write (issue 35): with the tenant's policy on, a rule command whose target may
not receive it now ends `rejected` with a `reason_code` beside `reason`, checked in the write's own
transaction, and the conversation waits for that member; with the policy off, document 2 as it was."""
import uuid

import pytest
from sqlalchemy import select

from core.clock import utcnow
from core.db import db
from core.queue_names import DEFAULT, EVENTS
from desk import waiting
from desk.models import AssignmentReceipt, Conversation
from rules import execution
from tests.support.availability import lines, named, policy_on, present, queue
from tests.support.desk import browser_of, fresh
from tests.support.jobs import work
from tests.support.rule_runs import CONFIRM, complete_plan, execution_status, inbound, make_conversations, publish_rule
from tests.support.rules import KEYWORD, MESSAGE_EVENT, message_rule

RECEIPT_KEYS = {"conversation_id", "target_member_id", "status", "reason", "updated_at"}


def executed(app, rules, tenant, published, target, redis_conn, conversations=None):
    """A fresh plan of `conversations` (one new by default) to `target` approved and worked off;
    (run, its receipts as the API answers)."""
    run = complete_plan(tenant, published, target, conversations or make_conversations(tenant, 1))
    assert rules.post(f"/{run.id}/execute-plan", CONFIRM).status_code == 202
    work(app, redis_conn, DEFAULT)
    return run, execution_status(rules, run)["receipts"]


@pytest.mark.usefixtures("single_run_switches")
def test_with_the_policy_off_an_offline_target_is_assigned_as_document_2_says(app, rules, tenant, published, target,
                                                                             redis_conn):
    present(target, "offline")
    run, [receipt] = executed(app, rules, tenant, published, target, redis_conn)
    assert receipt["status"] == "applied" and set(receipt) == RECEIPT_KEYS
    assert queue() == []


@pytest.mark.usefixtures("single_run_switches")
@pytest.mark.parametrize("arrange, code", [
    (lambda member: present(member, "offline"), "agent_offline"),
    (lambda member: present(member, "away"), "agent_away"),
    (lambda member: member, "agent_offline"),  # never opened the workbench
    (lambda member: present(member, capacity=1), "agent_at_capacity"),
    (lambda member: present(member, leave=[{"from": "2000-01-01", "to": "2999-12-31"}]), "agent_on_leave"),
])
def test_with_the_policy_on_an_unavailable_target_is_rejected_with_its_reason_code_and_the_conversation_waits(
        app, rules, tenant, published, target, redis_conn, arrange, code):
    policy_on(tenant)
    arrange(target)
    busy, planned = make_conversations(tenant, 2)
    busy.assignee_member_id = target.id  # one open conversation the target holds already
    db.session.commit()
    run, [receipt] = executed(app, rules, tenant, published, target, redis_conn, [planned])
    assert (receipt["status"], receipt["reason"], receipt["reason_code"]) == ("rejected", "rule_member_unavailable",
                                                                               code)
    conversation_id = uuid.UUID(receipt["conversation_id"])
    assert fresh(db.session.get(Conversation, conversation_id)).assignee_member_id is None
    [waiting] = queue()
    assert (waiting.conversation_id, waiting.preferred_member_id, waiting.reason_code) == (conversation_id, target.id,
                                                                                         code)
    assert lines(conversation_id) == [("waiting", target.id, code)]


@pytest.mark.usefixtures("single_run_switches")
def test_an_available_target_is_assigned_and_the_receipt_keeps_the_spec_shape(app, rules, tenant, published, target,
                                                                              redis_conn):
    policy_on(tenant)
    present(target)
    run, [receipt] = executed(app, rules, tenant, published, target, redis_conn)
    assert receipt["status"] == "applied" and set(receipt) == RECEIPT_KEYS
    assert queue() == []


@pytest.mark.usefixtures("single_run_switches")
def test_presence_changing_between_plan_and_execution_rejects_and_never_assigns_wrongly(
        app, rules, tenant, published, target, redis_conn, monkeypatch):
    policy_on(tenant)
    present(target)
    run = complete_plan(tenant, published, target, make_conversations(tenant, 1))
    assert rules.post(f"/{run.id}/execute-plan", CONFIRM).status_code == 202
    recheck = execution.recheck

    def away_meanwhile(*args):  # the rules' recheck passed; the agent stepped away before the write
        verdict = recheck(*args)
        present(target, "away")
        return verdict

    monkeypatch.setattr(execution, "recheck", away_meanwhile)
    work(app, redis_conn, DEFAULT)
    [receipt] = execution_status(rules, run)["receipts"]
    assert (receipt["status"], receipt["reason_code"]) == ("rejected", "agent_away")
    assert {c.assignee_member_id for c in db.session.scalars(select(Conversation))} == {None}


@pytest.mark.usefixtures("single_run_switches")
def test_a_refused_conversation_reads_waiting_with_the_reason_in_its_thread(app, rules, tenant, published, target,
                                                                           admin, redis_conn):
    policy_on(tenant)
    named(present(target, "offline"), "李雷")
    run, [receipt] = executed(app, rules, tenant, published, target, redis_conn)
    page = browser_of(app, admin).get(f"/workbench/conversations/{receipt['conversation_id']}")
    assert "Waiting: 李雷 is offline" in page.get_data(as_text=True)


@pytest.mark.usefixtures("continuous_switches")
def test_a_message_triggered_run_refused_for_availability_writes_its_receipt_and_the_conversation_waits(
        app, client, rules, tenant, agent, channel, redis_conn):
    policy_on(tenant)
    present(agent, "away")
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    work(app, redis_conn, EVENTS)
    conversation_id = uuid.UUID(data["conversation_id"])
    [receipt] = db.session.scalars(select(AssignmentReceipt))
    assert (receipt.status, receipt.reason, receipt.reason_code, receipt.target_member_id) == (
        "rejected", "rule_member_unavailable", "agent_away", agent.id)
    assert db.session.get(Conversation, conversation_id).assignee_member_id is None
    assert [(w.conversation_id, w.preferred_member_id) for w in queue()] == [(conversation_id, agent.id)]


@pytest.mark.usefixtures("continuous_switches")
def test_a_message_triggered_run_assigns_an_available_target_with_the_policy_on(app, client, rules, tenant, agent,
                                                                               channel, redis_conn):
    policy_on(tenant)
    present(agent)
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)
    data = inbound(client, channel)
    work(app, redis_conn, EVENTS)
    assert fresh(db.session.get(Conversation, uuid.UUID(data["conversation_id"]))).assignee_member_id == agent.id
    assert [r.status for r in db.session.scalars(select(AssignmentReceipt))] == ["applied"]


@pytest.mark.usefixtures("single_run_switches")
def test_a_rule_command_applied_to_a_waiting_conversation_takes_it_out_of_the_queue(app, rules, tenant, published,
                                                                                     target, redis_conn):
    policy_on(tenant)
    [conversation] = make_conversations(tenant, 1)
    waiting.join(tenant.id, conversation.id, None, "agent_offline", None, utcnow())
    db.session.commit()
    present(target)
    run, [receipt] = executed(app, rules, tenant, published, target, redis_conn, [conversation])
    assert receipt["status"] == "applied" and queue() == []
