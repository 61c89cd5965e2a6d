"""Read-only plans of published rules (document 2, "Run and plan", "Execution details" 1-3).

A plan (mode plan_only, executed false) says what a published rule would do now with the tenant's
most recently active mapped conversations; it assigns nothing. POST /{rule_id}/rule-plan stores a
queued manual run under the rule's current grant and queues `jobs.tasks.plan_rule`; the job claims
the run with one conditional UPDATE (so a second delivery does nothing), reads, asks the model
with no transaction open, then writes one item per scanned conversation and the run's outcome.

Decisions (docs/decisions.md, "Plans"):
- Checks of POST rule-plan, first problem wins: unknown body properties (400 invalid_json), the
  rule (404 for a foreign or missing one), the planning switch (503 planning_disabled), a current
  grant (409 rule_not_published), one plan per tenant per minute (429 plan_rate_limited with
  Retry-After). Manual plans of one slot time may repeat (once a minute); only scheduled runs are
  unique per rule and slot time.
- A weekly rule plans for the next slot start after now (Beijing time, stored in UTC), with that
  slot's assignee; the other triggers plan for the rule's assignee_ref.
- The scan: the 100 conversations with a channel, most recent activity first (then id); when more
  exist, when the 45-second budget runs out or a read fails, the run is partial. Per conversation
  the preview's decisions apply (rules.preview); the text read is the first 4,000 characters of
  the newest public inbound message, read only when the rule has a keyword or semantic filter and
  the conversation is not excluded by status or assignee.
- Semantic: more than 10 candidates classifies nothing; a model failure stops classifying. The
  tokens of answered calls are metered (kind semantic_routing) before anything else is written,
  whatever the outcome. A partial semantic plan plans nothing (its items keep their reasons,
  the planned ones become plan_incomplete).
- A run whose rule no longer holds its grant (replaced or paused), or whose planning switch went
  off, is cancelled; the reason goes to the audit entry `automation.plan_cancelled`.
- The sweep (a tick handler): running longer than STUCK_AFTER (the job's timeout and a margin)
  is failed, never retried; a manual run queued for more than 15 minutes is cancelled.
"""
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from flask import current_app
from sqlalchemy import func, select, update
from sqlalchemy.exc import SQLAlchemyError

from core import audit
from core.api import ApiError
from core.clock import iso, utcnow
from core.db import db, end_reads
from core.guards import only_properties
from core.limits import hit_fixed_window
from core.redis import get_redis
from desk.conversations import snapshot
from desk.models import Conversation, Message
from desk.points import record_use
from rules import service
from rules.catalog import LIMITS
from rules.models import AutomationRun, AutomationRunItem, AutomationRuleRevision
from rules.preview import Decision, Usage, _cap, _decide, _excluded, _slot_in_effect, _slot_starts, _week_start

SCAN_LIMIT = 100
BUDGET_SECONDS = 45.0
SEMANTIC_CANDIDATES = 10
RUNS_LISTED = 30
PLANS_PER_MINUTE = 1
JOB_TIMEOUT = 120  # seconds RQ gives a plan job: the budget and the reads already under way
STUCK_AFTER = timedelta(seconds=180)  # running longer than this: the worker died
QUEUED_MANUAL_LIMIT = timedelta(minutes=15)
NO_TEXT = "no_public_inbound_message"
READ_FAILED = "read_failed"
OVER_LIMIT = "semantic_over_limit"
NOT_CLASSIFIED = "semantic_not_classified"
INCOMPLETE = "plan_incomplete"


@dataclass
class Seen:
    """One scanned conversation: what the plan read of it (never the text) and the decision."""

    conversation_id: uuid.UUID
    sample: dict  # the preview's sample shape: id, status, assignee_ref, and text while deciding
    snapshot: dict
    decision: Decision | None = None


# --- POST /{rule_id}/rule-plan ------------------------------------------------------------------

def request_plan(tenant_id: uuid.UUID, actor_id: uuid.UUID, rule_id: uuid.UUID, body: dict) -> AutomationRun:
    """Store a queued manual plan of the published rule (flush only; the view commits, then
    enqueues `jobs.tasks.plan_rule`)."""
    only_properties(body, ())
    service._get_rule(tenant_id, rule_id)
    if not current_app.config["AUTOMATION_PLANNING_ENABLED"]:
        raise ApiError("planning_disabled", 503)
    grant = service.current_grant(tenant_id, rule_id)
    if grant is None:
        raise ApiError("rule_not_published", 409)
    definition = _definition(rule_id, grant.revision)
    window = hit_fixed_window(get_redis(), f"rules:plan:{tenant_id}", PLANS_PER_MINUTE, 60)
    if not window.allowed:
        raise ApiError("plan_rate_limited", 429, headers={"Retry-After": str(max(1, window.reset_after))})
    planned_for = next_slot_start(definition, utcnow()) if definition["trigger"] == "weekly" else None
    run = AutomationRun(tenant_id=tenant_id, rule_id=rule_id, revision=grant.revision, grant_id=grant.id,
                        kind="manual", status="queued", planned_for=planned_for, requested_by=actor_id)
    db.session.add(run)
    db.session.flush()
    return run


def next_slot_start(definition: dict, now: datetime) -> datetime:
    """The first slot start of the weekly rule after `now`, in UTC."""
    week_start = _week_start(now)
    for week in (0, 1):
        for start in _slot_starts(definition["slots"]):
            moment = week_start + timedelta(weeks=week, minutes=start.minute)
            if moment > now:
                return moment.astimezone(timezone.utc)
    raise ValueError("a weekly rule without slots")


def _definition(rule_id: uuid.UUID, revision: int) -> dict:
    """The saved definition of the rule's revision."""
    return db.session.scalar(select(AutomationRuleRevision.definition).where(
        AutomationRuleRevision.rule_id == rule_id, AutomationRuleRevision.revision == revision))


# --- the job ------------------------------------------------------------------------------------

def run_plan(run_id: uuid.UUID) -> str:
    """Generate the plan of a queued run (the job's transaction owner); its final status.

    Claimed with one conditional UPDATE queued -> running, so a second run of the job, or one for
    a run cancelled meanwhile, returns without doing anything.
    """
    claimed = db.session.execute(update(AutomationRun).where(
        AutomationRun.id == run_id, AutomationRun.status == "queued")
        .values(status="running", started_at=utcnow())).rowcount
    db.session.commit()
    if claimed != 1:
        return db.session.scalar(select(AutomationRun.status).where(AutomationRun.id == run_id)) or "missing"
    run = db.session.get(AutomationRun, run_id)
    tenant_id, rule_id, grant_id, actor_id = run.tenant_id, run.rule_id, run.grant_id, run.requested_by
    problem = _stop_reason(tenant_id, rule_id, grant_id)
    if problem:
        return _cancel(run_id, tenant_id, rule_id, actor_id, problem)
    rule = _normalised(_definition(rule_id, run.revision))
    slot = _slot_in_effect(_slot_starts(rule["slots"]), run.planned_for) if rule["trigger"] == "weekly" else None
    deadline = time.monotonic() + BUDGET_SECONDS

    seen, partial = _scan(tenant_id, rule, slot, deadline)
    end_reads()  # nothing is held while the model answers
    usage = Usage()
    if "semantic" in rule:
        partial = _classify_all(rule, seen, slot, usage, deadline) or partial
    if usage.calls:  # metered whatever happens next, even when the run is then cancelled
        record_use(tenant_id, "semantic_routing", f"automation_run:{run_id}",
                   usage.input_tokens, usage.output_tokens)
        db.session.commit()
    decisions = [entry.decision for entry in seen]
    _cap(decisions, rule["max_actions"])
    if partial and "semantic" in rule:  # an over-limit or incomplete semantic plan plans nothing
        for decision in decisions:
            if decision.planned:
                decision.planned, decision.reason = False, INCOMPLETE
    problem = _stop_reason(tenant_id, rule_id, grant_id)
    if problem:
        return _cancel(run_id, tenant_id, rule_id, actor_id, problem)
    return _finish(run_id, tenant_id, rule_id, actor_id, seen, partial)


def _stop_reason(tenant_id: uuid.UUID, rule_id: uuid.UUID, grant_id: uuid.UUID) -> str | None:
    """Why the run may not go on: the planning switch is off, or the rule lost the run's grant."""
    if not current_app.config["AUTOMATION_PLANNING_ENABLED"]:
        return "planning_disabled"
    grant = service.current_grant(tenant_id, rule_id)
    if grant is None or grant.id != grant_id:
        return "grant_replaced"
    return None


def _normalised(definition: dict) -> dict:
    """The definition with its member ids in canonical form, so they compare with assignees."""
    rule = dict(definition)
    if rule["assignee_ref"]:
        rule["assignee_ref"] = str(uuid.UUID(rule["assignee_ref"]))
    rule["slots"] = [{**slot, "assignee_ref": str(uuid.UUID(slot["assignee_ref"]))} for slot in rule["slots"]]
    return rule


def _scan(tenant_id: uuid.UUID, rule: dict, slot, deadline: float) -> tuple[list[Seen], bool]:
    """Read the newest mapped conversations and decide the ones needing no model; (seen, partial)."""
    rows = db.session.execute(select(
        Conversation.id, Conversation.tenant_id, Conversation.status, Conversation.assignee_member_id,
        Conversation.bot_active, Conversation.updated_at).where(
        Conversation.tenant_id == tenant_id, Conversation.channel_id.is_not(None))
        .order_by(Conversation.last_activity_at.desc(), Conversation.id).limit(SCAN_LIMIT + 1)).all()
    partial = len(rows) > SCAN_LIMIT
    filtered = bool(rule["keywords"]) or "semantic" in rule
    seen = []
    for row in rows[:SCAN_LIMIT]:
        if time.monotonic() > deadline:
            return seen, True
        assignee = None if row.assignee_member_id is None else str(row.assignee_member_id)
        entry = Seen(row.id, {"id": str(row.id), "status": row.status, "assignee_ref": assignee, "text": ""},
                     snapshot(row))
        seen.append(entry)
        excluded = _excluded(rule, entry.sample)
        if excluded:
            entry.decision = Decision(entry.sample["id"], excluded)
            continue
        if filtered:
            try:
                text = _latest_text(tenant_id, row.id)
            except SQLAlchemyError:
                db.session.rollback()  # only reads were under way
                entry.decision, partial = Decision(entry.sample["id"], READ_FAILED), True
                continue
            if text is None:
                entry.decision = Decision(entry.sample["id"], NO_TEXT)
                continue
            entry.sample["text"] = text
        if "semantic" not in rule:
            entry.decision = _decide(rule, entry.sample, slot, Usage())
            entry.sample["text"] = ""  # decided: the text is dropped
    return seen, partial


def _latest_text(tenant_id: uuid.UUID, conversation_id: uuid.UUID) -> str | None:
    """The first 4,000 characters of the newest public inbound message (never a private note)."""
    return db.session.scalar(select(func.substr(Message.text, 1, LIMITS["keyword_text_chars"])).where(
        Message.tenant_id == tenant_id, Message.conversation_id == conversation_id,
        Message.direction == "inbound", Message.kind == "public")
        .order_by(Message.created_at.desc(), Message.id.desc()).limit(1))


def _classify_all(rule: dict, seen: list[Seen], slot, usage: Usage, deadline: float) -> bool:
    """Classify the semantic candidates (at most 10, else none), no transaction open; whether the
    plan is incomplete (over the limit, out of budget or a model failure)."""
    candidates = [entry for entry in seen if entry.decision is None]
    if len(candidates) > SEMANTIC_CANDIDATES:
        for entry in candidates:
            entry.decision = Decision(entry.sample["id"], OVER_LIMIT)
            entry.sample["text"] = ""
        return True
    incomplete = False
    for entry in candidates:
        if not incomplete and time.monotonic() > deadline:
            incomplete = True
        if not incomplete:
            try:
                entry.decision = _decide(rule, entry.sample, slot, usage)
            except ApiError:  # the model failed: what it answered before is still metered
                incomplete = True
        if entry.decision is None:
            entry.decision = Decision(entry.sample["id"], NOT_CLASSIFIED)
        entry.sample["text"] = ""
    return incomplete


def _finish(run_id: uuid.UUID, tenant_id: uuid.UUID, rule_id: uuid.UUID, actor_id: uuid.UUID | None,
            seen: list[Seen], partial: bool) -> str:
    """Write the items and the outcome, unless the run is no longer running (swept meanwhile)."""
    status = "partial" if partial else "complete"
    planned = sum(entry.decision.planned for entry in seen)
    done = db.session.execute(update(AutomationRun).where(
        AutomationRun.id == run_id, AutomationRun.status == "running")
        .values(status=status, scanned=len(seen), planned_count=planned, finished_at=utcnow())).rowcount
    if done != 1:
        db.session.rollback()
        return db.session.scalar(select(AutomationRun.status).where(AutomationRun.id == run_id))
    db.session.add_all(AutomationRunItem(
        tenant_id=tenant_id, run_id=run_id, conversation_id=entry.conversation_id,
        planned=entry.decision.planned, target_member_id=_member(entry.decision.assignee_ref),
        reason=entry.decision.reason, detail=entry.decision.detail or None,
        snapshot=entry.snapshot if entry.decision.planned else None) for entry in seen)
    audit.record(tenant_id, actor_id, "automation.plan_completed", f"automation_run:{run_id}",
                 {"run_id": str(run_id), "rule_id": str(rule_id), "status": status,
                  "scanned": len(seen), "planned_count": planned})
    db.session.commit()
    return status


def _member(reference: str | None) -> uuid.UUID | None:
    """The target member id of a decision, when one was picked."""
    return uuid.UUID(reference) if reference else None


def _cancel(run_id: uuid.UUID, tenant_id: uuid.UUID, rule_id: uuid.UUID, actor_id: uuid.UUID | None,
            reason: str) -> str:
    """Cancel a running run for `reason` (audited); nothing of its plan is kept."""
    cancelled = db.session.execute(update(AutomationRun).where(
        AutomationRun.id == run_id, AutomationRun.status == "running")
        .values(status="cancelled", finished_at=utcnow())).rowcount
    if cancelled:
        audit.record(tenant_id, actor_id, "automation.plan_cancelled", f"automation_run:{run_id}",
                     {"run_id": str(run_id), "rule_id": str(rule_id), "reason": reason})
    db.session.commit()
    return "cancelled"


# --- pause and the sweep ------------------------------------------------------------------------

def cancel_queued(tenant_id: uuid.UUID, rule_id: uuid.UUID) -> int:
    """Cancel the rule's queued runs (a pause); runs already running may finish. Flush only."""
    return db.session.execute(update(AutomationRun).where(
        AutomationRun.tenant_id == tenant_id, AutomationRun.rule_id == rule_id,
        AutomationRun.status == "queued").values(status="cancelled", finished_at=utcnow())).rowcount


def sweep() -> int:
    """Tick handler: runs running longer than STUCK_AFTER (the worker died) become failed, never
    successful nor retried; manual runs queued for more than 15 minutes are cancelled. Commits;
    returns how many runs changed."""
    now = utcnow()
    failed = db.session.execute(update(AutomationRun).where(
        AutomationRun.status == "running", AutomationRun.started_at < now - STUCK_AFTER)
        .values(status="failed", finished_at=now)).rowcount
    cancelled = db.session.execute(update(AutomationRun).where(
        AutomationRun.status == "queued", AutomationRun.kind == "manual",
        AutomationRun.created_at < now - QUEUED_MANUAL_LIMIT)
        .values(status="cancelled", finished_at=now)).rowcount
    db.session.commit()
    return failed + cancelled


# --- GET /{rule_id}/rule-runs -------------------------------------------------------------------

def rule_runs(tenant_id: uuid.UUID, rule_id: uuid.UUID) -> dict:
    """The rule's 30 newest runs with their per-conversation results (no message text)."""
    service._get_rule(tenant_id, rule_id)
    runs = list(db.session.scalars(select(AutomationRun).where(
        AutomationRun.tenant_id == tenant_id, AutomationRun.rule_id == rule_id)
        .order_by(AutomationRun.created_at.desc(), AutomationRun.id.desc()).limit(RUNS_LISTED)))
    items: dict[uuid.UUID, list[dict]] = {run.id: [] for run in runs}
    if runs:
        rows = db.session.scalars(select(AutomationRunItem).join(
            Conversation, Conversation.id == AutomationRunItem.conversation_id).where(
            AutomationRunItem.tenant_id == tenant_id, AutomationRunItem.run_id.in_(items))
            .order_by(Conversation.last_activity_at.desc(), Conversation.id))
        for item in rows:
            items[item.run_id].append(item_json(item))
    return {"runs": [run_json(run, items[run.id]) for run in runs]}


def run_json(run: AutomationRun, items: list[dict] | None = None) -> dict:
    """One run as the console shows it."""
    return {"run_id": str(run.id), "kind": run.kind, "mode": run.mode, "executed": run.executed,
            "status": run.status, "planned_for": iso(run.planned_for), "scanned": run.scanned,
            "planned_count": run.planned_count, "schedule_execution_state": run.schedule_execution_state,
            "schedule_execution_code": run.schedule_execution_code, "created_at": iso(run.created_at),
            "finished_at": iso(run.finished_at), "execution_requested_at": iso(run.execution_requested_at),
            "execution_finished_at": iso(run.execution_finished_at), "items": items or []}


def item_json(item: AutomationRunItem) -> dict:
    """One conversation's result in a run."""
    return {"conversation_id": str(item.conversation_id), "planned": item.planned,
            "target_member_id": str(item.target_member_id) if item.target_member_id else None,
            "reason": item.reason, "detail": item.detail}
