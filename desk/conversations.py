"""Reading conversations and messages for the workbench, always inside one tenant."""
import uuid

from sqlalchemy import select

from core.api import ApiError
from core.db import db
from desk.models import Conversation, Message

VIEWS = ("all", "mine", "unassigned")
LIST_LIMIT = 50


def list_conversations(tenant_id: uuid.UUID, member_id: uuid.UUID, view: str) -> list[Conversation]:
    """Open and pending conversations of the tenant, most recent activity first."""
    query = select(Conversation).where(
        Conversation.tenant_id == tenant_id, Conversation.status.in_(("open", "pending")))
    if view == "mine":
        query = query.where(Conversation.assignee_member_id == member_id)
    elif view == "unassigned":
        query = query.where(Conversation.assignee_member_id.is_(None))
    return list(db.session.scalars(
        query.order_by(Conversation.last_activity_at.desc()).limit(LIST_LIMIT)))


def get_conversation(tenant_id: uuid.UUID, conversation_id: uuid.UUID) -> Conversation:
    """One conversation of the tenant; a foreign id is indistinguishable from a missing one."""
    conversation = db.session.scalar(select(Conversation).where(
        Conversation.id == conversation_id, Conversation.tenant_id == tenant_id))
    if conversation is None:
        raise ApiError("not_found", 404)
    return conversation


def conversation_messages(conversation: Conversation) -> list[Message]:
    """The conversation's messages and notes in order."""
    return list(db.session.scalars(select(Message).where(
        Message.conversation_id == conversation.id, Message.tenant_id == conversation.tenant_id)
        .order_by(Message.created_at)))
