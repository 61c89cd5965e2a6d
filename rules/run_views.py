"""The runs section of a rule's console page (HTMX): plans on demand, their results, approving one
execution of a fresh complete plan, and the receipts of executed runs. Its queries are
`rules.runs`; statuses and codes: docs/decisions.md, "Plans" and "Single-run execution"."""
import uuid

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_babel import ngettext
from flask_login import current_user

from core.api import ApiError
from core.clock import utcnow
from core.db import db
from core.forms import form_integer
from core.queue import commit_then_enqueue
from core.web import close_when_off, htmx
from desk.sessions import admin_console_required, current_member
from rules import execution, plans, runs

bp = Blueprint("rules_runs", __name__, url_prefix="/extensions/automation/<uuid:rule_id>/runs")
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")

RUN_STATUS_LABELS = {"queued": _l("Queued"), "running": _l("Running"), "complete": _l("Complete"),
                     "partial": _l("Partial"), "cancelled": _l("Cancelled"), "failed": _l("Failed"),
                     "missed": _l("Missed")}
# A scheduled run's schedule_execution_state, shown in lower case as before.
SCHEDULE_STATE_LABELS = {"queued": _l("queued"), "skipped": _l("skipped")}
KIND_LABELS = {"manual": _l("Manual plan"), "scheduled": _l("Scheduled"), "message_event": _l("Message event")}
PLAN_ERRORS = {
    "planning_disabled": _l("Planning is refused: it is switched off on this platform "
                            "(AUTOMATION_PLANNING_ENABLED)."),
    "rule_not_published": _l("Only a published rule can be planned: publish a revision first."),
}
EXECUTE_ERRORS = {
    "plan_expired": _l("This plan is more than 5 minutes old and can no longer be executed: plan again."),
    "plan_not_executable": _l("Only a complete plan can be executed."),
    "plan_without_snapshot": _l("This plan lacks the snapshots execution compares with: plan again."),
    "execution_disabled": _l("Execution is refused: single-run execution is switched off on this platform "
                             "(AUTOMATION_EXECUTION_ENABLED)."),
    "atomic_assignment_disabled": _l("Execution is refused: atomic assignment is not available on this platform."),
    "permission_confirmation_required": _l("Tick the box to confirm the permission conversation.assign_plan."),
}
RETRY_ERRORS = {
    "command_not_uncertain": _l("Only an uncertain command can be sent again; this one has an outcome already."),
    "atomic_assignment_disabled": _l("Not sent again: atomic assignment is not available on this platform."),
}


def runs_context(rule_id: uuid.UUID, message: dict | None = None) -> dict:
    """What the runs section shows (the rule page includes it too)."""
    page = runs.runs_page(current_member().tenant_id, rule_id, utcnow())
    return {"runs": page["runs"], "runs_unfinished": page["unfinished"], "runs_message": message,
            "run_status_labels": RUN_STATUS_LABELS, "kind_labels": KIND_LABELS,
            "schedule_state_labels": SCHEDULE_STATE_LABELS,
            "execute_permission": execution.EXECUTE_PERMISSION, "runs_rule_id": rule_id}


def _runs_answer(rule_id: uuid.UUID, message: dict | None = None, status: int = 200):
    """The runs partial for htmx; the rule page (with the message flashed) otherwise."""
    if htmx:
        return render_template("rules/_runs.html", **runs_context(rule_id, message)), status
    if message:
        flash(message["text"], "error" if message["error"] else "ok")
    return redirect(url_for("rules.rule_page", rule_id=rule_id, _anchor="runs"))


def _refusal(err: ApiError, texts: dict, fallback: str, **extra) -> dict:
    """A refused request's message (a missing rule or run is not found, not a message); `fallback`
    is a sentence with the code's place, `%(code)s`, for codes without their own text."""
    db.session.rollback()
    if err.code == "not_found":
        raise err
    text = str(texts[err.code]) if err.code in texts else fallback % {"code": err.code}
    return {"error": True, "code": err.code, "text": text, **extra}


def _plan_refusal(err: ApiError) -> dict:
    """A refused plan's message; a rate limit says when to try again."""
    message = _refusal(err, PLAN_ERRORS, _("Planning failed: %(code)s."))
    if err.code == "plan_rate_limited":
        retry = form_integer(err.headers.get("Retry-After")) or 60
        message["text"] = ngettext("One plan per minute for this workspace: try again in %(num)d second.",
                                   "One plan per minute for this workspace: try again in %(num)d seconds.", retry)
    return message


@bp.get("", strict_slashes=False)
@admin_console_required
def section(rule_id: uuid.UUID):
    """The runs section (it polls itself while a run is queued or running)."""
    return _runs_answer(rule_id)


@bp.post("", strict_slashes=False)
@admin_console_required
def plan_now(rule_id: uuid.UUID):
    """Queue a read-only plan of the published rule: committed, then its job enqueued, as the API does."""
    try:
        run = plans.request_plan(current_member().tenant_id, current_user.id, rule_id)
    except ApiError as err:
        return _runs_answer(rule_id, _plan_refusal(err), 422)
    commit_then_enqueue(plans.plan_job(run.id))
    return _runs_answer(rule_id, {"error": False, "code": "queued",
                                  "text": _("A read-only plan is queued; this section updates by itself. "
                                            "Nothing is reassigned.")})


@bp.post("/<uuid:run_id>/execute")
@admin_console_required
def execute_run(rule_id: uuid.UUID, run_id: uuid.UUID):
    """Approve one execution of a fresh complete plan after the administrator confirmed
    conversation.assign_plan: committed, then one job per command queued."""
    tenant_id = current_member().tenant_id
    runs.check_run(tenant_id, rule_id, run_id)
    confirmed, permission = request.form.get("confirm") == "on", request.form.get("permission", "")
    try:
        data = execution.request_execution(tenant_id, current_user.id, run_id, confirmed=confirmed,
                                           permission=permission)
    except ApiError as err:
        return _runs_answer(rule_id, _refusal(err, EXECUTE_ERRORS, _("Execution failed: %(code)s."),
                                              run_id=str(run_id)), 422)
    db.session.commit()
    execution.queue_jobs(tenant_id, run_id)
    return _runs_answer(rule_id, {"error": False, "code": "execution_queued", "run_id": str(run_id),
                                  "text": ngettext(
                                      "Execution approved: %(num)d reassignment command queued. "
                                      "Each is rechecked before it is applied; the receipts update below.",
                                      "Execution approved: %(num)d reassignment commands queued. "
                                      "Each is rechecked before it is applied; the receipts update below.",
                                      data["commands"])})


@bp.post("/<uuid:run_id>/commands/<uuid:conversation_id>/retry")
@admin_console_required
def retry_command(rule_id: uuid.UUID, run_id: uuid.UUID, conversation_id: uuid.UUID):
    """Send an `uncertain` command again (it never wrote); the receipts partial, polling again."""
    tenant_id = current_member().tenant_id
    runs.check_run(tenant_id, rule_id, run_id)
    try:
        execution.retry_uncertain(tenant_id, current_user.id, run_id, conversation_id)
    except ApiError as err:
        message, status = _refusal(err, RETRY_ERRORS, _("Not sent again: %(code)s.")), 409
    else:
        db.session.commit()
        execution.queue_jobs(tenant_id, run_id)
        message, status = {"error": False, "text": _("Sent again: it is rechecked and compared with the plan's "
                                                     "snapshot before it writes.")}, 200
    if not htmx:
        flash(message["text"], "error" if message["error"] else "info")
        return redirect(url_for("rules.rule_page", rule_id=rule_id, _anchor=f"run-{run_id}"))
    return render_template("rules/_execution.html", execution=runs.execution_page(tenant_id, rule_id, run_id),
                           runs_rule_id=rule_id, retry_message=message), status


@bp.get("/<uuid:run_id>/execution")
@admin_console_required
def execution_receipts(rule_id: uuid.UUID, run_id: uuid.UUID):
    """The receipts partial of one run's execution (it polls itself until every receipt is final)."""
    found = runs.execution_page(current_member().tenant_id, rule_id, run_id)
    if not htmx:
        return redirect(url_for("rules.rule_page", rule_id=rule_id, _anchor=f"run-{run_id}"))
    return render_template("rules/_execution.html", execution=found, runs_rule_id=rule_id)
