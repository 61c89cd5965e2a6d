"""Studio in the agents' workbench: the tools the desk's side panel shows (handed to the desk at
wiring time as its panel provider) and the panel's own requests: submit the form, share or revoke
customer data, analyze intent. Every answer is the tool again, for the conversation it was used in."""
import uuid

from flask import Blueprint, current_app, flash, redirect, request, url_for
from flask_babel import gettext as _, lazy_gettext as _l, lazy_pgettext, ngettext
from flask_wtf.csrf import generate_csrf
from markupsafe import Markup

from core.api import ApiError, parse_uuid
from core.db import db
from core.forms import form_integer
from core.i18n import current_locale
from core.web import close_when_off, htmx
from desk.conversations import get_conversation
from desk.models import Conversation, Member
from desk.panels import AFTER, Style, Tool
from desk.sessions import current_member, restricted_session, workbench_required
from studio import workbench
from studio.forms import form_to_input

bp = Blueprint("studio_workbench", __name__)
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")

# What people read (lazy: translated when shown, in the request's language).
CLOSED = _l("This form is no longer in the workbench: an administrator removed it, disabled the application or "
            "published a version without workbench settings. Nothing was saved; reload the workbench.")
SUBMIT_ERRORS = {
    "idempotency_conflict": _l("This form instance was already submitted with other values: reload the workbench "
                               "to start a new entry."),
    "record_limit": _l("The application holds 1,000 records, its limit: ask an administrator."),
    "invalid_idempotency_key": _l("The form was incomplete: reload the workbench and try again."),
}
INTENT_ERRORS = {
    "intent_confirmation_required": _l("Confirm the analysis first."),
    "intent_no_messages": _l("This conversation has no public text messages to analyze yet."),
    "intent_rate_limited": _l("You analyzed 10 conversations in this minute: try again shortly."),
    "intent_not_configured": _l("This version has no intent labels."),
    "model_not_configured": _l("The platform AI service is not configured: ask your operator."),
    "model_configuration_invalid": _l("The platform AI service is misconfigured: ask your operator."),
    "model_unavailable": _l("The AI service is unavailable right now: try again later."),
    "model_request_failed": _l("The AI service could not answer this request: try again later."),
    "model_rate_limited": _l("The AI service is busy: try again in a minute."),
    "model_invalid_response": _l("The AI service gave an unusable answer: try again."),
}
# The customer-data items (studio.models.GRANT_ITEMS) as the panel names them, and their copy buttons.
ITEM_LABELS = {"name": lazy_pgettext("person", "Name"), "contact": _l("Contact data"), "note": _l("Internal note")}
COPY_LABELS = {"name": _l("Copy name"), "contact": _l("Copy contact data"), "note": _l("Copy internal note")}


class WorkbenchTools:
    """The desk's panel provider: the styles and forms of the applications in the workbench."""

    def styles(self, member: Member) -> list[Style]:
        return [Style(str(entry.app_id), entry.title, entry.settings)
                for entry in workbench.run_entries(member)]

    def tools(self, member: Member, conversation: Conversation) -> list[Tool]:
        csrf = generate_csrf()
        return [Tool(_tool(entry, member, conversation, csrf), entry.settings.get("tools_position", AFTER))
                for entry in workbench.run_entries(member)]


def _macros():
    """The macros of studio/_workbench.html (the template's module is built once per process)."""
    return current_app.jinja_env.get_template("studio/_workbench.html").module


_KEPT = 512  # versions whose blank form fields a process keeps; all are dropped past it
_BLANK_FIELDS: dict[tuple[uuid.UUID, str], Markup] = {}  # a version's empty form fields, per language


def _blank_fields(entry: workbench.RunEntry, prefix: str) -> Markup:
    """The version's empty form fields in the request's language, rendered once per process (a
    version never changes, and they hold nothing of the request)."""
    key = (entry.version_id, current_locale())
    found = _BLANK_FIELDS.get(key)
    if found is None:
        if len(_BLANK_FIELDS) >= _KEPT:
            _BLANK_FIELDS.clear()
        found = _BLANK_FIELDS[key] = _macros().blank_fields(entry.definition, prefix)
    return found


def _record_form(entry: workbench.RunEntry, conversation_id: object, csrf: str, key: object, **state) -> Markup:
    """The tool's form: empty, or as submitted with what was wrong."""
    prefix = f"wb-{str(entry.app_id)[:8]}"  # the ids of its fields, unique among the page's tools
    return _macros().record_form(entry, conversation_id, csrf, key, _blank_fields(entry, prefix), prefix, **state)


def _tool(entry: workbench.RunEntry, member: Member, conversation: Conversation, csrf: str,
          notice: str | None = None) -> Markup:
    """One application's tool for the conversation, rendered by the template's macros (which
    escape everything they are given): the data sharing, the shared items of this conversation's
    customer (read only when something is shared), the form with a new idempotency key (a new form
    instance), the intent button."""
    macros, items = _macros(), entry.granted
    shared = macros.shared_data(entry.app_id, workbench.shared_profile(conversation.customer, items), ITEM_LABELS,
                                COPY_LABELS) if items else ""
    return macros.tool(entry, items, not restricted_session(), ITEM_LABELS,
                       _record_form(entry, conversation.id, csrf, uuid.uuid4()), conversation.id, csrf, shared,
                       macros.notice(notice) if notice else "")


def _used_in() -> tuple[Member, Conversation, int]:
    """The member, the conversation the tool was used in and the version it was rendered for."""
    member = current_member()
    conversation_id = parse_uuid(request.form.get("conversation_id", ""), "invalid_form")
    version = form_integer(request.form.get("version"), 1) or 0
    return member, get_conversation(member.tenant_id, conversation_id), version


def _answer(conversation: Conversation, html: str, status: int = 200, message: str | None = None,
            headers: dict | None = None):
    """The part of the tool that changed, for htmx; without it, the conversation's page (with the
    message flashed)."""
    if not htmx:
        if message:
            flash(str(message), "ok" if status == 200 else "error")
        return redirect(url_for("workbench.conversation", conversation_id=conversation.id))
    return html, status, headers or {}


def _closed(app_id: uuid.UUID, conversation: Conversation):
    """The run entry ended (`workbench_entry_closed`): the whole tool says so in place of its
    forms, as a 422 like the workbench's other refusals (htmx swaps those)."""
    db.session.rollback()
    return _answer(conversation, _macros().closed(CLOSED), 422, CLOSED,
                   {"HX-Retarget": f"#tool-{app_id}", "HX-Reswap": "outerHTML"})


def _submit_refusal(err: ApiError) -> str | None:
    """What the panel says of a refused submission (None: the fields say it)."""
    if err.code == "record_rate_limited":
        wait = form_integer(err.headers.get("Retry-After")) or 60
        return ngettext("Too many forms submitted in this minute: try again in %(num)d second.",
                        "Too many forms submitted in this minute: try again in %(num)d seconds.", wait)
    message = SUBMIT_ERRORS.get(err.code)
    return str(message) if message else None


@bp.post("/workbench/apps/<uuid:app_id>/records")
@workbench_required
def submit(app_id: uuid.UUID):
    """Submit the form as a record of the live version; a retried form instance replays. The
    answer is the form again: empty with a new key, or as submitted with what was wrong."""
    member, conversation, version = _used_in()
    try:
        entry = workbench.open_entry(member, app_id, version)
        key = parse_uuid(request.form.get("idempotency_key", ""), "invalid_idempotency_key")
        _record, replayed = workbench.submit(member, entry, conversation,
                                       form_to_input(entry.definition, request.form), key)
    except ApiError as err:
        if err.code in ("workbench_entry_closed", "extension_not_active"):
            return _closed(app_id, conversation)
        db.session.rollback()  # `entry` holds plain values: the form is shown again from them
        message = _submit_refusal(err)
        html = _record_form(entry, conversation.id, generate_csrf(), request.form.get("idempotency_key", ""),
                            values=request.form, error=err, error_message=message)
        status = 429 if err.code == "record_rate_limited" else 422
        return _answer(conversation, html, status, message or _("The form has a problem: see the fields."),
                       err.headers)
    notice = _("This submission was already saved.") if replayed else _("Record saved.")
    html = _record_form(entry, conversation.id, generate_csrf(), uuid.uuid4(), notice=notice)  # a new form instance
    db.session.commit()
    return _answer(conversation, html, message=notice)


@bp.post("/workbench/apps/<uuid:app_id>/grants")
@workbench_required
def grant(app_id: uuid.UUID):
    """Share exactly the ticked items of the selected customer's profile with this form."""
    member, conversation, version = _used_in()
    try:
        entry = workbench.set_grants(member, workbench.open_entry(member, app_id, version),
                                     set(request.form.getlist("items")), restricted=restricted_session())
    except ApiError as err:
        if err.code == "workbench_entry_closed":
            return _closed(app_id, conversation)
        raise
    db.session.commit()
    notice = _("Data sharing saved for 90 days.") if request.form.getlist("items") else _("Nothing is shared.")
    return _answer(conversation, _tool(entry, member, conversation, generate_csrf(), notice), message=notice)


@bp.post("/workbench/apps/<uuid:app_id>/grants/revoke")
@workbench_required
def revoke(app_id: uuid.UUID):
    """End every data grant of this agent for the application (records stay)."""
    member, conversation, version = _used_in()
    workbench.revoke_all(member, app_id, restricted=restricted_session())
    db.session.commit()
    notice = _("Data authorization revoked: no customer data shows beside this form.")
    try:
        entry = workbench.open_entry(member, app_id, version)
    except ApiError:
        return _closed(app_id, conversation)
    return _answer(conversation, _tool(entry, member, conversation, generate_csrf(), notice), message=notice)


def _intent_answer(app_id: uuid.UUID, conversation: Conversation, version: int, status: int = 200,
                   result=None, error_message: str | None = None):
    """The intent tool again: with a result or an error, and the button that asks for confirmation."""
    html = _macros().intent(app_id, conversation.id, generate_csrf(), version, result, error_message)
    notice = _("Intent: %(label)s. It needs human review.", label=result.label) if result else None
    return _answer(conversation, html, status, error_message or notice)


@bp.post("/workbench/apps/<uuid:app_id>/intent")
@workbench_required
def analyze(app_id: uuid.UUID):
    """Analyze the conversation's intent once the agent confirmed; nothing is sent or assigned."""
    member, conversation, version = _used_in()
    try:
        result = workbench.analyze_intent(member, app_id, version, conversation,
                                          confirmed=request.form.get("confirmed") == "yes")
    except ApiError as err:
        if err.code == "workbench_entry_closed":
            return _closed(app_id, conversation)
        db.session.rollback()
        message = INTENT_ERRORS.get(err.code) or _("The analysis failed (%(code)s).", code=err.code)
        return _intent_answer(app_id, conversation, version, 422, error_message=message)
    db.session.commit()
    return _intent_answer(app_id, conversation, version, result=result)
