"""Replies and private notes written in the workbench's composer: stored once per client message
id (a retried POST stores one message), moving the conversation's activity and change stamp."""
import uuid
from datetime import datetime

from sqlalchemy import select, update

from core.api import ApiError
from core.clock import utcnow
from core.db import db
from core.once import CreateOnce
from core.text import JS_WHITESPACE, storable
from desk import service_timers
from desk.channels import TEXT_LIMIT
from desk.conversations import get_conversation
from desk.drafts import remove_draft
from desk.inbox import mark_read
from desk.models import Conversation, Member, Message
from desk.outbound import add_delivery

COMPOSED = CreateOnce(Message, ("conversation_id", "client_message_id"))


def _text(text: str) -> str:
    """The message without surrounding blanks, 1 to 4,000 characters, storable; else 400 invalid_message."""
    text = (text or "").strip(JS_WHITESPACE)
    if not text or len(text) > TEXT_LIMIT or not storable(text):
        raise ApiError("invalid_message", 400)
    return text


def post_message(tenant_id: uuid.UUID, author: Member, conversation_id: uuid.UUID, text: str, private: bool,
                 client_message_id: uuid.UUID) -> tuple[Message, uuid.UUID | None]:
    """Store a reply (outbound, public) or a private note once; (message, id of the reply's new
    delivery to queue after the commit, or None: a note, a replay, or a channel without an
    endpoint). The author's draft of the conversation is gone with it. The same client message id with
    another text or kind is 409 client_message_id_reused; a merged conversation takes nothing new, 409
    conversation_merged. Flushes only."""
    conversation = get_conversation(tenant_id, conversation_id)
    text, kind, now = _text(text), "private_note" if private else "public", utcnow()
    message, replayed = COMPOSED.insert({
        "id": uuid.uuid4(), "tenant_id": tenant_id, "conversation_id": conversation.id,
        "channel_id": conversation.channel_id, "direction": "outbound", "kind": kind, "author_member_id": author.id,
        "text": text, "attachments": [], "client_message_id": client_message_id, "created_at": now})
    if replayed:
        if (message.text, message.kind, message.author_member_id) != (text, kind, author.id):
            raise ApiError("client_message_id_reused", 409)
        return message, None
    if db.session.execute(update(Conversation).where(
            Conversation.id == conversation.id, Conversation.tenant_id == tenant_id,
            Conversation.merged_into_id.is_(None))
            .values(last_activity_at=now).execution_options(synchronize_session=False)).rowcount != 1:
        raise ApiError("conversation_merged", 409)  # its thread moved (also when a merge commits meanwhile)
    mark_read(author.id, conversation)
    remove_draft(author.id, conversation.id)
    if kind == "public":
        service_timers.on_reply(tenant_id, conversation.id, author.id, now)
    return message, add_delivery(conversation, db.session.get(Message, message.id))


def reply_by_another(tenant_id: uuid.UUID, conversation_id: uuid.UUID, member_id: uuid.UUID,
                     after: datetime) -> tuple[str, datetime] | None:
    """The newest public reply another member sent to the conversation after `after`: their name and
    when (None: none). What the composer asks about before a send (issue 37)."""
    found = db.session.execute(
        select(Member.display_name, Message.created_at).join(Member, Member.id == Message.author_member_id)
        .where(Message.tenant_id == tenant_id, Message.conversation_id == conversation_id,
               Message.direction == "outbound", Message.kind == "public", Message.author_member_id != member_id,
               Message.created_at > after)
        .order_by(Message.created_at.desc()).limit(1)).first()
    return None if found is None else (found.display_name, found.created_at)
