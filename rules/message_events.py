"""Message-triggered assignment: the `message_received` subscriber (document 2, "Events").

The event carries ids only. Each rule granted `message_event` gets one run per message, decided
like a preview (`rules.deciding`), and a planned decision one command applied at once through the
desk's atomic adapter; `sweep` queues again the events lost between a message's commit and the
queue. Skips, limits and outcomes: docs/decisions.md, "Message-triggered assignment".
"""
import logging
import uuid
from datetime import timedelta
from types import SimpleNamespace

from flask import current_app
from sqlalchemy import and_, func, or_, select, update

from core.api import ApiError
from core.clock import utcnow
from core.config import CONTINUOUS_ASSIGNMENT, switches_off
from core.db import db, end_reads, insert_unless_present
from core.metrics import RULE_RUNS
from desk import conversations
from desk.events import MESSAGE_RECEIVED, dispatch
from desk.models import Channel, Conversation, Message
from rules import execution
from rules.catalog import LIMITS
from rules.deciding import NOT_CLASSIFIED, Decision, Usage, decide, normalised
from rules.lookup import granted
from rules.models import AutomationRule, AutomationRun, AutomationRunItem

log = logging.getLogger(__name__)

MAX_AGE = timedelta(minutes=5)
TENANT_LIMIT = 100  # message-event runs queued or running per tenant
MODE = "message_event"
TRIGGER = "message_received"
LIMIT_CODE = "message_event_limit"
SUBSCRIBER = "rules.message_events.on_message_received"  # as listed in jobs.wiring
LOST_AFTER = timedelta(seconds=30)  # a message no rule has run on this long after it came: its event was lost
SWEPT_PER_TICK = 500


def on_message_received(tenant_id: str, conversation_id: str, message_id: str) -> int:
    """Run the tenant's message rules for one new public customer message; how many assigned."""
    if switches_off(current_app.config, CONTINUOUS_ASSIGNMENT):
        return _skip("switched_off", message_id)
    try:
        tenant, conversation_uuid, message_uuid = (uuid.UUID(tenant_id), uuid.UUID(conversation_id),
                                                   uuid.UUID(message_id))
    except (TypeError, ValueError):
        return _skip("invalid_ids", message_id)
    seen, reason = _read(tenant, conversation_uuid, message_uuid)
    if reason:
        return _skip(reason, message_id)
    assigned = 0
    for rule in _rules(tenant):
        assigned += _run_rule(tenant, rule.rule_id, rule.grant_id, rule.revision, rule.definition, seen) == "applied"
    db.session.commit()
    return assigned


def _skip(reason: str, message_id: str) -> int:
    """Log why the event assigns nothing (a code and the id, never the text)."""
    log.info("message_received %s skipped: %s", message_id, reason)
    db.session.rollback()
    return 0


# --- the event ----------------------------------------------------------------------------------

def _read(tenant_id: uuid.UUID, conversation_id: uuid.UUID, message_id: uuid.UUID) -> tuple[dict | None, str | None]:
    """What the rules need of the message and its conversation, or why the event is skipped: one
    statement reads the message (its first 4,000 characters), its conversation, whether its channel
    is live and whether a later public inbound message exists, all inside the tenant."""
    live = select(Channel.id).where(Channel.id == Message.channel_id, Channel.tenant_id == tenant_id,
                                    Channel.active.is_(True)).exists()
    row = db.session.execute(select(
        Message.id, Message.direction, Message.kind, Message.channel_id, Message.created_at,
        func.substr(Message.text, 1, LIMITS["keyword_text_chars"]).label("text"),
        _superseded().label("superseded"), live.label("channel_live"),
        Conversation.id.label("conversation_id"), Conversation.tenant_id, Conversation.channel_id.label("bound_to"),
        Conversation.status, Conversation.assignee_member_id, Conversation.bot_active, Conversation.updated_at)
        .join(Conversation, (Conversation.id == Message.conversation_id) & (Conversation.tenant_id == tenant_id))
        .where(Message.id == message_id, Message.tenant_id == tenant_id,
               Message.conversation_id == conversation_id)).first()
    if row is None:
        return None, "message_missing"
    if row.direction != "inbound" or row.kind != "public":
        return None, "not_public_inbound"
    if utcnow() - row.created_at > MAX_AGE:
        return None, "stale"
    if row.superseded:
        return None, "superseded"
    if row.channel_id is None or row.bound_to != row.channel_id or not row.channel_live:
        return None, "channel_changed"
    conversation = SimpleNamespace(id=row.conversation_id, tenant_id=row.tenant_id, status=row.status,
                                   assignee_member_id=row.assignee_member_id, bot_active=row.bot_active,
                                   updated_at=row.updated_at)
    assignee = row.assignee_member_id
    return {"conversation_id": row.conversation_id, "message_id": row.id,
            "snapshot": conversations.snapshot(conversation),
            "sample": {"id": str(row.conversation_id), "status": row.status, "text": row.text,
                       "assignee_ref": None if assignee is None else str(assignee)}}, None


def _superseded():
    """EXISTS a later public inbound message in the conversation of `Message` (same tenant)."""
    newer = Message.__table__.alias("newer")
    return select(newer.c.id).where(
        newer.c.tenant_id == Message.tenant_id, newer.c.conversation_id == Message.conversation_id,
        newer.c.direction == "inbound", newer.c.kind == "public",
        or_(newer.c.created_at > Message.created_at,
            and_(newer.c.created_at == Message.created_at, newer.c.id > Message.id))).exists()


def _rules(tenant_id: uuid.UUID) -> list:
    """The tenant's published rules granted `message_event` (`rules.lookup.granted`), oldest first."""
    return db.session.execute(granted(MODE).where(AutomationRule.tenant_id == tenant_id)
                              .order_by(AutomationRule.created_at, AutomationRule.id)).all()


# --- one rule -----------------------------------------------------------------------------------

def _run_rule(tenant_id: uuid.UUID, rule_id: uuid.UUID, grant_id: uuid.UUID, revision: int, definition: dict,
              seen: dict) -> str | None:
    """One rule on the message: its run, its item and, when planned, the command's outcome."""
    if definition["trigger"] != TRIGGER:
        return None
    now = utcnow()
    row = insert_unless_present(AutomationRun, ("rule_id", "message_id"), {
        "id": uuid.uuid4(), "tenant_id": tenant_id, "rule_id": rule_id, "revision": revision,
        "grant_id": grant_id, "kind": MODE, "mode": MODE, "executed": False, "status": "running",
        "message_id": seen["message_id"], "scanned": 0, "planned_count": 0, "created_at": now,
        "started_at": now})
    if row is None:
        db.session.commit()
        return _resume(tenant_id, rule_id, seen)
    run_id = row.id
    db.session.commit()
    if _in_flight(tenant_id) > TENANT_LIMIT:
        _end(run_id, "cancelled", state="skipped", code=LIMIT_CODE)
        log.info("message_received %s rule %s skipped: %s", seen["message_id"], rule_id, LIMIT_CODE)
        return None
    rule = normalised(definition)
    decision = _decision(tenant_id, run_id, rule, seen)
    run = SimpleNamespace(tenant_id=tenant_id, rule_id=rule_id, grant_id=grant_id, kind=MODE, approved_by=None)
    refusal = execution.recheck(run, uuid.UUID(decision.assignee_ref)) if decision.planned else None
    db.session.add(AutomationRunItem(
        tenant_id=tenant_id, run_id=run_id, conversation_id=seen["conversation_id"], planned=decision.planned,
        target_member_id=uuid.UUID(decision.assignee_ref) if decision.assignee_ref else None,
        reason=decision.reason, detail=decision.detail or None,
        snapshot=seen["snapshot"] if decision.planned else None))
    if not decision.planned:
        _end(run_id, "complete")
        return None
    if refusal:
        _end(run_id, "complete", planned=1, state="skipped", code=refusal)
        log.info("message_received %s rule %s skipped: %s", seen["message_id"], rule_id, refusal)
        return None
    key = execution.command_key(run_id)
    conversations.queue_commands(tenant_id, key, [
        (seen["conversation_id"], uuid.UUID(decision.assignee_ref), seen["snapshot"])])
    _end(run_id, "complete", planned=1, state="queued", executed=True)
    outcome = conversations.apply_command(tenant_id, key, seen["conversation_id"])
    execution.finish_if_final(tenant_id, run_id)  # after the assignment's commit: its summary
    return outcome


def _in_flight(tenant_id: uuid.UUID) -> int:
    """The tenant's message-event runs queued or running (this one included)."""
    return db.session.scalar(select(func.count()).select_from(AutomationRun).where(
        AutomationRun.tenant_id == tenant_id, AutomationRun.kind == MODE,
        AutomationRun.status.in_(("queued", "running"))))


def _decision(tenant_id: uuid.UUID, run_id: uuid.UUID, rule: dict, seen: dict) -> Decision:
    """The preview's decision on this one conversation; a semantic rule asks the model once with
    nothing held open, and its answered tokens are metered (committed) whatever follows."""
    sample = dict(seen["sample"])
    if "semantic" not in rule:
        return decide(rule, sample, None, Usage())
    end_reads()  # the run is committed; nothing is held while the model answers
    usage = Usage()
    try:
        decision = decide(rule, sample, None, usage)
    except ApiError as error:  # the model failed: nothing is assigned, the run says why
        decision = Decision(sample["id"], NOT_CLASSIFIED, detail={"error": error.code})
    if usage.meter(tenant_id, "semantic_routing", f"automation_run:{run_id}"):
        db.session.commit()
    return decision


def _end(run_id: uuid.UUID, status: str, planned: int = 0, state: str | None = None,
         code: str | None = None, executed: bool = False) -> None:
    """Finish the running run (with its item, added before) and commit."""
    ended = db.session.execute(update(AutomationRun).where(AutomationRun.id == run_id,
                                                           AutomationRun.status == "running")
                               .values(status=status, scanned=1, planned_count=planned, executed=executed,
                                       schedule_execution_state=state, schedule_execution_code=code,
                                       finished_at=utcnow())).rowcount
    db.session.commit()
    if ended:
        RULE_RUNS.labels(MODE, status).inc()


def _resume(tenant_id: uuid.UUID, rule_id: uuid.UUID, seen: dict) -> str | None:
    """A redelivered event: the run exists. Only a command left open (the job stopped between its
    commit and the adapter's) goes on, as any approved command does (`execution.execute_command`:
    recheck, then the adapter; a `sending` one is only looked up, never resent)."""
    run_id = db.session.scalar(select(AutomationRun.id).where(
        AutomationRun.tenant_id == tenant_id, AutomationRun.rule_id == rule_id,
        AutomationRun.message_id == seen["message_id"]))
    open_command = any(r.conversation_id == seen["conversation_id"] and r.status in ("pending", "sending")
                       for r in conversations.receipts(tenant_id, execution.command_key(run_id)))
    db.session.rollback()  # only read
    return execution.execute_command(run_id, seen["conversation_id"]) if open_command else None


# --- lost events --------------------------------------------------------------------------------

def sweep() -> int:
    """Tick handler: events lost between a message's commit and the queue (Redis failing right
    then) or dropped before a worker took them. Every newest public inbound message of a
    conversation, still on its channel, at least LOST_AFTER and at most MAX_AGE old (older ones
    would be skipped anyway), in a tenant with a rule granted `message_event` that has no run for
    it, gets this subscriber's job queued again under the event's own job id (a twin still
    waiting collapses; the (rule, message) dedup makes a repeat harmless). Reads only ids, through
    the conversations' activity index; returns how many jobs it queued."""
    if switches_off(current_app.config, CONTINUOUS_ASSIGNMENT):
        return 0
    now = utcnow()
    rules = granted(MODE).subquery()
    lost = db.session.execute(select(Message.tenant_id, Message.conversation_id, Message.id).distinct()
        .join(Conversation, (Conversation.id == Message.conversation_id)
              & (Conversation.tenant_id == Message.tenant_id) & (Conversation.channel_id == Message.channel_id))
        .join(rules, rules.c.tenant_id == Conversation.tenant_id)
        .where(Conversation.last_activity_at >= now - MAX_AGE,
               Message.direction == "inbound", Message.kind == "public",
               Message.created_at >= now - MAX_AGE, Message.created_at <= now - LOST_AFTER,
               ~_superseded(),
               ~select(AutomationRun.id).where(AutomationRun.rule_id == rules.c.rule_id,
                                               AutomationRun.message_id == Message.id).exists())
        .limit(SWEPT_PER_TICK)).all()
    db.session.rollback()  # only read
    for tenant_id, conversation_id, message_id in lost:
        dispatch(MESSAGE_RECEIVED, (SUBSCRIBER,), tenant_id=str(tenant_id),
                 conversation_id=str(conversation_id), message_id=str(message_id))
    if lost:
        log.warning("message_received: %d lost event(s) queued again", len(lost))
    return len(lost)
