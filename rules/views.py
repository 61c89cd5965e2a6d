"""Automation console pages (HTMX): rule list with the scheduler's state, the rule editor with its
weekly slot grid, preview on synthetic samples, member binding, publishing with permission
confirmation, pause and AI drafts. The page's runs section is `rules.run_views`."""
import uuid
from datetime import datetime

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import format_datetime
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import current_user

from core.api import ApiError
from core.i18n import beijing
from core.db import db
from core.forms import form_integer
from core.model import model_state
from core.web import close_when_off, htmx, redirect_to
from desk.sessions import admin_console_required, current_member
from rules import forms, preview, scheduler, service
from rules.catalog import AUTOMATION_PREVIEW_EXAMPLE, LIMITS
from rules.definition import STATUSES
from rules.drafts import RULE_PREVIEW
from rules.models import EXECUTION_MODES
from rules.run_views import RUN_STATUS_LABELS, SCHEDULE_STATE_LABELS, runs_context
from studio import generation

bp = Blueprint("rules", __name__)
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")

TRIGGER_LABELS = {"weekly": _l("Weekly slots"), "manual_sample": _l("Manual sample run"),
                  "message_received": _l("New customer message")}
MODE_LABELS = {"plan_only": _l("Read-only plans"), "scheduled": _l("Scheduled assignment (weekly rules)"),
               "message_event": _l("Message-triggered assignment (message rules)")}
PUBLISH_ERRORS = {
    "planning_disabled": _l("Publishing is refused: planning is switched off on this platform "
                            "(AUTOMATION_PLANNING_ENABLED). Drafts can still be saved and rules paused."),
    "schedule_execution_disabled": _l("Publishing is refused: scheduled execution is switched off on this "
                                      "platform."),
    "atomic_assignment_disabled": _l("Publishing is refused: atomic assignment is not available on this platform."),
    "permission_confirmation_required": _l("Tick the box to confirm exactly the permissions listed for the mode."),
    "version_conflict": _l("Someone published or paused this rule meanwhile; the page now shows the current state."),
    "invalid_execution_mode": _l("That execution mode does not fit this rule's trigger."),
    "rule_member_unavailable": _l("An assigned agent can no longer be assigned. Bind another agent, save, then "
                                  "publish."),
    "rule_member_binding_required": _l("Every assignee must be bound to an agent before publishing."),
}


def _when(text: str | None) -> str:
    """An ISO timestamp of the services, in Beijing time with the zone named."""
    return beijing(datetime.fromisoformat(text)) if text else ""


def _members(overview: dict) -> list[dict]:
    """Bindable agents as select options; equal display names get a short id to tell them apart."""
    members = overview["bindable_members"]
    names = [m["display_name"] for m in members]
    return [{"id": m["member_id"], "label": m["display_name"] if names.count(m["display_name"]) == 1
             else f"{m['display_name']} · {m['member_id'][:8]}"} for m in members]


@bp.get("/extensions/automation")
@admin_console_required
def index():
    """The tenant's automation rules."""
    tenant_id = current_member().tenant_id
    overview = service.overview(tenant_id)
    rules = [{**rule, "updated": _when(rule["updated_at"])} for rule in overview["rules"]]
    return render_template("rules/index.html", rules=rules, overview=overview, triggers=TRIGGER_LABELS,
                           modes=MODE_LABELS, limits=LIMITS, scheduler=_scheduler_state(tenant_id),
                           run_status_labels=RUN_STATUS_LABELS, schedule_state_labels=SCHEDULE_STATE_LABELS)


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
        context |= runs_context(rule_id)
    place = forms.error_place(error.detail) if error else None
    if values is None:
        values = forms.definition_to_form(context["current"]["definition"])
    context |= {"values": values, "members": _members(overview), "switches": overview["switches"],
                "error": error, "place": place, "error_text": forms.error_message(error.code, place) if error else "",
                "samples": forms.DEFAULT_SAMPLES if samples is None else samples,
                "paste": "", "semantic_confirmed": False, "model": model_state(),
                "instant": extra.pop("instant", None) or forms.instant_value(),
                "triggers": TRIGGER_LABELS, "modes": MODE_LABELS, "weekdays": forms.WEEKDAYS,
                "statuses": STATUSES, "status_labels": forms.STATUS_LABELS,
                "sample_statuses": forms.SAMPLE_STATUS_CHOICES, "limits": LIMITS,
                "max_slot_rows": forms.MAX_SLOT_ROWS, "max_sample_rows": forms.MAX_SAMPLE_ROWS, **extra}
    return render_template("rules/rule.html", **context), status


@bp.get("/extensions/automation/new")
@admin_console_required
def new_rule():
    """A new rule from the weekly rotation template, or from an AI draft (placeholders; nothing saved)."""
    draft = _ai_draft(request.args.get("draft", ""))
    return _render_editor(None, forms.definition_to_form(draft or AUTOMATION_PREVIEW_EXAMPLE, bind=False),
                          from_draft=draft is not None, open_draft=request.args.get("ai") == "1")


def _ai_draft(text: str) -> dict | None:
    """The rule definition an AI generation of this tenant drafted (None without one)."""
    if not text:
        return None
    found = generation.find(current_member().tenant_id, _uuid(text))
    return found.preview_draft if found.status == "succeeded" and found.draft_kind == RULE_PREVIEW.name else None


@bp.get("/extensions/automation/<uuid:rule_id>")
@admin_console_required
def rule_page(rule_id: uuid.UUID):
    """One rule: state, revisions, editor, preview, publishing and pause."""
    return _render_editor(rule_id, None, selected=form_integer(request.args.get("revision")))


def _posted_editor() -> dict:
    """What a re-render of the editor shows again from the posted form."""
    form = request.form
    return {"values": forms.form_values(form), "samples": forms.sample_rows(form),
            "paste": form.get("samples_paste", ""), "instant": form.get("instant", ""),
            "semantic_confirmed": form.get("semantic_confirmed") == "on"}


def _save(rule_id: uuid.UUID | None):
    """Save the editor as a new rule or a new revision; 422 (409 for a conflict) shows the problem."""
    posted = _posted_editor()
    definition = forms.values_to_definition(posted["values"])
    change = service.RuleChange(rule_id, forms.revision_number(request.form.get("expected_revision"))) \
        if rule_id else None
    try:
        saved = service.save_rule(current_member().tenant_id, current_user.id, definition, change)
    except ApiError as err:
        db.session.rollback()
        status = 409 if err.code == "version_conflict" else 422
        return _render_editor(rule_id, posted.pop("values"), status, error=err, **posted)
    db.session.commit()
    flash(_("Saved revision %(revision)s as a draft. The published revision is unchanged until you publish.",
            revision=saved["revision"]), "ok")
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
        raise ApiError("invalid_operation", 400)
    return "slots" if op.endswith("_slot") else "samples"


@bp.post("/extensions/automation/editor")
@admin_console_required
def editor_rows():
    """Add or remove a slot or sample row (nothing is saved): the rows' partial for htmx, the
    whole editor page otherwise."""
    op, _colon, index = request.form.get("op", "").partition(":")
    posted = _posted_editor()
    position = form_integer(index)
    part = _change_rows(posted, op, -1 if position is None else position)
    rule_id = _rule_id(request.form.get("rule_id", ""))
    if not htmx:
        return _render_editor(rule_id, posted.pop("values"), **posted)
    overview = service.overview(current_member().tenant_id)
    return render_template(f"rules/_{part}.html", values=posted["values"], samples=posted["samples"],
                           members=_members(overview), weekdays=forms.WEEKDAYS,
                           sample_statuses=forms.SAMPLE_STATUS_CHOICES, max_slot_rows=forms.MAX_SLOT_ROWS,
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
    """The preview's next slot starts (ISO, +08:00) as Beijing wall-clock text, the weekday named in
    the page's language."""
    moments = [datetime.fromisoformat(text) for text in times]
    return [{"iso": text, "text": format_datetime(moment, "yyyy-MM-dd EEE HH:mm")}
            for text, moment in zip(times, moments)]


@bp.post("/extensions/automation/preview")
@admin_console_required
def run_preview():
    """Simulate the editor's rule on the panel's synthetic samples: nothing is read, saved or assigned.
    The result partial for htmx; the whole editor page with the result otherwise."""
    posted = _posted_editor()
    samples, origins = forms.samples_for_preview(posted["samples"], posted["paste"])
    simulation = preview.Simulation(forms.values_to_definition(posted["values"]), samples,
                                    forms.instant_to_utc(posted["instant"] or forms.instant_value()),
                                    semantic_confirmed=posted["semantic_confirmed"])
    overview = service.overview(current_member().tenant_id)
    shown = {"previewed": samples, "member_names": {m["id"]: m["label"] for m in _members(overview)}}
    try:
        result = preview.preview(current_member().tenant_id, simulation)
    except ApiError as err:
        db.session.rollback()
        status = 422
        shown |= {"preview_error": err, "preview_message": forms.preview_error_message(err.code, err.detail, origins)}
    else:
        db.session.commit()  # a semantic preview writes its AI points use
        status = 200
        shown |= {"preview_result": result, "next_times": _next_times(result["next_planned_times"])}
    if htmx:
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
    number = forms.revision_number(form.get("revision"))
    mode = form.get("execution_mode", "plan_only")
    expected = form.get("expected_active_revision", "").strip()
    try:
        revision = next((v for v in service.rule_versions(tenant_id, rule_id)["versions"]
                         if v["revision"] == number), None)
        if revision is None:
            raise ApiError("not_found", 404)
        confirmed = form.get("confirm") == "on"
        permissions = service.required_permissions(revision["definition"], mode) \
            if confirmed and mode in EXECUTION_MODES else []
        service.publish(tenant_id, current_user.id, rule_id, service.Publication(
            revision=number, expected_active_revision=forms.revision_number(expected) if expected else None,
            permissions=permissions, confirmed=confirmed, execution_mode=mode))
    except ApiError as err:
        db.session.rollback()
        if err.code == "not_found":
            raise
        flash(str(PUBLISH_ERRORS[err.code]) if err.code in PUBLISH_ERRORS
              else _("Publishing failed: %(code)s.", code=err.code), "error")
        return redirect(url_for("rules.rule_page", rule_id=rule_id, revision=number))
    db.session.commit()
    flash(_("Revision %(revision)s is published: %(mode)s.", revision=number, mode=str(MODE_LABELS[mode]).lower()),
          "ok")
    return redirect(url_for("rules.rule_page", rule_id=rule_id))


@bp.post("/extensions/automation/<uuid:rule_id>/pause")
@admin_console_required
def pause(rule_id: uuid.UUID):
    """Pause a published rule: queued plans are cancelled and later commands blocked."""
    try:
        service.pause(current_member().tenant_id, current_user.id, rule_id)
    except ApiError as err:
        db.session.rollback()
        if err.code == "not_found":
            raise
        flash(_("Only a published rule can be paused.") if err.code == "rule_not_published"
              else _("Pausing failed: %(code)s.", code=err.code), "error")
        return redirect(url_for("rules.rule_page", rule_id=rule_id))
    db.session.commit()
    flash(_("The rule is paused: its grant is revoked and queued plans are cancelled. Publish again to resume."), "ok")
    return redirect(url_for("rules.rule_page", rule_id=rule_id))


# --- AI drafts ----------------------------------------------------------------------------------

@bp.post("/extensions/automation/draft")
@admin_console_required
def start_draft():
    """Ask the platform's model to draft a rule from a requirement; the partial then polls."""
    prompt = request.form.get("prompt", "")
    try:
        started = generation.submit(current_member().tenant_id, current_user.id, {"prompt": prompt})
    except ApiError as err:
        return render_template("rules/_draft.html", draft_error=err, prompt=prompt), 422
    return render_template("rules/_draft.html", generation=started)


@bp.get("/extensions/automation/draft/<uuid:generation_id>")
@admin_console_required
def draft_progress(generation_id: uuid.UUID):
    """The progress partial while the model drafts; the editor filled with the draft once done."""
    try:
        found, data, status = generation.outcome(current_member().tenant_id, generation_id)
    except ApiError as err:
        return render_template("rules/_draft.html", draft_error=err)
    if status == 202:
        return render_template("rules/_draft.html", generation=found)
    if data["kind"] != RULE_PREVIEW.name:  # the model drafted a form application instead
        return render_template("rules/_draft.html", app_draft=data)
    target = url_for("rules.new_rule", draft=found.id)
    return redirect_to(target)
