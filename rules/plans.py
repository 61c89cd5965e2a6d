"""Read-only plans of published rules (document 2, "Run and plan"): `request_plan` stores a queued
manual run under the rule's current grant; the job `run_plan` claims it once, scans the newest
mapped conversations, asks the model with no transaction open and writes one item per
conversation (never text); `sweep` fails runs whose worker died. Checks, reasons, the budget and
the limits: docs/decisions.md, "Plans".
"""
import time
import uuid
from dataclasses import dataclass
from datetime import timedelta

from flask import current_app
from sqlalchemy import func, select, update
from sqlalchemy.exc import SQLAlchemyError

from core import audit
from core.api import ApiError
from core.clock import utcnow
from core.db import db, end_reads
from core.limits import hit_fixed_window
from core.metrics import RULE_RUNS
from core.queue import JobSpec
from core.queue_names import DEFAULT
from core.redis import get_redis
from desk.conversations import snapshot
from desk.models import Conversation, Message
from rules.calendar import next_slot_start, slot_in_effect
from rules.catalog import LIMITS
from rules.deciding import NOT_CLASSIFIED, Decision, Usage, cap, decide, excluded, normalised
from rules.lookup import current_grant, get_rule, revision_definition
from rules.models import AutomationRun, AutomationRunItem

SCAN_LIMIT = 100
BUDGET_SECONDS = 45.0
SEMANTIC_CANDIDATES = 10
PLANS_PER_MINUTE = 1
JOB_TIMEOUT = 120  # seconds RQ gives a plan job: the budget and the reads already under way
STUCK_AFTER = timedelta(seconds=180)  # running longer than this: the worker died
QUEUED_MANUAL_LIMIT = timedelta(minutes=15)
NO_TEXT = "no_public_inbound_message"
READ_FAILED = "read_failed"
OVER_LIMIT = "semantic_over_limit"
INCOMPLETE = "plan_incomplete"


@dataclass
class Scanned:
    """One scanned conversation: what the plan read of it (never the text) and the decision."""

    conversation_id: uuid.UUID
    sample: dict  # the preview's sample shape: id, status, assignee_ref, and text while deciding
    snapshot: dict
    decision: Decision | None = None


# --- POST /{rule_id}/rule-plan ------------------------------------------------------------------

def request_plan(tenant_id: uuid.UUID, actor_id: uuid.UUID, rule_id: uuid.UUID) -> AutomationRun:
    """Store a queued manual plan of the published rule (flush only; the view commits, then
    queues `plan_job`). The first problem wins, in this order: the rule (404), the planning switch
    (503), its grant (409 rule_not_published), the tenant's one plan a minute (429)."""
    get_rule(tenant_id, rule_id)
    if not current_app.config["AUTOMATION_PLANNING_ENABLED"]:
        raise ApiError("planning_disabled", 503)
    grant = current_grant(tenant_id, rule_id)
    if grant is None:
        raise ApiError("rule_not_published", 409)
    definition = revision_definition(rule_id, grant.revision)
    window = hit_fixed_window(get_redis(), f"rules:plan:{tenant_id}", PLANS_PER_MINUTE, 60)
    if not window.allowed:
        raise ApiError("plan_rate_limited", 429, headers={"Retry-After": str(max(1, window.reset_after))})
    planned_for = next_slot_start(definition["slots"], utcnow()) if definition["trigger"] == "weekly" else None
    run = AutomationRun(tenant_id=tenant_id, rule_id=rule_id, revision=grant.revision, grant_id=grant.id,
                        kind="manual", status="queued", planned_for=planned_for, requested_by=actor_id)
    db.session.add(run)
    db.session.flush()
    return run


def plan_job(run_id: uuid.UUID) -> JobSpec:
    """The job that generates a queued plan, queued once the run is committed; its id collapses a
    twin still waiting."""
    return JobSpec("jobs.tasks.plan_rule", (str(run_id),), DEFAULT, f"rule-plan-{run_id}", JOB_TIMEOUT)


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
    rule = normalised(revision_definition(rule_id, run.revision))
    slot = slot_in_effect(rule["slots"], run.planned_for) if rule["trigger"] == "weekly" else None
    deadline = time.monotonic() + BUDGET_SECONDS

    scanned, partial = _scan(tenant_id, rule, slot, deadline)
    end_reads()  # nothing is held while the model answers
    usage = Usage()
    if "semantic" in rule:
        partial = _classify_all(rule, scanned, slot, usage, deadline) or partial
    if usage.meter(tenant_id, "semantic_routing", f"automation_run:{run_id}"):
        db.session.commit()  # metered whatever happens next, even when the run is then cancelled
    decisions = [entry.decision for entry in scanned]
    cap(decisions, rule["max_actions"])
    if partial and "semantic" in rule:  # an over-limit or incomplete semantic plan plans nothing
        for decision in decisions:
            if decision.planned:
                decision.planned, decision.reason = False, INCOMPLETE
    problem = _stop_reason(tenant_id, rule_id, grant_id)
    if problem:
        return _cancel(run_id, tenant_id, rule_id, actor_id, problem)
    return _finish(run_id, tenant_id, rule_id, actor_id, scanned, partial)


def _stop_reason(tenant_id: uuid.UUID, rule_id: uuid.UUID, grant_id: uuid.UUID) -> str | None:
    """Why the run may not go on: the planning switch is off, or the rule lost the run's grant."""
    if not current_app.config["AUTOMATION_PLANNING_ENABLED"]:
        return "planning_disabled"
    grant = current_grant(tenant_id, rule_id)
    if grant is None or grant.id != grant_id:
        return "grant_replaced"
    return None


def _scan(tenant_id: uuid.UUID, rule: dict, slot, deadline: float) -> tuple[list[Scanned], bool]:
    """Read the newest mapped conversations and decide the ones needing no model; (scanned, partial)."""
    rows = db.session.execute(select(
        Conversation.id, Conversation.tenant_id, Conversation.status, Conversation.assignee_member_id,
        Conversation.bot_active, Conversation.updated_at).where(
        Conversation.tenant_id == tenant_id, Conversation.channel_id.is_not(None))
        .order_by(Conversation.last_activity_at.desc(), Conversation.id).limit(SCAN_LIMIT + 1)).all()
    partial = len(rows) > SCAN_LIMIT
    filtered = bool(rule["keywords"]) or "semantic" in rule
    scanned = []
    for row in rows[:SCAN_LIMIT]:
        if time.monotonic() > deadline:
            return scanned, True
        assignee = None if row.assignee_member_id is None else str(row.assignee_member_id)
        entry = Scanned(row.id, {"id": str(row.id), "status": row.status, "assignee_ref": assignee, "text": ""},
                     snapshot(row))
        scanned.append(entry)
        exclusion = excluded(rule, entry.sample)
        if exclusion:
            entry.decision = Decision(entry.sample["id"], exclusion)
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
            entry.decision = decide(rule, entry.sample, slot, Usage())
            entry.sample["text"] = ""  # decided: the text is dropped
    return scanned, partial


def _latest_text(tenant_id: uuid.UUID, conversation_id: uuid.UUID) -> str | None:
    """The first 4,000 characters of the newest public inbound message (never a private note)."""
    return db.session.scalar(select(func.substr(Message.text, 1, LIMITS["keyword_text_chars"])).where(
        Message.tenant_id == tenant_id, Message.conversation_id == conversation_id,
        Message.direction == "inbound", Message.kind == "public")
        .order_by(Message.created_at.desc(), Message.id.desc()).limit(1))


def _classify_all(rule: dict, scanned: list[Scanned], slot, usage: Usage, deadline: float) -> bool:
    """Classify the semantic candidates (at most 10, else none), no transaction open; whether the
    plan is incomplete (over the limit, out of budget or a model failure)."""
    candidates = [entry for entry in scanned if entry.decision is None]
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
                entry.decision = decide(rule, entry.sample, slot, usage)
            except ApiError:  # the model failed: what it answered before is still metered
                incomplete = True
        if entry.decision is None:
            entry.decision = Decision(entry.sample["id"], NOT_CLASSIFIED)
        entry.sample["text"] = ""
    return incomplete


def _finish(run_id: uuid.UUID, tenant_id: uuid.UUID, rule_id: uuid.UUID, actor_id: uuid.UUID | None,
            scanned: list[Scanned], partial: bool) -> str:
    """Write the items and the outcome, unless the run is no longer running (swept meanwhile)."""
    status = "partial" if partial else "complete"
    planned = sum(entry.decision.planned for entry in scanned)
    done = db.session.execute(update(AutomationRun).where(
        AutomationRun.id == run_id, AutomationRun.status == "running")
        .values(status=status, scanned=len(scanned), planned_count=planned, finished_at=utcnow())).rowcount
    if done != 1:
        db.session.rollback()
        return db.session.scalar(select(AutomationRun.status).where(AutomationRun.id == run_id))
    db.session.add_all(AutomationRunItem(
        tenant_id=tenant_id, run_id=run_id, conversation_id=entry.conversation_id,
        planned=entry.decision.planned, target_member_id=_member(entry.decision.assignee_ref),
        reason=entry.decision.reason, detail=entry.decision.detail or None,
        snapshot=entry.snapshot if entry.decision.planned else None) for entry in scanned)
    audit.record(tenant_id, actor_id, "automation.plan_completed", f"automation_run:{run_id}",
                 {"run_id": str(run_id), "rule_id": str(rule_id), "status": status,
                  "scanned": len(scanned), "planned_count": planned})
    db.session.commit()
    RULE_RUNS.labels(db.session.scalar(select(AutomationRun.kind).where(AutomationRun.id == run_id)), status).inc()
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
    RULE_RUNS.labels("any", "failed").inc(failed)
    RULE_RUNS.labels("manual", "cancelled").inc(cancelled)
    return failed + cancelled
