"""The waiting queue (issue 35), the part the atomic adapter uses inside the transaction of its
write: whether a command's target may receive it now, the queue a refused conversation joins and
leaves, and the availability lines of a conversation's thread. Draining the queue is `desk.drain`'s.

Whether the target may receive the command is read with the member's row lock (`FOR UPDATE` on
PostgreSQL; SQLite writes one at a time anyway), in the same transaction as the compare-and-swap:
a presence change, a heartbeat or another assignment to that member waits for it or is waited for,
so the one that commits first wins and the open count read is never stale for an assignment.
"""
import uuid
from datetime import datetime, timedelta

from sqlalchemy import Row, and_, bindparam, delete, func, insert, select, update

from core.clock import to_beijing
from core.db import db, insert_unless_present
from desk.availability_models import (POLICY_DEFAULTS, AvailabilityEvent, AvailabilityPolicy, CalendarException,
                                      WaitingConversation)
from desk.duty import Availability, CalendarDay, assess
from desk.models import Conversation, Member

QUEUE_KEY_PREFIX = "queue:"  # the command keys of the queue's own assignments
UNAVAILABLE = "rule_member_unavailable"  # a refused command's reason; its reason_code says why

_TENANT, _MEMBER = bindparam("p_tenant"), bindparam("p_member")


def _calendar_column(day: str, column):
    """One column of the tenant's calendar entry on the date `p_<day>` (NULL: an ordinary day)."""
    return select(column).where(CalendarException.tenant_id == _TENANT,
                                CalendarException.day == bindparam(f"p_{day}")).scalar_subquery()


def _scalar(column, *criteria):
    """A scalar subquery of one column."""
    return select(column).where(*criteria).scalar_subquery()


# Everything that decides whether one member may receive an automated assignment now: presence,
# heartbeat, capacity, shifts and leave, the policy's default capacity, the open count and the
# calendar of today and yesterday (a night shift belongs to the day it starts).
_FACTS = (
    Member.role, Member.presence, Member.last_seen_at, Member.capacity, Member.shifts, Member.leave,
    _scalar(AvailabilityPolicy.default_capacity, AvailabilityPolicy.tenant_id == _TENANT).label("default_capacity"),
    select(func.count()).select_from(Conversation).where(
        Conversation.tenant_id == _TENANT, Conversation.status == "open",
        Conversation.assignee_member_id == _MEMBER).scalar_subquery().label("open_count"),
    _calendar_column("today", CalendarException.kind).label("today_kind"),
    _calendar_column("today", CalendarException.as_weekday).label("today_as"),
    _calendar_column("yesterday", CalendarException.kind).label("yesterday_kind"),
    _calendar_column("yesterday", CalendarException.as_weekday).label("yesterday_as"),
)
_THE_MEMBER = (Member.id == _MEMBER, Member.tenant_id == _TENANT, Member.active.is_(True))
# The facts under the member's row lock, and whether the conversation waits in the queue.
_TARGET = select(*_FACTS, select(WaitingConversation.conversation_id).where(
    WaitingConversation.conversation_id == bindparam("p_conversation")).exists().label("waiting")).where(
    *_THE_MEMBER).with_for_update(of=Member)
# The queue's claim of a member for one conversation: the facts, and the conversation as it stands,
# returned by the UPDATE that takes the row lock and records the member's `last_routed_at` (the
# caller rolls back when it does not assign).
_THE_CONVERSATION = (Conversation.id == bindparam("p_conversation"), Conversation.tenant_id == _TENANT)
_CLAIM = update(Member).where(*_THE_MEMBER).values(last_routed_at=bindparam("p_now")).returning(
    *_FACTS, *(_scalar(column, *_THE_CONVERSATION).label(column.key) for column in (
        Conversation.status, Conversation.assignee_member_id, Conversation.bot_active, Conversation.updated_at)))

_POLICY_ON = select(AvailabilityPolicy.enabled).where(AvailabilityPolicy.tenant_id == _TENANT)


def policy_on(tenant_id: uuid.UUID, execute=None) -> bool:
    """Whether the tenant's availability policy is enabled (no row: off)."""
    return bool((execute or db.session.execute)(_POLICY_ON, {"p_tenant": tenant_id}).scalar())


def enabled_policy(tenant_id):
    """EXISTS an enabled availability policy of the tenant (a column or a bound parameter): for a
    caller's own statement, so knowing it costs no round trip."""
    return select(AvailabilityPolicy.tenant_id).where(AvailabilityPolicy.tenant_id == tenant_id,
                                                      AvailabilityPolicy.enabled.is_(True)).exists()


def target_state(tenant_id: uuid.UUID, member_id: uuid.UUID, conversation_id: uuid.UUID, now: datetime,
                 execute=None) -> tuple[Availability | None, bool]:
    """The member as seen at `now` under the row lock (`_TARGET`), `reason_code` None when they may
    receive an automated assignment (None for a member who is not an active member of the tenant),
    and whether the conversation waits in the queue."""
    row = (execute or db.session.execute)(_TARGET, {**_parameters(tenant_id, member_id, now),
                                                    "p_conversation": conversation_id}).first()
    return _seen(row, now), row is not None and row.waiting


def claim(tenant_id: uuid.UUID, member_id: uuid.UUID, conversation_id: uuid.UUID, now: datetime,
          execute=None) -> tuple[Availability | None, Row | None]:
    """For the queue's own assignment, in one statement (`_CLAIM`): the member as `target_state`
    sees them, their `last_routed_at` set to `now` (the caller rolls back unless it assigns), and
    the conversation's status, assignee, bot flag and change stamp (None for a conversation not in
    the tenant)."""
    row = (execute or db.session.execute)(_CLAIM, {**_parameters(tenant_id, member_id, now),
                                                   "p_conversation": conversation_id, "p_now": now}).first()
    return _seen(row, now), None if row is None or row.status is None else row


def _parameters(tenant_id: uuid.UUID, member_id: uuid.UUID, now: datetime) -> dict:
    today = to_beijing(now).date()
    return {"p_tenant": tenant_id, "p_member": member_id, "p_today": today, "p_yesterday": today - timedelta(days=1)}


def _seen(row: Row | None, now: datetime) -> Availability | None:
    """The member of a `_FACTS` row as seen at `now`."""
    if row is None:
        return None
    today = to_beijing(now).date()
    calendar = {day: CalendarDay(kind, as_weekday) for day, kind, as_weekday in (
        (today, row.today_kind, row.today_as), (today - timedelta(days=1), row.yesterday_kind, row.yesterday_as))
        if kind is not None}
    return assess(row, calendar, row.open_count, row.default_capacity or POLICY_DEFAULTS["default_capacity"], now)


def join(tenant_id: uuid.UUID, conversation_id: uuid.UUID, preferred: uuid.UUID | None, reason_code: str,
         expected_assignee: uuid.UUID | None, now: datetime, about: uuid.UUID | None = None,
         message_id: uuid.UUID | None = None, told: bool = True) -> bool:
    """The conversation joins the tenant's waiting queue to go to `preferred` (None: anyone
    available) while it stays assigned to `expected_assignee`, unless it waits already (it keeps
    its place and its first reason); its thread says why (`waiting`, about `about`, by default the
    preferred member; `message_id`: the customer message left unanswered; `told` False: the caller
    writes its own line). Whether it joined now. The caller commits."""
    joined = insert_unless_present(WaitingConversation, ("conversation_id",), {
        "conversation_id": conversation_id, "tenant_id": tenant_id, "preferred_member_id": preferred,
        "reason_code": reason_code, "waiting_since": now, "expected_assignee_id": expected_assignee}) is not None
    if joined and told:
        record(tenant_id, conversation_id, "waiting", about or preferred, reason_code, {}, now, message_id=message_id)
    return joined


_THE_WAIT = (WaitingConversation.conversation_id == bindparam("p_conversation"),
             WaitingConversation.tenant_id == _TENANT)
_LEAVE = delete(WaitingConversation).where(*_THE_WAIT).execution_options(synchronize_session=False)
_LEAVE_WAIT = delete(WaitingConversation).where(*_THE_WAIT, WaitingConversation.waiting_since == bindparam("p_since")) \
    .execution_options(synchronize_session=False)


def leave(tenant_id: uuid.UUID, conversation_id: uuid.UUID, since: datetime | None = None, execute=None) -> bool:
    """The conversation leaves the waiting queue (only its wait that began at `since`, when given);
    whether it was waiting. The caller commits."""
    parameters = {"p_tenant": tenant_id, "p_conversation": conversation_id}
    if since is None:
        return (execute or db.session.execute)(_LEAVE, parameters).rowcount == 1
    return (execute or db.session.execute)(_LEAVE_WAIT, {**parameters, "p_since": since}).rowcount == 1


_RECORD = insert(AvailabilityEvent)


def record(tenant_id: uuid.UUID, conversation_id: uuid.UUID, kind: str, member_id: uuid.UUID | None,
           reason_code: str | None, detail: dict, now: datetime, execute=None,
           message_id: uuid.UUID | None = None) -> None:
    """One availability line in the conversation's thread (see AvailabilityEvent). The caller commits."""
    (execute or db.session.execute)(_RECORD, {
        "id": uuid.uuid4(), "tenant_id": tenant_id, "conversation_id": conversation_id, "kind": kind,
        "member_id": member_id, "reason_code": reason_code, "message_id": message_id, "detail": detail,
        "created_at": now})


def events_of(tenant_id: uuid.UUID, conversation_id: uuid.UUID) -> list[AvailabilityEvent]:
    """The availability lines of one conversation, in order."""
    return list(db.session.scalars(select(AvailabilityEvent).where(and_(
        AvailabilityEvent.conversation_id == conversation_id, AvailabilityEvent.tenant_id == tenant_id))
        .order_by(AvailabilityEvent.created_at)))
