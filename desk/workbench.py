"""The agents' workbench: conversation list, the thread, and the changes people make by hand."""
import uuid

from flask import Blueprint, flash, redirect, render_template, request, url_for
from sqlalchemy import select

from core.api import ApiError, parse_uuid
from core.db import db
from core.web import htmx
from desk.conversations import (REASSIGNING_ROLES, UNCHANGED, VIEWS, change_by_hand, get_conversation,
                                list_conversations)
from desk.models import CONVERSATION_STATUSES, Member
from desk.sessions import current_member, workbench_required
from desk.timeline import thread

bp = Blueprint("workbench", __name__)

STATUS_LABELS = {"open": "Open", "pending": "Pending", "resolved": "Resolved"}
TRIGGER_LABELS = {"manual": "a manual plan", "scheduled": "a scheduled round", "message_event": "a new message"}
CHANGE_ERRORS = {
    "conversation_changed": "Someone changed this conversation meanwhile; this is how it stands now. "
                            "Try again if you still want the change.",
    "reassign_forbidden": "Agents take unassigned conversations and let go of their own: ask a supervisor "
                          "to reassign this one.",
    "member_unavailable": "That member is inactive or not in this workspace: choose someone else.",
    "invalid_status": "Choose open, pending or resolved.",
    "invalid_form": "The form was incomplete: reload the page and try again.",
}
TYPEAHEAD_LIMIT = 10


def _conversation_context(conversation, message: str | None = None) -> dict:
    """What the conversation partial shows."""
    member = current_member()
    return {"conversation": conversation, "entries": thread(conversation), "change_message": message,
            "may_reassign": member.role in REASSIGNING_ROLES, "statuses": CONVERSATION_STATUSES,
            "status_labels": STATUS_LABELS, "trigger_labels": TRIGGER_LABELS}


@bp.get("/workbench")
@workbench_required
def index():
    """Conversation list, filtered to mine / unassigned / all."""
    member = current_member()
    view = request.args.get("view", "all")
    if view not in VIEWS:
        view = "all"
    conversations = list_conversations(member.tenant_id, member.id, view)
    template = "desk/_conversation_list.html" if htmx else "desk/workbench.html"
    return render_template(template, conversations=conversations, view=view, views=VIEWS)


@bp.get("/workbench/conversations/<uuid:conversation_id>")
@workbench_required
def conversation(conversation_id: uuid.UUID):
    """One conversation with its thread; a partial for HTMX, the whole page otherwise."""
    member = current_member()
    found = get_conversation(member.tenant_id, conversation_id)
    if htmx:
        return render_template("desk/_conversation.html", **_conversation_context(found))
    conversations = list_conversations(member.tenant_id, member.id, "all")
    return render_template("desk/workbench.html", conversations=conversations, view="all", views=VIEWS,
                           **_conversation_context(found))


def _seen() -> tuple[uuid.UUID | None, str]:
    """The assignee and status the person saw when they chose the change (hidden fields)."""
    assignee = request.form.get("seen_assignee", "")
    return (parse_uuid(assignee, "invalid_form") if assignee else None), request.form.get("seen_status", "")


def _change(conversation_id: uuid.UUID, **change):
    """Apply one change by hand and answer with the conversation as it now stands."""
    member = current_member()
    try:
        seen_assignee, seen_status = _seen()
        change_by_hand(member.tenant_id, member, conversation_id, seen_assignee, seen_status, **change)
    except ApiError as err:
        if err.code not in CHANGE_ERRORS:
            raise
        db.session.rollback()
        return _answer(conversation_id, CHANGE_ERRORS[err.code], 422)
    db.session.commit()
    return _answer(conversation_id)


def _answer(conversation_id: uuid.UUID, message: str | None = None, status: int = 200):
    """The conversation partial (the list refreshes itself on the event) or, without htmx, the page."""
    if not htmx:
        if message:
            flash(message, "error")
        return redirect(url_for("workbench.conversation", conversation_id=conversation_id))
    found = get_conversation(current_member().tenant_id, conversation_id)
    headers = {"HX-Trigger": "conversations-changed"} if status == 200 else {}
    return render_template("desk/_conversation.html", **_conversation_context(found, message)), status, headers


@bp.post("/workbench/conversations/<uuid:conversation_id>/assignee")
@workbench_required
def assign(conversation_id: uuid.UUID):
    """Assign to me, to another active member (supervisors, administrators), or to nobody."""
    choice = request.form.get("assignee", "")
    if choice == "me":
        target = current_member().id
    elif choice == "none":
        target = None
    else:
        try:
            target = parse_uuid(choice, "invalid_form")
        except ApiError:
            return _answer(conversation_id, CHANGE_ERRORS["invalid_form"], 422)
    return _change(conversation_id, assignee=target)


@bp.post("/workbench/conversations/<uuid:conversation_id>/status")
@workbench_required
def set_status(conversation_id: uuid.UUID):
    """Open, pending or resolved."""
    return _change(conversation_id, assignee=UNCHANGED, status=request.form.get("status", ""))


@bp.get("/workbench/conversations/<uuid:conversation_id>/assignees")
@workbench_required
def assignees(conversation_id: uuid.UUID):
    """Typeahead: the tenant's active members whose name holds `q`, for a supervisor to choose from."""
    member = current_member()
    if member.role not in REASSIGNING_ROLES:
        raise ApiError("reassign_forbidden", 403)
    found = get_conversation(member.tenant_id, conversation_id)
    typed = request.args.get("q", "").strip()[:80]
    query = select(Member).where(Member.tenant_id == member.tenant_id, Member.active.is_(True))
    if typed:
        query = query.where(Member.display_name.icontains(typed, autoescape=True))
    members = list(db.session.scalars(query.order_by(Member.display_name).limit(TYPEAHEAD_LIMIT)))
    return render_template("desk/_assignees.html", conversation=found, members=members, typed=typed)
