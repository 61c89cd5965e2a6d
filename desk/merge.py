"""Merging one conversation into another of the same tenant (issue 37): the source's messages move
to the target's thread (each keeps its channel), the source is resolved and points at the target,
and a later message of the source's customer on the source's channel goes to the target
(`desk.channels`, which follows `merged_into_id`). Both threads record the merge with its actor; the
audit log has it; customers are never changed.

Under concurrency: the merge first locks both rows in id order (so two merges of the same pair, in
either direction, wait for each other instead of deadlocking) and reads them as they stand; it then
moves the source row by a compare-and-swap (not merged yet, the status the person saw) and touches
the target only while it is not merged, so merging A into B while B goes into A ends with one merge
and a refusal, never a loop. The source's update waits behind an inbound message's transaction on
that row and makes a later one wait behind the merge; the messages then move in a statement that
sees every message committed before it, and an inbound flow that touched the source after the
merge follows it to the target. So no message is lost, duplicated or left behind.
"""
import uuid

from sqlalchemy import exists, or_, select, update

from core import audit
from core.api import ApiError
from core.clock import utcnow
from core.db import db
from core.text import storable
from desk import service_timers, waiting
from desk.conversations import OPEN_RECEIPT_STATES, REASSIGNING_ROLES
from desk.models import AssignmentReceipt, Conversation, ConversationEvent, Customer, Member, Message

CANDIDATES = 10


def _may_merge(actor: Member, source: Conversation, target: Conversation) -> bool:
    """Supervisors and administrators merge any two; an agent two conversations both assigned to them."""
    return actor.role in REASSIGNING_ROLES or source.assignee_member_id == target.assignee_member_id == actor.id


def candidates(tenant_id: uuid.UUID, source: Conversation, query: str = "") -> list:
    """Conversations the source may be merged into: with no query, the customer's other
    conversations (newest activity first); with one, conversations whose customer's name holds it or
    whose id it is. Never the source or a merged conversation."""
    statement = (select(Conversation.id, Conversation.status, Conversation.last_activity_at,
                        Customer.name.label("customer_name"), (Conversation.customer_id == source.customer_id)
                        .label("same_customer"))
                 .join(Customer, Customer.id == Conversation.customer_id)
                 .where(Conversation.tenant_id == tenant_id, Conversation.id != source.id,
                        Conversation.merged_into_id.is_(None)))
    query = query.strip()[:200]
    if not storable(query):  # no name holds what the database cannot store
        return []
    if not query:
        statement = statement.where(Conversation.customer_id == source.customer_id)
    else:
        try:
            by_id = Conversation.id == uuid.UUID(query)
        except ValueError:
            by_id = None
        escaped = query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        named = Customer.name.ilike(f"%{escaped}%", escape="\\")
        statement = statement.where(named if by_id is None else or_(named, by_id))
    return list(db.session.execute(statement.order_by(
        (Conversation.customer_id == source.customer_id).desc(), Conversation.last_activity_at.desc(),
        Conversation.id).limit(CANDIDATES)))


def _locked(tenant_id: uuid.UUID, source_id: uuid.UUID, target_id: uuid.UUID) -> tuple[Conversation, Conversation]:
    """The two conversations as they stand, their rows locked in id order until the commit
    (PostgreSQL; SQLite has one writer at a time); 404 not_found for one not the tenant's."""
    rows = {row.id: row for row in db.session.scalars(
        select(Conversation).where(Conversation.tenant_id == tenant_id, Conversation.id.in_({source_id, target_id}))
        .order_by(Conversation.id).with_for_update().execution_options(populate_existing=True))}
    if source_id not in rows or target_id not in rows:
        raise ApiError("not_found", 404)
    return rows[source_id], rows[target_id]


def merge(tenant_id: uuid.UUID, actor: Member, source_id: uuid.UUID, target_id: uuid.UUID, expected_status: str,
          customers_confirmed: bool) -> Conversation:
    """Merge the source into the target as `actor`; the target. Flushes only.

    404 not_found for a conversation not the tenant's; 400 merge_into_itself; 403 merge_forbidden
    (an agent, unless both are theirs); 409 already_merged (either was merged); 409 command_in_flight
    while a rule's command on either may still be applied; 409 customers_differ until the person
    confirmed merging two customers' conversations; 409 conversation_changed when the source's
    status is no longer `expected_status`.
    """
    source, target = _locked(tenant_id, source_id, target_id)
    if source.id == target.id:
        raise ApiError("merge_into_itself", 400)
    if not _may_merge(actor, source, target):
        raise ApiError("merge_forbidden", 403)
    if source.merged_into_id is not None or target.merged_into_id is not None:
        raise ApiError("already_merged", 409)
    if db.session.scalar(select(exists().where(
            AssignmentReceipt.tenant_id == tenant_id, AssignmentReceipt.conversation_id.in_([source.id, target.id]),
            AssignmentReceipt.status.in_(OPEN_RECEIPT_STATES)))):
        raise ApiError("command_in_flight", 409)
    if source.customer_id != target.customer_id and not customers_confirmed:
        raise ApiError("customers_differ", 409)
    now = utcnow()
    moved = db.session.execute(update(Conversation).where(
        Conversation.id == source.id, Conversation.tenant_id == tenant_id, Conversation.status == expected_status,
        Conversation.merged_into_id.is_(None))
        .values(status="resolved", merged_into_id=target.id, snoozed_until=None)
        .execution_options(synchronize_session=False)).rowcount
    if moved != 1:
        raise ApiError("conversation_changed", 409)
    messages = db.session.execute(update(Message).where(
        Message.conversation_id == source.id, Message.tenant_id == tenant_id).values(conversation_id=target.id)
        .execution_options(synchronize_session=False)).rowcount
    if db.session.execute(update(Conversation).where(
            Conversation.id == target.id, Conversation.tenant_id == tenant_id, Conversation.merged_into_id.is_(None))
            .values(last_activity_at=now).execution_options(synchronize_session=False)).rowcount != 1:
        raise ApiError("already_merged", 409)  # merged meanwhile (the caller rolls the source back)
    waiting.leave(tenant_id, source.id)
    service_timers.on_merged(tenant_id, source.id, now)
    db.session.add_all([
        ConversationEvent(tenant_id=tenant_id, conversation_id=source.id, actor_member_id=actor.id,
                          kind="merged_into", after=str(target.id), created_at=now),
        ConversationEvent(tenant_id=tenant_id, conversation_id=target.id, actor_member_id=actor.id,
                          kind="merged_from", before=str(source.id), created_at=now)])
    audit.record(tenant_id, actor.user_id, "conversation.merged", f"conversation:{source.id}",
                 {"into": str(target.id), "messages": messages,
                  "customers": "same" if source.customer_id == target.customer_id else "different"})
    db.session.refresh(target)
    return target
