"""The workbench's conversation list and its "changes since" poll, one statement each, flat in
the tenant's size: the list reads its page of rows with their customer, assignee, last message,
the reader's unread mark and the nearest due service-level target together; the poll answers from
the (tenant, updated_at) index. The `breaching` view lists what is due within 15 minutes or
breached, oldest due first, from the running timers' (tenant, due_at) index."""
import uuid
from datetime import datetime, timedelta

from sqlalchemy import Select, and_, bindparam, func, or_, select

from core.clock import utcnow
from core.db import db, prepared, upsert_insert
from desk.models import Conversation, ConversationRead, Customer, Member, Message
from desk.service_level_models import ServiceLevelTimer as Timer

STATUSES = ("open", "pending", "resolved")
VIEWS = ("mine", "unassigned", "all", "breaching")
BREACHING_SOON = timedelta(minutes=15)
LIST_LIMIT = 50
PREVIEW_CHARACTERS = 120
CHANGES_LIMIT = 100  # the poll names at most this many changed conversations (the list refreshes anyway)

_CONVERSATION = Conversation.__table__
_TENANT = bindparam("p_tenant", type_=Conversation.tenant_id.type)
_MEMBER = bindparam("p_member", type_=Conversation.assignee_member_id.type)
_HORIZON = bindparam("p_horizon", type_=Timer.due_at.type)


def _list_statement(status: str, view: str) -> Select:
    """The list's one statement for a tab (parameters: tenant, member)."""
    preview = (select(func.substr(Message.text, 1, PREVIEW_CHARACTERS))
               .where(Message.conversation_id == Conversation.id, Message.kind == "public")
               .order_by(Message.created_at.desc()).limit(1).correlate(Conversation).scalar_subquery())
    read = and_(ConversationRead.conversation_id == Conversation.id, ConversationRead.member_id == _MEMBER)
    due = (select(func.min(Timer.due_at)).where(Timer.conversation_id == Conversation.id, Timer.stopped_at.is_(None))
           .correlate(Conversation).scalar_subquery())
    query = (select(Conversation.id, Conversation.status, Conversation.last_activity_at,
                    Conversation.assignee_member_id, Customer.name.label("customer_name"),
                    Member.display_name.label("assignee_name"), preview.label("preview"),
                    or_(ConversationRead.read_at.is_(None),
                        ConversationRead.read_at < Conversation.last_activity_at).label("unread"),
                    due.label("due_at"), Conversation.snoozed_until)
             .join(Customer, Customer.id == Conversation.customer_id)
             .outerjoin(Member, Member.id == Conversation.assignee_member_id)
             .outerjoin(ConversationRead, read)
             .where(Conversation.tenant_id == _TENANT, Conversation.status == status))
    if view == "mine":
        query = query.where(Conversation.assignee_member_id == _MEMBER)
    elif view == "unassigned":
        query = query.where(Conversation.assignee_member_id.is_(None))
    elif view == "breaching":
        soon = (select(Timer.conversation_id, func.min(Timer.due_at).label("due_at"))
                .where(Timer.tenant_id == _TENANT, Timer.stopped_at.is_(None), Timer.due_at <= _HORIZON)
                .group_by(Timer.conversation_id).subquery())
        query = query.join(soon, soon.c.conversation_id == Conversation.id)
        return query.order_by(soon.c.due_at, Conversation.id).limit(LIST_LIMIT)
    return query.order_by(Conversation.last_activity_at.desc(), Conversation.id.desc()).limit(LIST_LIMIT)


_LISTS = {(status, view): _list_statement(status, view) for status in STATUSES for view in VIEWS}
# The poll's statement on the table itself (Core, no ORM entity).
_CHANGES = (select(_CONVERSATION.c.id, _CONVERSATION.c.updated_at)
            .where(_CONVERSATION.c.tenant_id == _TENANT,
                   _CONVERSATION.c.updated_at > bindparam("p_since", type_=_CONVERSATION.c.updated_at.type))
            .order_by(_CONVERSATION.c.updated_at.desc()).limit(CHANGES_LIMIT))
# The tenant's newest change stamp: where a page's poll starts, and what the session check reads for
# the poll (as a column of its own statement, whose bind parameter `tenant_id` is the seat's).
_LATEST_CHANGE = (select(func.max(_CONVERSATION.c.updated_at))
                  .where(_CONVERSATION.c.tenant_id == bindparam("p_tenant")))
LATEST_CHANGE_PROBE = _LATEST_CHANGE.scalar_subquery().label("probe")


def list_conversations(tenant_id: uuid.UUID, member_id: uuid.UUID, status: str, view: str, now: datetime) -> list:
    """A page of the tenant's conversations in one status and view (mine, unassigned, all: most
    recent activity first; breaching: due within 15 minutes of `now` or breached, oldest due first),
    with customer name, assignee name, last public message, unread mark and nearest due time."""
    return list(db.session.execute(_LISTS[status, view], {"p_tenant": tenant_id, "p_member": member_id,
                                                          "p_horizon": now + BREACHING_SOON}))


@prepared
def _read_mark(dialect: str):
    """INSERT the member's read mark or move it to the new time: an upsert on (member, conversation)."""
    statement = upsert_insert(dialect)(ConversationRead.__table__)
    return statement.on_conflict_do_update(index_elements=("member_id", "conversation_id"),
                                           set_={"read_at": statement.excluded.read_at})


def mark_read(member_id: uuid.UUID, conversation: Conversation) -> None:
    """The member has now read the conversation (its activity so far). Flushes only."""
    db.session.execute(_read_mark(db.session.get_bind().dialect.name), {
        "member_id": member_id, "conversation_id": conversation.id, "tenant_id": conversation.tenant_id,
        "read_at": max(utcnow(), conversation.last_activity_at)})


def latest_change(tenant_id: uuid.UUID) -> datetime | None:
    """The newest change stamp of the tenant's conversations (where a page's poll starts)."""
    return db.session.scalar(_LATEST_CHANGE, {"p_tenant": tenant_id})


def changes_since(tenant_id: uuid.UUID, since: datetime) -> tuple[datetime, list[uuid.UUID]] | None:
    """The newest change stamp and the conversations changed after `since` (newest first, at most
    CHANGES_LIMIT), or None when nothing changed: one statement on the (tenant, updated_at) index.
    The poll asks only once the newest stamp (LATEST_CHANGE_PROBE) says something changed."""
    rows = db.session.connection().execute(_CHANGES, {"p_tenant": tenant_id, "p_since": since}).all()
    if not rows:
        return None
    return rows[0].updated_at, [row.id for row in rows]
