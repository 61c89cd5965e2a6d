"""Drafts that survive (issue 37): what a member types in a conversation's composer, saved by the
composer's script at most every 2 seconds, private to the member and restored wherever they open
the conversation again — after a reload, on another device, after a reassignment or a change of
status. Sending removes it in the send's transaction; the sweep removes drafts untouched for 30 days.

A save names the composer's client message id: once a message with that id is stored, the save is
too late (the text was sent while it travelled) and changes nothing, so a sent text never comes back
as a draft. Services flush only.
"""
import uuid
from datetime import datetime, timedelta

from sqlalchemy import delete, exists, select

from core.api import ApiError
from core.clock import utcnow
from core.db import db, upsert_insert
from core.text import storable
from desk.channels import TEXT_LIMIT
from desk.conversations import get_conversation
from desk.models import ComposerDraft, Message

KEPT = timedelta(days=30)


def draft_of(member_id: uuid.UUID, conversation_id: uuid.UUID) -> ComposerDraft | None:
    """The member's draft of the conversation, if any."""
    return db.session.get(ComposerDraft, (member_id, conversation_id))


def save_draft(tenant_id: uuid.UUID, member_id: uuid.UUID, conversation_id: uuid.UUID, text: str, private: bool,
               client_message_id: uuid.UUID, now: datetime) -> bool:
    """Keep the member's draft (empty text: remove it); 404 for a foreign conversation, 400
    invalid_message for text the composer would not send. False when the composer's message was
    already sent (nothing changed)."""
    conversation = get_conversation(tenant_id, conversation_id)
    if len(text) > TEXT_LIMIT or not storable(text):
        raise ApiError("invalid_message", 400)
    if db.session.scalar(select(exists().where(Message.conversation_id == conversation.id,
                                               Message.client_message_id == client_message_id))):
        return False
    if not text.strip():
        remove_draft(member_id, conversation.id)
        return True
    table = ComposerDraft.__table__
    values = {"text": text, "private": private, "updated_at": now}
    statement = upsert_insert(db.session.get_bind().dialect.name)(table).values(
        member_id=member_id, conversation_id=conversation.id, tenant_id=tenant_id, **values)
    db.session.execute(statement.on_conflict_do_update(index_elements=["member_id", "conversation_id"], set_=values))
    return True


def remove_draft(member_id: uuid.UUID, conversation_id: uuid.UUID) -> None:
    """The member's draft of the conversation is gone (sent, or emptied)."""
    db.session.execute(delete(ComposerDraft).where(ComposerDraft.member_id == member_id,
                                                   ComposerDraft.conversation_id == conversation_id))


def sweep() -> int:
    """Tick handler: remove drafts untouched for 30 days; how many."""
    removed = db.session.execute(delete(ComposerDraft).where(ComposerDraft.updated_at < utcnow() - KEPT)).rowcount
    db.session.commit()
    return removed
