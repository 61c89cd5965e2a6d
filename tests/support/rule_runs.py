"""Runs of automation rules as the tests make and drive them: conversations to plan over, plans
requested or written complete, their execution, and customer messages that trigger rules."""
import uuid
from datetime import datetime, timedelta

from sqlalchemy import update

from core.clock import utcnow
from core.db import db
from core.queue_names import DEFAULT
from desk.conversations import snapshot
from desk.models import AssignmentReceipt, Channel, Conversation, Customer, Member, Message
from rules import execution
from rules.models import AutomationRule, AutomationRun, AutomationRunItem
from tests.support.channels import payload, send
from tests.support.jobs import work
from tests.support.rules import RulesApi

CONFIRM = {"confirm": True, "permission": "conversation.assign_plan"}
SECRET_TEXT = "Zebra-7731 I want a REFUND for order 42"


def make_conversations(tenant, count: int, first: int = 0) -> list[Conversation]:
    """`count` conversations on a new channel, each with its own customer (numbered from `first`);
    committed."""
    channel = Channel(tenant_id=tenant.id, name="Chat", secret_encrypted="x")
    db.session.add(channel)
    db.session.flush()
    made = []
    for n in range(first, first + count):
        customer = Customer(tenant_id=tenant.id, external_id=f"c-{n}", name=f"Customer {n}")
        db.session.add(customer)
        db.session.flush()
        conversation = Conversation(tenant_id=tenant.id, customer_id=customer.id, channel_id=channel.id)
        db.session.add(conversation)
        made.append(conversation)
    db.session.commit()
    return made


def complete_plan(tenant, rule_id: str, target: Member, conversations: list[Conversation],
                  **changes) -> AutomationRun:
    """A complete plan of the published rule assigning every conversation to `target`."""
    rule = db.session.get(AutomationRule, uuid.UUID(rule_id))
    values = {"status": "complete", "finished_at": utcnow(), **changes}
    run = AutomationRun(tenant_id=tenant.id, rule_id=rule.id, revision=rule.active_revision,
                        grant_id=rule.grant_id, kind="manual", scanned=len(conversations),
                        planned_count=len(conversations), **values)
    db.session.add(run)
    db.session.flush()
    for conversation in conversations:
        db.session.add(AutomationRunItem(tenant_id=tenant.id, run_id=run.id, conversation_id=conversation.id,
                                         planned=True, target_member_id=target.id, reason="slot_matched",
                                         snapshot=snapshot(conversation)))
    db.session.commit()
    return run


def execution_status(rules: RulesApi, run) -> dict:
    """The run's execution status as GET execution-status answers it."""
    return rules.get(f"/{run.id}/execution-status").get_json()["data"]


def executed_with_one_changed(app, rules: RulesApi, tenant, published: str, target: Member, redis_conn):
    """A two-conversation plan, the second changed after planning, approved and worked off;
    (run, first, second)."""
    first, second = make_conversations(tenant, 2)
    run = complete_plan(tenant, published, target, [first, second])
    db.session.execute(update(Conversation).where(Conversation.id == second.id).values(status="pending"))
    db.session.commit()
    rules.post(f"/{run.id}/execute-plan", CONFIRM)
    work(app, redis_conn, DEFAULT)
    return run, first, second


def age_receipt(run, conversation: Conversation, seconds: float) -> None:
    """Make the command's receipt look unchanged for `seconds`."""
    db.session.execute(update(AssignmentReceipt).where(
        AssignmentReceipt.command_key == execution.command_key(run.id),
        AssignmentReceipt.conversation_id == conversation.id).values(updated_at=utcnow() - timedelta(seconds=seconds)))
    db.session.commit()


def talk(tenant, channel, text: str | None = "hello", *, status: str = "open", assignee: Member | None = None,
         minutes_ago: float = 0, mapped: bool = True) -> Conversation:
    """A conversation whose last activity was `minutes_ago`, with one public inbound message."""
    moment = utcnow() - timedelta(minutes=minutes_ago)
    customer = Customer(tenant_id=tenant.id, name="Customer")
    db.session.add(customer)
    db.session.flush()
    conversation = Conversation(tenant_id=tenant.id, customer_id=customer.id,
                                channel_id=channel.id if mapped else None, status=status,
                                assignee_member_id=assignee.id if assignee else None,
                                last_activity_at=moment)
    db.session.add(conversation)
    db.session.flush()
    if text is not None:
        say(conversation, text, moment)
    db.session.commit()
    return conversation


def say(conversation: Conversation, text: str, moment: datetime | None = None, direction: str = "inbound",
        kind: str = "public") -> None:
    """Add a message to a conversation (committed)."""
    db.session.add(Message(tenant_id=conversation.tenant_id, conversation_id=conversation.id,
                           channel_id=conversation.channel_id, direction=direction, kind=kind, text=text,
                           created_at=moment or utcnow()))
    db.session.commit()


def plan(rules: RulesApi, rule_id: str, app, redis_conn) -> dict:
    """Request a plan, let a worker generate it; the run as GET rule-runs shows it."""
    response = rules.post(f"/{rule_id}/rule-plan", {})
    assert response.status_code == 202, response.get_json()
    work(app, redis_conn, DEFAULT)
    runs = rules.get(f"/{rule_id}/rule-runs").get_json()["data"]["runs"]
    assert runs[0]["run_id"] == response.get_json()["data"]["run_id"]
    return runs[0]


def publish_rule(rules: RulesApi, definition: dict, permissions: list, mode: str | None = "message_event") -> str:
    """Save and publish a rule in execution `mode` (none: the default mode); its id."""
    rule_id = rules.create(definition)
    extra = {} if mode is None else {"execution_mode": mode}
    response = rules.publish(rule_id, permissions, **extra)
    assert response.status_code == 200, response.get_json()
    return rule_id


def inbound(client, channel, text: str = SECRET_TEXT, message_id: str | None = None,
            customer: str = "c-1") -> dict:
    """POST a signed customer message; its ids (the event is queued)."""
    response = send(client, channel, payload(message_id=message_id or uuid.uuid4().hex, external_id=customer,
                                             text=text))
    assert response.status_code == 201, response.get_json()
    return response.get_json()["data"]
