"""Studio in the agents' workbench: the tools the desk's side panel shows (handed to the desk at
wiring time as its panel provider) and the panel's own requests: submit the form, share or revoke
customer data, analyze intent. Every answer is the tool again, for the conversation it was used in."""
import uuid

from flask import Blueprint, flash, redirect, render_template, request, url_for
from markupsafe import Markup

from core.api import ApiError, parse_uuid
from core.db import db
from core.forms import form_integer
from core.web import close_when_off, htmx
from desk.conversations import get_conversation
from desk.models import Conversation, Member
from desk.panels import Style, Tool
from desk.sessions import current_member, workbench_required
from studio import workbench
from studio.forms import form_to_input

bp = Blueprint("studio_workbench", __name__)
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")

CLOSED = ("This form is no longer in the workbench: an administrator removed it, disabled the application or "
          "published a version without workbench settings. Nothing was saved; reload the workbench.")
SUBMIT_ERRORS = {
    "idempotency_conflict": "This form instance was already submitted with other values: reload the workbench "
                            "to start a new entry.",
    "record_limit": "The application holds 1,000 records, its limit: ask an administrator.",
    "invalid_idempotency_key": "The form was incomplete: reload the workbench and try again.",
}
INTENT_ERRORS = {
    "intent_no_messages": "This conversation has no public text messages to analyze yet.",
    "intent_rate_limited": "You analyzed 10 conversations in this minute: try again shortly.",
    "intent_not_configured": "This version has no intent labels.",
    "model_not_configured": "The platform AI service is not configured: ask your operator.",
    "model_configuration_invalid": "The platform AI service is misconfigured: ask your operator.",
    "model_unavailable": "The AI service is unavailable right now: try again later.",
    "model_request_failed": "The AI service could not answer this request: try again later.",
    "model_rate_limited": "The AI service is busy: try again in a minute.",
    "model_invalid_response": "The AI service gave an unusable answer: try again.",
}


class WorkbenchTools:
    """The desk's panel provider: the styles and forms of the applications in the workbench."""

    def styles(self, member: Member) -> list[Style]:
        return [Style(str(entry.app.id), entry.title, entry.settings)
                for entry in workbench.run_entries(member.tenant_id)]

    def tools(self, member: Member, conversation: Conversation) -> list[Tool]:
        return [Tool(_tool_html(entry, member, conversation), entry.settings.get("tools_position", "after_profile"))
                for entry in workbench.run_entries(member.tenant_id)]


def _tool_html(entry: workbench.RunEntry, member: Member, conversation: Conversation, **state) -> Markup:
    """One application's tool for the conversation: shared data, the form, the intent button."""
    items = workbench.granted_items(member).get((entry.app.id, entry.version.version), set())
    return Markup(render_template(
        "studio/_workbench_tool.html", entry=entry, conversation=conversation, granted=items,
        shared=workbench.shared_profile(conversation.customer, items), item_labels=workbench.ITEM_LABELS,
        key=state.pop("key", None) or uuid.uuid4(), **state))


def _used_in() -> tuple[Member, Conversation, int]:
    """The member, the conversation the tool was used in and the version it was rendered for."""
    member = current_member()
    conversation_id = parse_uuid(request.form.get("conversation_id", ""), "invalid_form")
    version = form_integer(request.form.get("version"), 1) or 0
    return member, get_conversation(member.tenant_id, conversation_id), version


def _answer(conversation: Conversation, html: str, status: int = 200, message: str | None = None):
    """The tool for htmx; without it, the conversation's page (with the message flashed)."""
    if not htmx:
        if message:
            flash(message, "ok" if status == 200 else "error")
        return redirect(url_for("workbench.conversation", conversation_id=conversation.id))
    return html, status


def _closed(conversation: Conversation):
    """The run entry ended (`workbench_entry_closed`): the tool says so in place of the form, as
    a 422 like the workbench's other refusals (htmx swaps those)."""
    db.session.rollback()
    html = render_template("studio/_workbench_closed.html", message=CLOSED)
    return _answer(conversation, html, 422, CLOSED)


@bp.post("/workbench/apps/<uuid:app_id>/records")
@workbench_required
def submit(app_id: uuid.UUID):
    """Submit the form as a record of the live version; a retried form instance replays."""
    member, conversation, version = _used_in()
    try:
        entry = workbench.open_entry(member.tenant_id, app_id, version)
        key = parse_uuid(request.form.get("idempotency_key", ""), "invalid_idempotency_key")
        _, replayed = workbench.submit(member, entry, conversation,
                                       form_to_input(entry.version.definition, request.form), key)
    except ApiError as err:
        if err.code in ("workbench_entry_closed", "extension_not_active"):
            return _closed(conversation)
        db.session.rollback()
        entry = workbench.open_entry(member.tenant_id, app_id, version)
        message = SUBMIT_ERRORS.get(err.code)
        html = _tool_html(entry, member, conversation, values=request.form, error=err, error_message=message,
                          key=request.form.get("idempotency_key"))
        return _answer(conversation, html, 422, message or "The form has a problem: see the fields.")
    db.session.commit()
    notice = "This submission was already saved." if replayed else "Record saved."
    return _answer(conversation, _tool_html(entry, member, conversation, notice=notice), message=notice)


@bp.post("/workbench/apps/<uuid:app_id>/grants")
@workbench_required
def grant(app_id: uuid.UUID):
    """Share exactly the ticked items of the selected customer's profile with this form."""
    member, conversation, version = _used_in()
    try:
        entry = workbench.open_entry(member.tenant_id, app_id, version)
        workbench.set_grants(member, entry, set(request.form.getlist("items")))
    except ApiError as err:
        if err.code == "workbench_entry_closed":
            return _closed(conversation)
        raise
    db.session.commit()
    notice = "Data sharing saved for 90 days." if request.form.getlist("items") else "Nothing is shared."
    return _answer(conversation, _tool_html(entry, member, conversation, notice=notice), message=notice)


@bp.post("/workbench/apps/<uuid:app_id>/grants/revoke")
@workbench_required
def revoke(app_id: uuid.UUID):
    """End every data grant of this agent for the application (records stay)."""
    member, conversation, version = _used_in()
    workbench.revoke_all(member, app_id)
    db.session.commit()
    notice = "Data authorization revoked: no customer data shows beside this form."
    try:
        entry = workbench.open_entry(member.tenant_id, app_id, version)
    except ApiError:
        return _closed(conversation)
    return _answer(conversation, _tool_html(entry, member, conversation, notice=notice), message=notice)


def _intent_answer(app_id: uuid.UUID, conversation: Conversation, version: int, status: int = 200, **context):
    """The intent tool again: with a result or an error, and the button that asks for confirmation."""
    html = render_template("studio/_workbench_intent.html", app_id=app_id, conversation=conversation,
                           version=version, **context)
    return _answer(conversation, html, status, context.get("error_message") or context.get("notice"))


@bp.post("/workbench/apps/<uuid:app_id>/intent")
@workbench_required
def analyze(app_id: uuid.UUID):
    """Analyze the conversation's intent once the agent confirmed; nothing is sent or assigned."""
    member, conversation, version = _used_in()
    if request.form.get("confirmed") != "yes":
        return _intent_answer(app_id, conversation, version, 422, error_message="Confirm the analysis first.")
    try:
        result = workbench.analyze_intent(member, app_id, version, conversation)
    except ApiError as err:
        if err.code == "workbench_entry_closed":
            return _closed(conversation)
        db.session.rollback()
        message = INTENT_ERRORS.get(err.code, f"The analysis failed ({err.code}).")
        return _intent_answer(app_id, conversation, version, 422, error_message=message)
    db.session.commit()
    return _intent_answer(app_id, conversation, version, result=result,
                          notice=f"Intent: {result.label}. It needs human review.")
