"""Message-triggered assignment: the `message_received` subscriber (document 2, "Events").

The event carries ids only. Each rule granted `message_event` gets one run per message, decided
like a preview (`rules.deciding`), and a planned decision one command applied at once through the
desk's atomic adapter; `sweep` queues again the events lost between a message's commit and the
queue. Skips, limits and outcomes: docs/decisions.md, "Message-triggered assignment".
"""
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta

from flask import current_app
from sqlalchemy import and_, bindparam, func, or_, select, update

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
    facts, reason = _read(tenant, conversation_uuid, message_uuid)
    if reason:
        return _skip(reason, message_id)
    assigned = 0
    for granted_rule in _rules(tenant):
        assigned += _run_rule(tenant, granted_rule, facts) == "applied"
    db.session.rollback()  # only read, when no rule ran
    return assigned


def _skip(reason: str, message_id: str) -> int:
    """Log why the event assigns nothing (a code and the id, never the text)."""
    log.info("message_received %s skipped: %s", message_id, reason)
    db.session.rollback()
    return 0


# --- the event ----------------------------------------------------------------------------------

def _superseded():
    """EXISTS a later public inbound message in the conversation of `Message` (same tenant)."""
    newer = Message.__table__.alias("newer")
    return select(newer.c.id).where(
        newer.c.tenant_id == Message.tenant_id, newer.c.conversation_id == Message.conversation_id,
        newer.c.direction == "inbound", newer.c.kind == "public",
        or_(newer.c.created_at > Message.created_at,
            and_(newer.c.created_at == Message.created_at, newer.c.id > Message.id))).exists()


def _in_flight(tenant_id):
    """The tenant's message-event runs committed `queued` or `running` (a count)."""
    return select(func.count()).select_from(AutomationRun).where(
        AutomationRun.tenant_id == tenant_id, AutomationRun.kind == MODE,
        AutomationRun.status.in_(("queued", "running"))).scalar_subquery()


# The subscriber's two reads, built once (the hot path of every inbound message: building them per
# call cost more than running them). The message (its first 4,000 characters), its conversation,
# whether its channel is live and whether a later public inbound message exists, all inside the
# tenant; then the tenant's rules granted `message_event` with its message-event runs in flight.
_MESSAGE_FACTS = select(
    Message.id, Message.direction, Message.kind, Message.channel_id, Message.created_at,
    func.substr(Message.text, 1, LIMITS["keyword_text_chars"]).label("text"),
    _superseded().label("superseded"),
    select(Channel.id).where(Channel.id == Message.channel_id, Channel.tenant_id == bindparam("p_tenant"),
                             Channel.active.is_(True)).exists().label("channel_live"),
    Conversation.id.label("conversation_id"), Conversation.tenant_id, Conversation.channel_id.label("bound_to"),
    Conversation.status, Conversation.assignee_member_id, Conversation.bot_active, Conversation.updated_at,
).join(Conversation, (Conversation.id == Message.conversation_id) & (Conversation.tenant_id == bindparam("p_tenant"))
       ).where(Message.id == bindparam("p_message"), Message.tenant_id == bindparam("p_tenant"),
               Message.conversation_id == bindparam("p_conversation"))
_GRANTED_RULES = granted(MODE).add_columns(_in_flight(bindparam("p_tenant")).label("in_flight")).where(
    AutomationRule.tenant_id == bindparam("p_tenant")).order_by(AutomationRule.created_at, AutomationRule.id)
_INSERT_ITEM = AutomationRunItem.__table__.insert()


def _read(tenant_id: uuid.UUID, conversation_id: uuid.UUID, message_id: uuid.UUID) -> tuple[dict | None, str | None]:
    """What the rules need of the message and its conversation (`_MESSAGE_FACTS`, one statement),
    or why the event is skipped."""
    row = db.session.connection().execute(_MESSAGE_FACTS, {
        "p_tenant": tenant_id, "p_conversation": conversation_id, "p_message": message_id}).first()
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
    assignee = row.assignee_member_id
    return {"conversation_id": row.conversation_id, "message_id": row.id,
            "snapshot": conversations.snapshot_of(
                tenant_id=row.tenant_id, conversation_id=row.conversation_id, assignee_member_id=assignee,
                bot_active=row.bot_active, status=row.status, updated_at=row.updated_at),
            "sample": {"id": str(row.conversation_id), "status": row.status, "text": row.text,
                       "assignee_ref": None if assignee is None else str(assignee)}}, None


def _rules(tenant_id: uuid.UUID) -> list:
    """The tenant's published rules granted `message_event` (`rules.lookup.granted`), oldest first,
    each with `in_flight`, the tenant's message-event runs in flight now (`_GRANTED_RULES`)."""
    return db.session.connection().execute(_GRANTED_RULES, {"p_tenant": tenant_id}).all()


# --- one rule -----------------------------------------------------------------------------------

def _run_rule(tenant_id: uuid.UUID, granted_rule, facts: dict) -> str | None:
    """One rule on the message: its run, its item and, when planned, the command's outcome.

    A keyword rule is decided without waiting on anything, so its whole run (run row, item,
    recheck, compare-and-swap, receipt, audit) is one transaction: nothing of it is ever seen
    half done, and a twin delivery waits on the run's unique key, then finds it and does nothing.
    A semantic rule commits its run `running` first, so nothing is held while the model answers."""
    if granted_rule.definition["trigger"] != TRIGGER:
        return None
    rule = normalised(granted_rule.definition)
    if "semantic" in rule:
        return _run_semantic(tenant_id, granted_rule, rule, facts)
    run = _Run(uuid.uuid4(), _run_columns(tenant_id, granted_rule, facts))
    if granted_rule.in_flight >= TENANT_LIMIT:  # this run is not in flight: it is written ended
        return _limited(granted_rule, facts, run)
    return _settle(tenant_id, granted_rule, facts, _decision(tenant_id, run.id, rule, facts), run)


def _run_semantic(tenant_id: uuid.UUID, granted_rule, rule: dict, facts: dict) -> str | None:
    """A semantic rule: the run committed `running` (counted against the tenant's limit, this one
    included), the model asked with nothing held, then the rest in one transaction."""
    now = utcnow()
    row = insert_unless_present(AutomationRun, ("rule_id", "message_id"), {
        **_run_columns(tenant_id, granted_rule, facts), "id": uuid.uuid4(), "status": "running", "scanned": 0,
        "planned_count": 0, "created_at": now, "started_at": now})
    if row is None:
        db.session.rollback()
        return None  # a redelivered event: the run is there
    db.session.commit()
    run = _Run(row.id)
    if db.session.scalar(select(_in_flight(tenant_id))) > TENANT_LIMIT:
        return _limited(granted_rule, facts, run)
    return _settle(tenant_id, granted_rule, facts, _decision(tenant_id, run.id, rule, facts), run)


def _decision(tenant_id: uuid.UUID, run_id: uuid.UUID, rule: dict, facts: dict) -> Decision:
    """The preview's decision on this one conversation; a semantic rule asks the model once with
    nothing held open, and its answered tokens are metered (committed) whatever follows."""
    sample = dict(facts["sample"])
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


def _limited(granted_rule, facts: dict, run: "_Run") -> None:
    """Over the tenant's limit: the run ends `cancelled`, skipped with `message_event_limit`."""
    if not run.end("cancelled", {"scanned": 1, "schedule_execution_state": "skipped",
                                 "schedule_execution_code": LIMIT_CODE}):
        db.session.rollback()
        return None
    db.session.commit()
    RULE_RUNS.labels(MODE, "cancelled").inc()
    log.info("message_received %s rule %s skipped: %s", facts["message_id"], granted_rule.rule_id, LIMIT_CODE)
    return None


def _settle(tenant_id: uuid.UUID, granted_rule, facts: dict, decision: Decision, run: "_Run") -> str | None:
    """The decision's consequences in one transaction: a planned target rechecked
    (`rules.execution.recheck`, the one recheck of every kind: a message-event run's continuing
    grant stands for an approver), applied at once through the desk's adapter
    (`desk.conversations.apply_now`), the run's outcome, its item and the execution's audit
    summary; all committed together, or nothing when the run was ended meanwhile."""
    target = uuid.UUID(decision.assignee_ref) if decision.assignee_ref else None
    authority = execution.Authority(tenant_id, granted_rule.rule_id, granted_rule.grant_id, MODE)
    verdict = execution.recheck(authority, target) if decision.planned else None
    refusal = verdict and verdict.refusal
    outcome = None
    if decision.planned and refusal is None:
        outcome = conversations.apply_now(tenant_id, execution.command_key(run.id), facts["conversation_id"],
                                          target, facts["snapshot"], verdict.availability)
    if not run.end("complete", {
            "scanned": 1, "planned_count": int(decision.planned), "executed": outcome is not None,
            "schedule_execution_state": "queued" if outcome else "skipped" if refusal else None,
            "schedule_execution_code": refusal, "execution_finished_at": utcnow() if outcome else None}):
        db.session.rollback()  # a twin wrote the run, or a sweep failed it meanwhile: that stands
        return None
    db.session.execute(_INSERT_ITEM, {
        "tenant_id": tenant_id, "run_id": run.id, "conversation_id": facts["conversation_id"],
        "planned": decision.planned, "target_member_id": target, "reason": decision.reason,
        "detail": decision.detail or None, "snapshot": facts["snapshot"] if decision.planned else None})
    if outcome:
        execution.audit_executed(authority, run.id, [outcome])
    db.session.commit()
    RULE_RUNS.labels(MODE, "complete").inc()
    if refusal:
        log.info("message_received %s rule %s skipped: %s", facts["message_id"], granted_rule.rule_id, refusal)
    return outcome


def _run_columns(tenant_id: uuid.UUID, granted_rule, facts: dict) -> dict:
    """The columns every message-event run of this rule and message starts with (no id)."""
    return {"tenant_id": tenant_id, "rule_id": granted_rule.rule_id, "revision": granted_rule.revision,
            "grant_id": granted_rule.grant_id, "kind": MODE, "mode": MODE, "executed": False,
            "message_id": facts["message_id"]}


@dataclass(frozen=True)
class _Run:
    """A message-event run to end. `new`: the columns of a keyword rule's run, not written yet; it
    is inserted already ended, once per (rule, message), in the transaction of its outcome (a twin
    waits on that key, then finds the run and writes nothing). Without `new`, a semantic rule's
    run committed `running`, ended by a conditional UPDATE, so a run the plans' sweep failed
    meanwhile keeps that outcome."""

    id: uuid.UUID
    new: dict | None = None

    def end(self, status: str, values: dict) -> bool:
        """Write the run's end (`finished_at` now); whether this call ended it. The caller commits."""
        now = utcnow()
        if self.new is None:
            return db.session.execute(update(AutomationRun).where(
                AutomationRun.id == self.id, AutomationRun.status == "running")
                .values(status=status, finished_at=now, **values)).rowcount == 1
        return insert_unless_present(AutomationRun, ("rule_id", "message_id"), {
            **self.new, **values, "id": self.id, "status": status, "created_at": now, "started_at": now,
            "finished_at": now}) is not None


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
