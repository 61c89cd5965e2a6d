"""Single-run execution of a plan: the administrator's approval, one command per planned
conversation, each rechecked and applied through the desk's atomic adapter.

The approval writes the commands' receipts (`pending`) under the command key `run:<run id>` and
answers at once; a job per command marks it `sending`, rechecks publisher, approver, tenant,
target member and rule (a scheduled run has no approver: its `scheduled` grant, still the rule's
current one, and the scheduled-execution switch are rechecked instead), and hands it to `desk.conversations.apply_command`, which compares the
plan's snapshot, reassigns and records the receipt in one transaction. `rules` never writes a
desk table itself.
"""
import uuid
from datetime import timedelta

from flask import current_app
from sqlalchemy import select, update

from core import audit
from core.api import ApiError
from core.clock import iso, utcnow
from core.db import db
from core.guards import only_properties
from core.queue import enqueue
from desk import conversations
from desk.models import Member, Tenant
from rules.models import AutomationGrant, AutomationRule, AutomationRun, AutomationRunItem

EXECUTE_PERMISSION = "conversation.assign_plan"
EXECUTABLE_FOR = timedelta(minutes=5)  # a complete plan may be executed this long after it finished
# What no command moves on from by itself ("uncertain" waits for a person: it is never resent).
FINAL = ("applied", "state_changed", "rejected", "command_conflict", "uncertain", "cancelled")


def command_key(run_id: uuid.UUID) -> str:
    """The adapter's command key of a run's commands."""
    return f"run:{run_id}"


def _run(tenant_id: uuid.UUID, run_id: uuid.UUID) -> AutomationRun:
    """One run of the tenant; foreign and missing ids are both 404."""
    found = db.session.scalar(select(AutomationRun).where(AutomationRun.id == run_id,
                                                          AutomationRun.tenant_id == tenant_id))
    if found is None:
        raise ApiError("not_found", 404)
    return found


def _switches_on() -> None:
    """Execution needs atomic assignment and the single-run switch."""
    if not current_app.config["ATOMIC_ASSIGNMENT_ENABLED"]:
        raise ApiError("atomic_assignment_disabled", 503)
    if not current_app.config["AUTOMATION_EXECUTION_ENABLED"]:
        raise ApiError("execution_disabled", 503)


def _executable(run: AutomationRun) -> list[AutomationRunItem]:
    """The planned items of a complete run, at most 5 minutes old, every one with its snapshot."""
    if run.status != "complete":
        raise ApiError("plan_not_executable", 409, detail=run.status)
    if run.finished_at is None or utcnow() - run.finished_at > EXECUTABLE_FOR:
        raise ApiError("plan_expired", 409)
    items = list(db.session.scalars(select(AutomationRunItem).where(
        AutomationRunItem.run_id == run.id, AutomationRunItem.planned.is_(True))))
    if any(item.snapshot is None or item.target_member_id is None for item in items):
        raise ApiError("plan_without_snapshot", 409)
    return items


def request_execution(tenant_id: uuid.UUID, actor_id: uuid.UUID, run_id: uuid.UUID, body: dict) -> dict:
    """Approve one execution of a plan: write a pending receipt per planned conversation (flush;
    the caller commits and then queues `queue_jobs`). Asking again changes nothing."""
    only_properties(body, ("confirm", "permission"), ("confirm", "permission"))
    if body["confirm"] is not True or body["permission"] != EXECUTE_PERMISSION:
        raise ApiError("permission_confirmation_required", 400)
    _switches_on()
    run = _run(tenant_id, run_id)
    items = _executable(run)
    approved = db.session.execute(update(AutomationRun).where(
        AutomationRun.id == run.id, AutomationRun.execution_requested_at.is_(None))
        .values(execution_requested_at=utcnow(), approved_by=actor_id)).rowcount
    if approved:
        conversations.queue_commands(tenant_id, command_key(run.id), [
            (item.conversation_id, item.target_member_id, item.snapshot) for item in items])
        audit.record(tenant_id, actor_id, "automation.plan_execution_requested", f"automation_run:{run.id}",
                     {"rule_id": str(run.rule_id), "commands": len(items)})
    return {"run_id": str(run.id), "commands": len(items), "status": "queued", "complete": False}


def queue_scheduled_commands(run: AutomationRun, items: list[AutomationRunItem]) -> int:
    """Write one pending receipt per planned item of a scheduled run (flush; the caller commits,
    then calls `queue_jobs`). No approver: the run's `scheduled` grant authorizes it, and each
    command rechecks that grant and its publisher. Returns how many receipts were new."""
    if run.kind != "scheduled":
        raise ValueError("only scheduled runs execute without an approver")
    return conversations.queue_commands(run.tenant_id, command_key(run.id), [
        (item.conversation_id, item.target_member_id, item.snapshot) for item in items])


def queue_jobs(tenant_id: uuid.UUID, run_id: uuid.UUID) -> None:
    """One job per pending command of the run (after the commit); job ids collapse repeats."""
    for receipt in conversations.receipts(tenant_id, command_key(run_id)):
        if receipt.status == "pending":
            enqueue("jobs.tasks.execute_command", str(run_id), str(receipt.conversation_id),
                    job_id=f"command-{run_id}-{receipt.conversation_id}")


def _admin_holds(tenant_id: uuid.UUID, user_id: uuid.UUID | None) -> bool:
    """Whether the user is still an active administrator of the active tenant."""
    return user_id is not None and db.session.scalar(
        select(Member.id).join(Tenant, Tenant.id == Member.tenant_id)
        .where(Member.tenant_id == tenant_id, Member.user_id == user_id, Member.role == "admin",
               Member.active.is_(True), Tenant.active.is_(True))) is not None


def _recheck(run: AutomationRun, target_member_id: uuid.UUID) -> str | None:
    """Why the command may no longer run (None when it may): the rule paused or republished, the
    publisher or approver no longer an administrator, the tenant inactive, the target no longer
    an active, synchronized agent."""
    rule = db.session.get(AutomationRule, run.rule_id)
    if rule.state != "published" or rule.grant_id != run.grant_id:
        return "rule_not_published" if rule.state != "published" else "grant_replaced"
    grant = db.session.get(AutomationGrant, run.grant_id)
    if not _admin_holds(run.tenant_id, grant.granted_by):
        return "publisher_invalid"
    if run.kind == "scheduled":  # no approver: the continuing authorization is the scheduled grant
        if grant.execution_mode != "scheduled":
            return "grant_replaced"
        if not current_app.config["AUTOMATION_SCHEDULE_EXECUTION_ENABLED"]:
            return "schedule_execution_disabled"
    elif not _admin_holds(run.tenant_id, run.approved_by):
        return "approver_invalid"
    target = db.session.get(Member, target_member_id)
    if target is None or target.tenant_id != run.tenant_id or target.role != "agent" \
            or not (target.active and target.synchronized):
        return "rule_member_unavailable"
    return None


def execute_command(run_id: uuid.UUID, conversation_id: uuid.UUID) -> str:
    """One command (a job): mark it sending, recheck, then apply it through the atomic adapter.
    Safe to run twice: a receipt no longer pending is only looked up, never sent again."""
    run = db.session.get(AutomationRun, run_id)
    key = command_key(run_id)
    if not conversations.mark_sending(run.tenant_id, key, conversation_id):
        db.session.rollback()
        return conversations.resolve_uncertain(run.tenant_id, key, conversation_id)
    db.session.commit()
    receipt = next(r for r in conversations.receipts(run.tenant_id, key) if r.conversation_id == conversation_id)
    refusal = _recheck(run, receipt.target_member_id)
    if refusal is not None:
        status = conversations.reject_command(run.tenant_id, key, conversation_id, refusal)
        db.session.commit()
        return status
    return conversations.apply_command(run.tenant_id, key, conversation_id)


def execution_status(tenant_id: uuid.UUID, run_id: uuid.UUID) -> dict:
    """The run's command receipts: `final` once every command reached a final state."""
    run = _run(tenant_id, run_id)
    receipts = conversations.receipts(tenant_id, command_key(run.id))
    return {"run_id": str(run.id), "final": all(r.status in FINAL for r in receipts),
            "receipts": [{"conversation_id": str(r.conversation_id), "target_member_id": str(r.target_member_id),
                          "status": r.status, "reason": r.reason, "updated_at": iso(r.updated_at)}
                         for r in receipts]}
