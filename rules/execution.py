"""Execution of plans: the administrator's approval of a single run, one command per planned
conversation, each rechecked and applied through the desk's atomic adapter; the one recheck of
every run kind; and the sweep of commands whose worker is gone.

The approval writes the commands' receipts (`pending`) under the command key `run:<run id>` and
answers at once; a job per command marks it `sending`, rechecks (`recheck`: rule, tenant,
publisher, then the approver of a manual run or the continuing grant of a scheduled or
message-event run, and the target member) and hands it to `desk.conversations.apply_command`,
which compares the plan's snapshot, reassigns and records the receipt in one transaction. `rules`
never writes a desk table itself.
"""
import uuid
from datetime import datetime, timedelta
from typing import NamedTuple

from flask import current_app
from sqlalchemy import bindparam, select, update

from core import audit
from core.api import ApiError
from core.clock import iso, utcnow
from core.db import db, tenant_row
from core.metrics import RULE_COMMANDS
from core.queue import enqueue
from desk import conversations, waiting
from desk.models import Member, Tenant
from rules.models import AutomationGrant, AutomationRule, AutomationRun, AutomationRunItem

EXECUTE_PERMISSION = "conversation.assign_plan"
EXECUTABLE_FOR = timedelta(minutes=5)  # a complete plan may be executed this long after it finished
COMMAND_TIMEOUT = 60  # seconds a command's job may run (a recheck and the adapter: no outside call)
STALE_AFTER = timedelta(seconds=2 * COMMAND_TIMEOUT)  # an open command older than this lost its worker
# What no command moves on from by itself ("uncertain" waits for a person: it is never resent).
FINAL = ("applied", "state_changed", "rejected", "command_conflict", "uncertain", "cancelled")


KEY_PREFIX = "run:"


def command_key(run_id: uuid.UUID) -> str:
    """The adapter's command key of a run's commands."""
    return f"{KEY_PREFIX}{run_id}"


def _run(tenant_id: uuid.UUID, run_id: uuid.UUID) -> AutomationRun:
    """One run of the tenant; foreign and missing ids are both 404."""
    return tenant_row(AutomationRun, tenant_id, run_id)


def _switches_on() -> None:
    """Execution needs atomic assignment and the single-run switch."""
    if not current_app.config["ATOMIC_ASSIGNMENT_ENABLED"]:
        raise ApiError("atomic_assignment_disabled", 503)
    if not current_app.config["AUTOMATION_EXECUTION_ENABLED"]:
        raise ApiError("execution_disabled", 503)


def fresh(run, now: datetime) -> bool:
    """Whether the run's plan finished recently enough to be executed (EXECUTABLE_FOR)."""
    return run.finished_at is not None and now - run.finished_at <= EXECUTABLE_FOR


def execution_started(run) -> bool:
    """Whether the run's commands were queued: approved once, or decided `queued` by the scheduler."""
    return run.execution_requested_at is not None or run.schedule_execution_state == "queued"


def _executable(run: AutomationRun) -> list[AutomationRunItem]:
    """The planned items of a complete run, at most 5 minutes old, every one with its snapshot."""
    if run.status != "complete":
        raise ApiError("plan_not_executable", 409, detail=run.status)
    if not fresh(run, utcnow()):
        raise ApiError("plan_expired", 409)
    items = list(db.session.scalars(select(AutomationRunItem).where(
        AutomationRunItem.run_id == run.id, AutomationRunItem.planned.is_(True))))
    if any(item.snapshot is None or item.target_member_id is None for item in items):
        raise ApiError("plan_without_snapshot", 409)
    return items


def request_execution(tenant_id: uuid.UUID, actor_id: uuid.UUID, run_id: uuid.UUID, *, confirmed: bool,
                      permission: str) -> dict:
    """Approve one execution of a plan: write a pending receipt per planned conversation (flush;
    the caller commits and then queues `queue_jobs`). Asking again changes nothing.

    Nothing is approved unless the administrator confirmed (`confirmed` True) exactly the
    permission EXECUTE_PERMISSION: else 400 permission_confirmation_required, before the switches
    and the run are looked at."""
    if confirmed is not True or permission != EXECUTE_PERMISSION:
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
            _queue_job(run_id, receipt.conversation_id)


def _queue_job(run_id: uuid.UUID, conversation_id: uuid.UUID) -> None:
    """The job of one command; its id collapses a twin still waiting."""
    enqueue("jobs.tasks.execute_command", str(run_id), str(conversation_id),
            job_id=f"command-{run_id}-{conversation_id}", job_timeout=COMMAND_TIMEOUT)


# A run kind without an approver and the grant mode (and switch) that authorizes its commands.
CONTINUOUS = {"scheduled": "scheduled", "message_event": "message_event"}


def _is_admin(tenant_id: uuid.UUID, user_id):
    """Whether the user (a column or a value) is an active administrator of the tenant: EXISTS."""
    return select(Member.id).where(Member.tenant_id == tenant_id, Member.user_id == user_id,
                                   Member.role == "admin", Member.active.is_(True)).exists()


# The recheck, built once (it runs before every command): an approver of None matches no member.
_RECHECK = select(
    AutomationRule.state, AutomationRule.grant_id, AutomationGrant.execution_mode, Tenant.active,
    _is_admin(bindparam("p_tenant"), AutomationGrant.granted_by).label("publisher"),
    _is_admin(bindparam("p_tenant"), bindparam("p_approver")).label("approver"),
    select(Member.id).where(Member.id == bindparam("p_target"), Member.tenant_id == bindparam("p_tenant"),
                            Member.role == "agent", Member.active.is_(True), Member.synchronized.is_(True))
    .exists().label("target"),
    waiting.enabled_policy(bindparam("p_tenant")).label("availability"),
).join(Tenant, Tenant.id == AutomationRule.tenant_id).join(
    AutomationGrant, (AutomationGrant.id == bindparam("p_grant")) & (AutomationGrant.tenant_id == bindparam("p_tenant"))
).where(AutomationRule.id == bindparam("p_rule"), AutomationRule.tenant_id == bindparam("p_tenant"))


class Authority(NamedTuple):
    """What a command is written under, as `recheck` checks it: the run's tenant, rule, grant and
    kind, and its approver (None for a continuing grant). An AutomationRun has these attributes."""

    tenant_id: uuid.UUID
    rule_id: uuid.UUID
    grant_id: uuid.UUID
    kind: str
    approved_by: uuid.UUID | None = None


class Verdict(NamedTuple):
    """The recheck's answer: why the command may not be written now (None: it may), and whether
    the tenant's availability policy is on (then the adapter checks the target's availability last,
    in the write's own transaction)."""

    refusal: str | None
    availability: bool


def recheck(run: "AutomationRun | Authority", target_member_id: uuid.UUID) -> Verdict:
    """Whether a command of the run may be written now, checked right before each write whatever
    the run's kind, in one statement: the rule paused or republished (`rule_not_published`,
    `grant_replaced`), the tenant inactive, the publisher no longer an active administrator, the
    approver likewise (`approver_invalid`; a scheduled or message-event run has none: its
    continuing grant, still the rule's current one, and the scheduled-execution switch stand for
    it), the target no longer an active, synchronized agent of the tenant. The same statement
    reads whether the tenant's availability policy is on."""
    found = db.session.connection().execute(_RECHECK, {
        "p_tenant": run.tenant_id, "p_rule": run.rule_id, "p_grant": run.grant_id, "p_approver": run.approved_by,
        "p_target": target_member_id}).one()
    return Verdict(_refusal(run, found), bool(found.availability))


def _refusal(run: "AutomationRun | Authority", found) -> str | None:
    """The first refusal of `_RECHECK`'s answer, None when there is none."""
    if found.state != "published" or found.grant_id != run.grant_id:
        return "rule_not_published" if found.state != "published" else "grant_replaced"
    if not found.active:
        return "tenant_inactive"
    if not found.publisher:
        return "publisher_invalid"
    if run.kind in CONTINUOUS:
        if found.execution_mode != CONTINUOUS[run.kind]:
            return "grant_replaced"
        if not current_app.config["AUTOMATION_SCHEDULE_EXECUTION_ENABLED"]:
            return "schedule_execution_disabled"
    elif not found.approver:
        return "approver_invalid"
    return None if found.target else "rule_member_unavailable"


def execute_command(run_id: uuid.UUID, conversation_id: uuid.UUID) -> str:
    """One command (a job): mark it sending, recheck, then apply it through the atomic adapter.
    Safe to run twice: a receipt no longer pending is only looked up, never sent again."""
    run = db.session.get(AutomationRun, run_id)
    tenant_id, key = run.tenant_id, command_key(run_id)
    if not conversations.mark_sending(tenant_id, key, conversation_id):
        db.session.rollback()
        outcome = conversations.resolve_uncertain(tenant_id, key, conversation_id)
        db.session.commit()
    else:
        db.session.commit()
        receipt = next(r for r in conversations.receipts(tenant_id, key) if r.conversation_id == conversation_id)
        verdict = recheck(run, receipt.target_member_id)
        if verdict.refusal is not None:
            outcome = conversations.reject_command(tenant_id, key, conversation_id, verdict.refusal)
            db.session.commit()
        else:
            outcome = conversations.apply_command(tenant_id, key, conversation_id, verdict.availability)
    RULE_COMMANDS.labels(outcome if outcome in FINAL else "other").inc()
    finish_if_final(tenant_id, run_id)
    return outcome


def retry_uncertain(tenant_id: uuid.UUID, actor_id: uuid.UUID, run_id: uuid.UUID,
                    conversation_id: uuid.UUID) -> None:
    """A person sends an `uncertain` command again (it never wrote: see
    `desk.conversations.reopen_uncertain`): back to `pending`, the run's execution open again,
    audited. The caller commits, then queues the command (`queue_jobs`), which is rechecked and
    compares its snapshot like any other. 409 command_not_uncertain for any other receipt."""
    if not current_app.config["ATOMIC_ASSIGNMENT_ENABLED"]:
        raise ApiError("atomic_assignment_disabled", 503)
    run = _run(tenant_id, run_id)
    if not conversations.reopen_uncertain(tenant_id, command_key(run.id), conversation_id):
        raise ApiError("command_not_uncertain", 409)
    db.session.execute(update(AutomationRun).where(AutomationRun.id == run.id)
                       .values(execution_finished_at=None))  # summarized again once final
    audit.record(tenant_id, actor_id, "automation.command_retried", f"automation_run:{run.id}",
                 {"run_id": str(run.id), "rule_id": str(run.rule_id), "conversation_id": str(conversation_id)})


def finish_if_final(tenant_id: uuid.UUID, run_id: uuid.UUID) -> bool:
    """Once every command of the run is final, mark its execution finished and audit its summary
    (`automation.run_executed`: kind, rule, how many commands ended in each status), once: a
    conditional UPDATE picks one of the workers that finish last together. Commits; True when
    this call wrote the summary."""
    receipts = conversations.receipts(tenant_id, command_key(run_id))
    if not receipts or any(r.status not in FINAL for r in receipts):
        db.session.rollback()
        return False
    won = db.session.execute(update(AutomationRun).where(
        AutomationRun.id == run_id, AutomationRun.tenant_id == tenant_id,
        AutomationRun.execution_finished_at.is_(None)).values(execution_finished_at=utcnow())).rowcount
    if not won:
        db.session.rollback()
        return False
    run = db.session.execute(select(AutomationRun.tenant_id, AutomationRun.rule_id, AutomationRun.grant_id,
                                    AutomationRun.kind, AutomationRun.approved_by)
                             .where(AutomationRun.id == run_id)).one()
    audit_executed(Authority(**run._mapping), run_id, [r.status for r in receipts])
    db.session.commit()
    return True


def audit_executed(run: "AutomationRun | Authority", run_id: uuid.UUID, statuses: list[str]) -> None:
    """Audit a run's finished execution (`automation.run_executed`): its kind, rule, how many
    commands ended in each final status. The caller commits."""
    outcomes = {status: statuses.count(status) for status in FINAL}
    audit.record(run.tenant_id, run.approved_by, "automation.run_executed", f"automation_run:{run_id}",
                 {"run_id": str(run_id), "rule_id": str(run.rule_id), "kind": run.kind,
                  "commands": len(statuses), "outcomes": {k: n for k, n in outcomes.items() if n}})


def execution_status(tenant_id: uuid.UUID, run_id: uuid.UUID) -> dict:
    """The run's command receipts: `final` once every command reached a final state."""
    run = _run(tenant_id, run_id)
    return status_json(run.id, conversations.receipts(tenant_id, command_key(run.id)))


def status_json(run_id: uuid.UUID, receipts: list) -> dict:
    """A run's execution status from its receipts."""
    return {"run_id": str(run_id), "final": all(r.status in FINAL for r in receipts),
            "receipts": [{"conversation_id": str(r.conversation_id), "target_member_id": str(r.target_member_id),
                          "status": r.status, "reason": r.reason, "updated_at": iso(r.updated_at),
                          **({"reason_code": r.reason_code} if r.reason_code else {})}
                         for r in receipts]}


def cancel_pending(tenant_id: uuid.UUID, rule_id: uuid.UUID, reason: str) -> int:
    """Cancel the commands not yet begun of the rule's runs (a pause); how many. Commands already
    `sending` may complete. Only runs approved within STALE_AFTER can still have a pending command
    whose job has not started: any older one is the sweep's, whose job then rechecks the rule and
    rejects it. The caller commits."""
    run_ids = db.session.scalars(select(AutomationRun.id).where(
        AutomationRun.tenant_id == tenant_id, AutomationRun.rule_id == rule_id,
        AutomationRun.execution_requested_at >= utcnow() - STALE_AFTER))
    return conversations.cancel_commands(tenant_id, [command_key(run_id) for run_id in run_ids], reason)


def sweep() -> int:
    """Tick handler: commands whose worker is gone. A receipt still `sending` STALE_AFTER after it
    was marked (longer than its job may run) is reconciled by the committed receipt alone
    (`uncertain`, never resent: the adapter moves the receipt in the reassignment's transaction,
    so a write that committed would have moved it); a receipt still `pending` that long lost its
    job (Redis restarted, a worker died before taking it) and is queued again, rechecked as any.
    Returns how many commands it handled."""
    stale = conversations.open_commands(KEY_PREFIX, utcnow() - STALE_AFTER)
    db.session.rollback()  # only read
    for tenant_id, key, conversation_id, status in stale:
        run_id = uuid.UUID(key.removeprefix(KEY_PREFIX))
        if status == "sending":
            conversations.resolve_uncertain(tenant_id, key, conversation_id)
            db.session.commit()
            finish_if_final(tenant_id, run_id)
        else:
            _queue_job(run_id, conversation_id)
    return len(stale)
