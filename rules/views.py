"""Automation console pages (HTMX): rule list, rule editor with its weekly slot grid, preview on
synthetic samples, member binding, publishing with permission confirmation, pause."""
import uuid
from datetime import datetime

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_login import current_user
from sqlalchemy import select

from core.api import ApiError
from core.clock import format_beijing, utcnow
from core.db import db
from core.model import model_state
from core.queue import DEFAULT, enqueue
from core.web import close_when_off
from desk.models import Member
from desk.sessions import admin_console_required, current_member
from rules import execution, forms, plans, preview, scheduler, service
from rules.catalog import AUTOMATION_PREVIEW_EXAMPLE, LIMITS
from rules.models import EXECUTION_MODES, AutomationRun
from studio import generation
from studio.catalog import CAPABILITY_VERSION

bp = Blueprint("rules", __name__)
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")

TRIGGER_LABELS = {"weekly": "Weekly slots", "manual_sample": "Manual sample run",
                  "message_received": "New customer message"}
MODE_LABELS = {"plan_only": "Read-only plans", "scheduled": "Scheduled assignment (weekly rules)",
               "message_event": "Message-triggered assignment (message rules)"}
PUBLISH_ERRORS = {
    "planning_disabled": "Publishing is refused: planning is switched off on this platform "
                         "(AUTOMATION_PLANNING_ENABLED). Drafts can still be saved and rules paused.",
    "schedule_execution_disabled": "Publishing is refused: scheduled execution is switched off on this platform.",
    "atomic_assignment_disabled": "Publishing is refused: atomic assignment is not available on this platform.",
    "permission_confirmation_required": "Tick the box to confirm exactly the permissions listed for the mode.",
    "version_conflict": "Someone published or paused this rule meanwhile; the page now shows the current state.",
    "invalid_execution_mode": "That execution mode does not fit this rule's trigger.",
    "rule_member_unavailable": "An assigned agent can no longer be assigned. Bind another agent, save, then publish.",
    "rule_member_binding_required": "Every assignee must be bound to an agent before publishing.",
}


def _when(text: str | None) -> str:
    """An ISO timestamp of the services, in Beijing time with the zone named."""
    return format_beijing(datetime.fromisoformat(text)) if text else ""


def _members(overview: dict) -> list[dict]:
    """Bindable agents as select options; equal display names get a short id to tell them apart."""
    members = overview["bindable_members"]
    names = [m["display_name"] for m in members]
    return [{"id": m["member_id"], "label": m["display_name"] if names.count(m["display_name"]) == 1
             else f"{m['display_name']} · {m['member_id'][:8]}"} for m in members]


def _is_htmx() -> bool:
    """Whether htmx asked for a partial."""
    return bool(request.headers.get("HX-Request"))


@bp.get("/extensions/automation")
@admin_console_required
def index():
    """The tenant's automation rules."""
    tenant_id = current_member().tenant_id
    overview = service.overview(tenant_id)
    rules = [{**rule, "updated": _when(rule["updated_at"])} for rule in overview["rules"]]
    return render_template("rules/index.html", rules=rules, overview=overview, triggers=TRIGGER_LABELS,
                           modes=MODE_LABELS, limits=LIMITS, scheduler=_scheduler_state(tenant_id))


def _scheduler_state(tenant_id: uuid.UUID) -> dict:
    """The scheduler's state with its times as Beijing wall-clock text."""
    state = scheduler.state(tenant_id)
    for rule in state["rules"]:
        rule["next_slot_text"] = _when(rule["next_slot"])
        if rule["latest_run"]:
            rule["latest_run"]["planned_text"] = _when(rule["latest_run"]["planned_for"])
    return {**state, "last_tick_text": _when(state["last_tick"])}


# --- the editor page ----------------------------------------------------------------------------

def _publish_modes(definition: dict) -> list[dict]:
    """Each execution mode, whether it fits the rule's trigger and the exact permissions it grants."""
    modes = []
    for mode in EXECUTION_MODES:
        fits = service.MODE_TRIGGERS.get(mode, definition["trigger"]) == definition["trigger"]
        modes.append({"id": mode, "label": MODE_LABELS[mode], "fits": fits,
                      "permissions": service.required_permissions(definition, mode) if fits else []})
    return modes


def _rule_context(rule_id: uuid.UUID, selected: int | None) -> dict:
    """An existing rule: its state, revisions, the revision shown and what publishing it grants."""
    found = service.rule_versions(current_member().tenant_id, rule_id)
    versions = [{**v, "created": _when(v["created_at"])} for v in found["versions"]]
    current = next((v for v in versions if v["revision"] == selected), versions[0])
    return {"rule": {**found["rule"], "updated": _when(found["rule"]["updated_at"])}, "versions": versions,
            "current": current, "publish_modes": _publish_modes(current["definition"])}


def _render_editor(rule_id: uuid.UUID | None, values: dict | None, status: int = 200, *, selected: int | None = None,
                   error: ApiError | None = None, samples: list[dict] | None = None, **extra):
    """The editor page of a new (rule_id None) or an existing rule, with the problem shown."""
    overview = service.overview(current_member().tenant_id)
    context = _rule_context(rule_id, selected) if rule_id else {"rule": None}
    if rule_id:
        context |= _runs_context(rule_id)
    place = forms.error_place(error.detail) if error else None
    if values is None:
        values = forms.definition_to_form(context["current"]["definition"])
    context |= {"values": values, "members": _members(overview), "switches": overview["switches"],
                "error": error, "place": place, "error_text": forms.error_message(error.code, place) if error else "",
                "samples": forms.DEFAULT_SAMPLES if samples is None else samples,
                "paste": "", "semantic_confirmed": False, "model": model_state(),
                "instant": extra.pop("instant", None) or forms.instant_value(),
                "triggers": TRIGGER_LABELS, "modes": MODE_LABELS, "weekdays": forms.WEEKDAYS,
                "statuses": forms.STATUSES, "sample_statuses": forms.SAMPLE_STATUSES, "limits": LIMITS,
                "max_slot_rows": forms.MAX_SLOT_ROWS, "max_sample_rows": forms.MAX_SAMPLE_ROWS, **extra}
    return render_template("rules/rule.html", **context), status


@bp.get("/extensions/automation/new")
@admin_console_required
def new_rule():
    """A new rule from the weekly rotation template, or from an AI draft (placeholders; nothing saved)."""
    draft = _ai_draft(request.args.get("draft", ""))
    return _render_editor(None, forms.definition_to_form(draft or AUTOMATION_PREVIEW_EXAMPLE),
                          from_draft=draft is not None, open_draft=request.args.get("ai") == "1")


def _ai_draft(text: str) -> dict | None:
    """The rule definition an AI generation of this tenant drafted (None without one)."""
    if not text:
        return None
    found = generation.find(current_member().tenant_id, _uuid(text))
    return found.rule_draft if found.status == "succeeded" else None


@bp.get("/extensions/automation/<uuid:rule_id>")
@admin_console_required
def rule_page(rule_id: uuid.UUID):
    """One rule: state, revisions, editor, preview, publishing and pause."""
    return _render_editor(rule_id, None, selected=request.args.get("revision", type=int))


def _posted_editor() -> dict:
    """What a re-render of the editor shows again from the posted form."""
    form = request.form
    return {"values": forms.form_values(form), "samples": forms.sample_rows(form),
            "paste": form.get("samples_paste", ""), "instant": form.get("instant", ""),
            "semantic_confirmed": form.get("semantic_confirmed") == "on"}


def _save(rule_id: uuid.UUID | None):
    """Save the editor as a new rule or a new revision; 422 (409 for a conflict) shows the problem."""
    posted = _posted_editor()
    body = {"definition": forms.values_to_definition(posted["values"])}
    if rule_id:
        text = request.form.get("expected_revision", "")
        body |= {"rule_id": str(rule_id), "expected_revision": int(text) if text.isdigit() else text}
    try:
        saved = service.save_rule(current_member().tenant_id, current_user.id, body)
    except ApiError as err:
        db.session.rollback()
        status = 409 if err.code == "version_conflict" else 422
        return _render_editor(rule_id, posted.pop("values"), status, error=err, **posted)
    db.session.commit()
    flash(f"Saved revision {saved['revision']} as a draft. The published revision is unchanged until you publish.",
          "ok")
    return redirect(url_for("rules.rule_page", rule_id=saved["rule_id"]))


@bp.post("/extensions/automation/new")
@admin_console_required
def create():
    """Save the new rule (revision 1)."""
    return _save(None)


@bp.post("/extensions/automation/<uuid:rule_id>/revisions")
@admin_console_required
def save_revision(rule_id: uuid.UUID):
    """Save the editor as the rule's next revision, guarded by the revision the page was based on."""
    return _save(rule_id)


def _change_rows(posted: dict, op: str, index: int) -> str:
    """Apply a row button to the posted editor; which partial it changed (`slots` or `samples`)."""
    values = posted["values"]
    if op == "add_slot":
        values["slots"] = forms.add_row(values["slots"], forms.BLANK_SLOT, forms.MAX_SLOT_ROWS)
    elif op == "remove_slot":
        values["slots"] = forms.remove_row(values["slots"], index)
    elif op == "add_sample":
        posted["samples"] = forms.add_row(posted["samples"], forms.BLANK_SAMPLE, forms.MAX_SAMPLE_ROWS)
    elif op == "remove_sample":
        posted["samples"] = forms.remove_row(posted["samples"], index)
    else:
        raise ApiError("not_found", 404)
    return "slots" if op.endswith("_slot") else "samples"


@bp.post("/extensions/automation/editor")
@admin_console_required
def editor_rows():
    """Add or remove a slot or sample row (nothing is saved): the rows' partial for htmx, the
    whole editor page otherwise."""
    op, _, index = request.form.get("op", "").partition(":")
    posted = _posted_editor()
    part = _change_rows(posted, op, int(index) if index.isdigit() else -1)
    rule_id = _rule_id(request.form.get("rule_id", ""))
    if not _is_htmx():
        return _render_editor(rule_id, posted.pop("values"), **posted)
    overview = service.overview(current_member().tenant_id)
    return render_template(f"rules/_{part}.html", values=posted["values"], samples=posted["samples"],
                           members=_members(overview), weekdays=forms.WEEKDAYS,
                           sample_statuses=forms.SAMPLE_STATUSES, max_slot_rows=forms.MAX_SLOT_ROWS,
                           max_sample_rows=forms.MAX_SAMPLE_ROWS, error=None, place=None, focus=op)


def _uuid(text: str) -> uuid.UUID:
    """An id from a form or a query string; anything else is not found."""
    try:
        return uuid.UUID(text)
    except ValueError:
        raise ApiError("not_found", 404) from None


def _rule_id(text: str) -> uuid.UUID | None:
    """The rule an editor post belongs to (empty for a new rule)."""
    return _uuid(text) if text else None


# --- preview ------------------------------------------------------------------------------------

def _next_times(times: list[str]) -> list[dict]:
    """The preview's next slot starts (ISO, +08:00) as Beijing wall-clock text."""
    moments = [datetime.fromisoformat(text) for text in times]
    return [{"iso": text, "text": moment.strftime("%Y-%m-%d %a %H:%M")} for text, moment in zip(times, moments)]


@bp.post("/extensions/automation/preview")
@admin_console_required
def run_preview():
    """Simulate the editor's rule on the panel's synthetic samples: nothing is read, saved or assigned.
    The result partial for htmx; the whole editor page with the result otherwise."""
    posted = _posted_editor()
    samples, origins = forms.samples_for_preview(posted["samples"], posted["paste"])
    body = {"capability_version": CAPABILITY_VERSION,
            "definition": forms.values_to_definition(posted["values"]), "samples": samples,
            "instant": forms.instant_to_utc(posted["instant"] or forms.instant_value()),
            "semantic_confirmed": posted["semantic_confirmed"]}
    overview = service.overview(current_member().tenant_id)
    shown = {"previewed": samples, "member_names": {m["id"]: m["label"] for m in _members(overview)}}
    try:
        result = preview.preview(current_member().tenant_id, body)
    except ApiError as err:
        db.session.rollback()
        status = 422
        shown |= {"preview_error": err, "preview_message": forms.preview_error_message(err.code, err.detail, origins)}
    else:
        db.session.commit()  # a semantic preview writes its AI points use
        status = 200
        shown |= {"preview_result": result, "next_times": _next_times(result["next_planned_times"])}
    if _is_htmx():
        return render_template("rules/_preview.html", **shown), status
    rule_id = _rule_id(request.form.get("rule_id", ""))
    return _render_editor(rule_id, posted.pop("values"), status, **posted, **shown)


# --- publishing and pause -----------------------------------------------------------------------

@bp.post("/extensions/automation/<uuid:rule_id>/publish")
@admin_console_required
def publish(rule_id: uuid.UUID):
    """Publish a revision in the chosen mode after the administrator confirmed its exact permissions."""
    tenant_id = current_member().tenant_id
    form = request.form
    number = form.get("revision", type=int) or 0
    mode = form.get("execution_mode", "plan_only")
    expected = form.get("expected_active_revision", "")
    try:
        revision = next((v for v in service.rule_versions(tenant_id, rule_id)["versions"]
                         if v["revision"] == number), None)
        if revision is None:
            raise ApiError("not_found", 404)
        confirmed = form.get("confirm") == "on"
        permissions = service.required_permissions(revision["definition"], mode) \
            if confirmed and mode in EXECUTION_MODES else []
        service.publish(tenant_id, current_user.id, rule_id, {
            "revision": number, "expected_active_revision": int(expected) if expected.isdigit() else None,
            "permissions": permissions, "confirm": confirmed, "execution_mode": mode})
    except ApiError as err:
        db.session.rollback()
        if err.code == "not_found":
            raise
        flash(PUBLISH_ERRORS.get(err.code, f"Publishing failed: {err.code}."), "error")
        return redirect(url_for("rules.rule_page", rule_id=rule_id, revision=number))
    db.session.commit()
    flash(f"Revision {number} is published: {MODE_LABELS[mode].lower()}.", "ok")
    return redirect(url_for("rules.rule_page", rule_id=rule_id))


@bp.post("/extensions/automation/<uuid:rule_id>/pause")
@admin_console_required
def pause(rule_id: uuid.UUID):
    """Pause a published rule: queued plans are cancelled and later commands blocked."""
    try:
        service.pause(current_member().tenant_id, current_user.id, rule_id, {})
    except ApiError as err:
        db.session.rollback()
        if err.code == "not_found":
            raise
        flash("Only a published rule can be paused." if err.code == "rule_not_published"
              else f"Pausing failed: {err.code}.", "error")
        return redirect(url_for("rules.rule_page", rule_id=rule_id))
    db.session.commit()
    flash("The rule is paused: its grant is revoked and queued plans are cancelled. Publish again to resume.", "ok")
    return redirect(url_for("rules.rule_page", rule_id=rule_id))


# --- AI drafts ----------------------------------------------------------------------------------

@bp.post("/extensions/automation/draft")
@admin_console_required
def start_draft():
    """Ask the platform's model to draft a rule from a requirement; the partial then polls."""
    prompt = request.form.get("prompt", "")
    try:
        started = generation.start(current_member().tenant_id, current_user.id,
                                   generation.parse_request({"prompt": prompt}))
    except ApiError as err:
        db.session.rollback()
        return render_template("rules/_draft.html", draft_error=err, prompt=prompt), 422
    db.session.commit()
    generation.enqueue_job(started.id)
    return render_template("rules/_draft.html", generation=started)


@bp.get("/extensions/automation/draft/<uuid:generation_id>")
@admin_console_required
def draft_progress(generation_id: uuid.UUID):
    """The progress partial while the model drafts; the editor filled with the draft once done."""
    found = generation.find(current_member().tenant_id, generation_id)
    try:
        data, status = generation.answer(found)
    except ApiError as err:
        return render_template("rules/_draft.html", draft_error=err)
    if status == 202:
        return render_template("rules/_draft.html", generation=found)
    if data["kind"] != "automation_preview":  # the model drafted a form application instead
        return render_template("rules/_draft.html", app_draft=data)
    target = url_for("rules.new_rule", draft=found.id)
    return ("", 200, {"HX-Redirect": target}) if _is_htmx() else redirect(target)


# --- runs: plans on demand, their results, approving one execution and its receipts --------------

RUN_STATUS_LABELS = {"queued": "Queued", "running": "Running", "complete": "Complete", "partial": "Partial",
                     "cancelled": "Cancelled", "failed": "Failed", "missed": "Missed"}
KIND_LABELS = {"manual": "Manual plan", "scheduled": "Scheduled", "message_event": "Message event"}
UNFINISHED_RUNS = ("queued", "running")
PLAN_ERRORS = {
    "planning_disabled": "Planning is refused: it is switched off on this platform (AUTOMATION_PLANNING_ENABLED).",
    "plan_rate_limited": "One plan per minute for this workspace: try again in {retry} seconds.",
    "rule_not_published": "Only a published rule can be planned: publish a revision first.",
}
EXECUTE_ERRORS = {
    "plan_expired": "This plan is more than 5 minutes old and can no longer be executed: plan again.",
    "plan_not_executable": "Only a complete plan can be executed.",
    "plan_without_snapshot": "This plan lacks the snapshots execution compares with: plan again.",
    "execution_disabled": "Execution is refused: single-run execution is switched off on this platform "
                          "(AUTOMATION_EXECUTION_ENABLED).",
    "atomic_assignment_disabled": "Execution is refused: atomic assignment is not available on this platform.",
    "permission_confirmation_required": "Tick the box to confirm the permission conversation.assign_plan.",
}


RETRY_ERRORS = {
    "command_not_uncertain": "Only an uncertain command can be sent again; this one has an outcome already.",
    "atomic_assignment_disabled": "Not sent again: atomic assignment is not available on this platform.",
}


def _member_names(tenant_id: uuid.UUID, ids: set[str]) -> dict[str, str]:
    """Display names of the tenant's members with these ids (str -> name)."""
    wanted = {uuid.UUID(text) for text in ids if text}
    if not wanted:
        return {}
    rows = db.session.execute(select(Member.id, Member.display_name).where(
        Member.tenant_id == tenant_id, Member.id.in_(wanted)))
    return {str(row.id): row.display_name for row in rows}


def _receipts(tenant_id: uuid.UUID, run_id: uuid.UUID, names: dict[str, str] | None = None) -> dict:
    """The run's execution status with each receipt's target named."""
    status = execution.execution_status(tenant_id, run_id)
    if names is None:
        names = _member_names(tenant_id, {r["target_member_id"] for r in status["receipts"]})
    status["receipts"] = [{**r, "target_name": names.get(r["target_member_id"], ""),
                           "updated": _when(r["updated_at"])} for r in status["receipts"]]
    status["pending"] = sum(r["status"] not in execution.FINAL for r in status["receipts"])
    return status


def _runs_context(rule_id: uuid.UUID, message: dict | None = None) -> dict:
    """The runs section: the rule's 30 newest runs with their results, whether one is unfinished,
    which may be executed now and the receipts of the executed ones."""
    tenant_id = current_member().tenant_id
    runs = plans.rule_runs(tenant_id, rule_id)["runs"]
    extra = {str(row.id): row for row in db.session.execute(select(
        AutomationRun.id, AutomationRun.finished_at, AutomationRun.execution_requested_at).where(
        AutomationRun.tenant_id == tenant_id, AutomationRun.id.in_([uuid.UUID(r["run_id"]) for r in runs])))} \
        if runs else {}
    names = _member_names(tenant_id, {i["target_member_id"] for r in runs for i in r["items"]})
    now = utcnow()
    shown = []
    for run in runs:
        row = extra[run["run_id"]]
        executed = row.execution_requested_at is not None or run["schedule_execution_state"] == "queued"
        fresh = row.finished_at is not None and now - row.finished_at <= execution.EXECUTABLE_FOR
        shown.append({**run, "planned": _when(run["planned_for"]), "created": _when(run["created_at"]),
                      "finished": _when(run["finished_at"]),
                      "items": [{**i, "target_name": names.get(i["target_member_id"] or "", "")} for i in run["items"]],
                      "executable": run["status"] == "complete" and fresh and not executed
                      and run["planned_count"] > 0,
                      "expired": run["status"] == "complete" and not fresh and not executed,
                      "execution": _receipts(tenant_id, uuid.UUID(run["run_id"]), names) if executed else None})
    return {"runs": shown, "runs_unfinished": any(r["status"] in UNFINISHED_RUNS for r in runs),
            "runs_message": message, "run_status_labels": RUN_STATUS_LABELS, "kind_labels": KIND_LABELS,
            "execute_permission": execution.EXECUTE_PERMISSION, "runs_rule_id": rule_id}


def _runs_answer(rule_id: uuid.UUID, message: dict | None = None, status: int = 200):
    """The runs partial for htmx; the rule page (with the message flashed) otherwise."""
    if _is_htmx():
        return render_template("rules/_runs.html", **_runs_context(rule_id, message)), status
    if message:
        flash(message["text"], "error" if message["error"] else "ok")
    return redirect(url_for("rules.rule_page", rule_id=rule_id, _anchor="runs"))


@bp.get("/extensions/automation/<uuid:rule_id>/runs")
@admin_console_required
def runs(rule_id: uuid.UUID):
    """The runs section (it polls itself while a run is queued or running)."""
    return _runs_answer(rule_id)


@bp.post("/extensions/automation/<uuid:rule_id>/runs")
@admin_console_required
def plan_now(rule_id: uuid.UUID):
    """Queue a read-only plan of the published rule: committed, then its job enqueued, as the API does."""
    try:
        run = plans.request_plan(current_member().tenant_id, current_user.id, rule_id, {})
    except ApiError as err:
        db.session.rollback()
        if err.code == "not_found":
            raise
        text = PLAN_ERRORS.get(err.code, f"Planning failed: {err.code}.")
        return _runs_answer(rule_id, {"error": True, "code": err.code,
                                      "text": text.format(retry=err.headers.get("Retry-After", "60"))}, 422)
    db.session.commit()
    enqueue("jobs.tasks.plan_rule", str(run.id), queue_name=DEFAULT, job_id=f"rule-plan-{run.id}",
            job_timeout=plans.JOB_TIMEOUT)
    return _runs_answer(rule_id, {"error": False, "code": "queued",
                                  "text": "A read-only plan is queued; this section updates by itself. "
                                          "Nothing is reassigned."})


def _rule_run(rule_id: uuid.UUID, run_id: uuid.UUID) -> None:
    """404 unless the run is one of this tenant's runs of this rule."""
    found = db.session.scalar(select(AutomationRun.id).where(
        AutomationRun.id == run_id, AutomationRun.rule_id == rule_id,
        AutomationRun.tenant_id == current_member().tenant_id))
    if found is None:
        raise ApiError("not_found", 404)


@bp.post("/extensions/automation/<uuid:rule_id>/runs/<uuid:run_id>/execute")
@admin_console_required
def execute_run(rule_id: uuid.UUID, run_id: uuid.UUID):
    """Approve one execution of a fresh complete plan after the administrator confirmed
    conversation.assign_plan: committed, then one job per command queued."""
    tenant_id = current_member().tenant_id
    _rule_run(rule_id, run_id)
    body = {"confirm": request.form.get("confirm") == "on",
            "permission": request.form.get("permission", "")}
    try:
        data = execution.request_execution(tenant_id, current_user.id, run_id, body)
    except ApiError as err:
        db.session.rollback()
        if err.code == "not_found":
            raise
        return _runs_answer(rule_id, {"error": True, "code": err.code, "run_id": str(run_id),
                                      "text": EXECUTE_ERRORS.get(err.code, f"Execution failed: {err.code}.")}, 422)
    db.session.commit()
    execution.queue_jobs(tenant_id, run_id)
    return _runs_answer(rule_id, {"error": False, "code": "execution_queued", "run_id": str(run_id),
                                  "text": f"Execution approved: {data['commands']} reassignment command(s) queued. "
                                          "Each is rechecked before it is applied; the receipts update below."})


@bp.post("/extensions/automation/<uuid:rule_id>/runs/<uuid:run_id>/commands/<uuid:conversation_id>/retry")
@admin_console_required
def retry_command(rule_id: uuid.UUID, run_id: uuid.UUID, conversation_id: uuid.UUID):
    """Send an `uncertain` command again (it never wrote); the receipts partial, polling again."""
    tenant_id = current_member().tenant_id
    _rule_run(rule_id, run_id)
    try:
        execution.retry_uncertain(tenant_id, current_user.id, run_id, conversation_id)
    except ApiError as err:
        db.session.rollback()
        if err.code == "not_found":
            raise
        message, status = {"error": True, "text": RETRY_ERRORS.get(err.code, f"Not sent again: {err.code}.")}, 409
    else:
        db.session.commit()
        execution.queue_jobs(tenant_id, run_id)
        message, status = {"error": False, "text": "Sent again: it is rechecked and compared with the plan's "
                                                   "snapshot before it writes."}, 200
    if not _is_htmx():
        flash(message["text"], "error" if message["error"] else "info")
        return redirect(url_for("rules.rule_page", rule_id=rule_id, _anchor=f"run-{run_id}"))
    return render_template("rules/_execution.html", execution=_receipts(tenant_id, run_id), runs_rule_id=rule_id,
                           retry_message=message), status


@bp.get("/extensions/automation/<uuid:rule_id>/runs/<uuid:run_id>/execution")
@admin_console_required
def execution_receipts(rule_id: uuid.UUID, run_id: uuid.UUID):
    """The receipts partial of one run's execution (it polls itself until every receipt is final)."""
    _rule_run(rule_id, run_id)
    if not _is_htmx():
        return redirect(url_for("rules.rule_page", rule_id=rule_id, _anchor=f"run-{run_id}"))
    return render_template("rules/_execution.html", execution=_receipts(current_member().tenant_id, run_id),
                           runs_rule_id=rule_id)
