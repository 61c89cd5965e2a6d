"""The agents' workbench: conversation list and conversation view."""
import uuid

from flask import Blueprint, render_template, request

from core.web import htmx
from desk.conversations import (VIEWS, conversation_messages, get_conversation,
                                list_conversations)
from desk.sessions import current_member, workbench_required

bp = Blueprint("workbench", __name__)


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
    """One conversation with its messages; a partial for HTMX, the whole page otherwise."""
    member = current_member()
    found = get_conversation(member.tenant_id, conversation_id)
    messages = conversation_messages(found)
    if htmx:
        return render_template("desk/_conversation.html", conversation=found, messages=messages)
    conversations = list_conversations(member.tenant_id, member.id, "all")
    return render_template("desk/workbench.html", conversations=conversations, view="all",
                           views=VIEWS, conversation=found, messages=messages)
