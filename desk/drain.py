"""The waiting queue's work (issue 35), done by the tick for every tenant whose availability policy is
on: conversations released from offline members, reassigned after their assignee's silence, and the
queue drained.

- Drain: every waiting conversation, first come first served, goes to its preferred member once
  they are available, or after the policy's `fallback_after_minutes` (None: never) to the least
  loaded available agent or supervisor (open count ÷ capacity), ties to the one the queue assigned
  longest ago (never first); a conversation waiting for no one in particular (released, or after a
  silence) goes to the least loaded at once, never back to the silent member.
- No reply (`no_reply_minutes`): an open conversation whose newest public customer message is that
  old, without a public reply from its assignee since, assigned at least that long ago, goes to the
  least loaded available member other than the assignee, or waits (`no_reply`) when nobody is;
  once per customer message.
- Offline (`offline_policy`): `release_after` takes an offline member's open conversations back to
  the queue once they have been offline `release_after_minutes`; `release_on_customer_reply` takes
  one back when its customer writes while its assignee is offline.

Each assignment is its own transaction: the member's availability under their row lock, the
adapter's compare-and-swap, an `applied` receipt and the thread's line, so racing drains give one
assignment and a freed seat (a resolve, an unassign, a member coming online, a shift starting, a
leave or holiday ending, a capacity raise) is used at the latest at the next tick.
"""
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, exists, func, or_, select, update

from core.clock import utcnow
from core.db import db
from desk import waiting
from desk.availability import calendar_of, open_counts, policy_of
from desk.availability_models import AvailabilityEvent, AvailabilityPolicy, WaitingConversation
from desk.conversations import RECEIPTS, SNAPSHOT_COLUMNS, assign_if_unchanged, snapshot_of
from desk.duty import Availability, assess, calendar_days, offline_since
from desk.models import Conversation, Member, Message

log = logging.getLogger(__name__)

DRAIN_BATCH = 1000  # waiting conversations looked at per tenant and tick, oldest first
REROUTE_BATCH = 500  # conversations released or reassigned per tenant and tick
FALLBACK_ROLES = ("agent", "supervisor")  # an administrator is assigned only when a rule names them


@dataclass
class Seat:
    """A member as the queue sees them at one instant: may they receive a conversation, their load,
    when the queue last assigned them one and since when they count as offline (None: they do not)."""

    member_id: uuid.UUID
    role: str
    available: bool
    open_count: int
    capacity: int
    last_routed_at: datetime | None
    offline_since: datetime | None

    def load(self) -> float:
        return self.open_count / self.capacity


def seats(tenant_id: uuid.UUID, now: datetime, default_capacity: int) -> dict[uuid.UUID, Seat]:
    """Every active member of the tenant as seen at `now`, by id (three reads)."""
    members = db.session.execute(select(
        Member.id, Member.role, Member.presence, Member.presence_since, Member.last_seen_at, Member.capacity,
        Member.shifts, Member.leave, Member.last_routed_at).where(
        Member.tenant_id == tenant_id, Member.active.is_(True))).all()  # rows: no objects for commits to expire
    days = calendar_days(calendar_of(tenant_id))
    loads = open_counts(tenant_id, [member.id for member in members])
    found = {}
    for member in members:
        seen = assess(member, days, loads.get(member.id, 0), default_capacity, now)
        found[member.id] = Seat(member.id, member.role, seen.reason_code is None, seen.open_count, seen.capacity,
                                member.last_routed_at,
                                offline_since(member.presence, member.presence_since, member.last_seen_at, now))
    return found


def least_loaded(board: dict[uuid.UUID, Seat], exclude: uuid.UUID | None = None) -> Seat | None:
    """The available agent or supervisor (not `exclude`) with the smallest open count ÷ capacity;
    ties to the one the queue assigned longest ago (never first), then by id."""
    candidates = [seat for seat in board.values()
                  if seat.available and seat.role in FALLBACK_ROLES and seat.member_id != exclude]
    return min(candidates, default=None, key=lambda seat: (
        seat.load(), seat.last_routed_at is not None, seat.last_routed_at or datetime.min, str(seat.member_id)))


def choose(entry, board: dict[uuid.UUID, Seat], fallback_after_minutes: int | None,
           now: datetime) -> tuple[Seat, str] | None:
    """Who the waiting conversation (a row of WaitingConversation) goes to now and why (`preferred` or `least_loaded`), or None
    while it must wait: its preferred member once available, after `fallback_after_minutes` of
    waiting (None: never) the least loaded available agent or supervisor; without a preferred
    member the least loaded at once, never the silent assignee of a `no_reply` wait."""
    if entry.preferred_member_id is None:
        seat = least_loaded(board, exclude=entry.expected_assignee_id if entry.reason_code == "no_reply" else None)
        return None if seat is None else (seat, "least_loaded")
    preferred = board.get(entry.preferred_member_id)
    if preferred is not None and preferred.available:
        return preferred, "preferred"
    if fallback_after_minutes is None or now - entry.waiting_since < timedelta(minutes=fallback_after_minutes):
        return None
    seat = least_loaded(board)
    return None if seat is None else (seat, "least_loaded")


def _took(seat: Seat, outcome: str, now: datetime) -> None:
    """What an assignment attempt tells of the member: one more open, or not available after all."""
    if outcome == "applied":
        seat.open_count, seat.last_routed_at = seat.open_count + 1, now
        seat.available = seat.open_count < seat.capacity
    elif outcome == "unavailable":
        seat.available = False


def drain(tenant_id: uuid.UUID, policy: dict, board: dict[uuid.UUID, Seat], now: datetime) -> int:
    """Assign what can be assigned of the tenant's waiting queue now, oldest first; how many."""
    queue = db.session.execute(select(*WaitingConversation.__table__.c).where(  # rows, as `seats`
        WaitingConversation.tenant_id == tenant_id).order_by(
        WaitingConversation.waiting_since, WaitingConversation.conversation_id).limit(DRAIN_BATCH)).all()
    db.session.rollback()  # only read
    assigned = 0
    for entry in queue:
        choice = choose(entry, board, policy["fallback_after_minutes"], now)
        if choice is None:
            continue
        seat, basis = choice
        outcome = assign_from_queue(tenant_id, entry.conversation_id, entry.waiting_since, entry.expected_assignee_id,
                                    seat.member_id, basis, now)
        _took(seat, outcome, now)
        assigned += outcome == "applied"
    return assigned


def _take(tenant_id: uuid.UUID, conversation_id: uuid.UUID, expected_assignee: uuid.UUID | None,
          member_id: uuid.UUID, now: datetime, execute) -> tuple[str, Availability | None, dict | None]:
    """Inside the caller's transaction: the member's availability under their row lock and the
    conversation as it stands (`waiting.claim`): not available (`unavailable`), no longer open or no
    longer assigned to `expected_assignee` (`left`), then the compare-and-swap (`raced` when
    someone came first). (`applied`, the member as seen, the snapshot written over) when it wrote."""
    seen, current = waiting.claim(tenant_id, member_id, conversation_id, now, execute)
    if seen is None or seen.reason_code is not None:
        return "unavailable", None, None
    if current is None or current.status != "open" or current.assignee_member_id != expected_assignee:
        return "left", None, None
    expected = snapshot_of(tenant_id=tenant_id, conversation_id=conversation_id,
                           **{name: current._mapping[name] for name in SNAPSHOT_COLUMNS})
    if not assign_if_unchanged(tenant_id, conversation_id, member_id, expected, execute):
        return "raced", None, None
    return "applied", seen, expected


def _routed(tenant_id: uuid.UUID, conversation_id: uuid.UUID, member_id: uuid.UUID, key: str, expected: dict,
            now: datetime) -> None:
    """After the queue's own compare-and-swap: its `applied` receipt under `key` (once)."""
    RECEIPTS.insert({
        "id": uuid.uuid4(), "tenant_id": tenant_id, "command_key": key, "conversation_id": conversation_id,
        "target_member_id": member_id, "snapshot": expected, "status": "applied", "reason": None,
        "created_at": now, "updated_at": now})


def assign_from_queue(tenant_id: uuid.UUID, conversation_id: uuid.UUID, since: datetime,
                      expected_assignee: uuid.UUID | None, member_id: uuid.UUID, basis: str, now: datetime) -> str:
    """Assign one waiting conversation (the wait that began at `since`) to `member_id` in one
    transaction, committed (`_take`, the wait's end, `_routed`, the thread's `drained` line); a
    conversation changed since it joined leaves the queue unassigned. Its outcome."""
    session = db.session
    execute = session.connection().execute
    outcome, seen, expected = _take(tenant_id, conversation_id, expected_assignee, member_id, now, execute)
    if outcome == "left":
        left = waiting.leave(tenant_id, conversation_id, since, execute)
        session.commit()
        return "left" if left else "raced"
    if outcome != "applied" or not waiting.leave(tenant_id, conversation_id, since, execute):
        session.rollback()
        return "raced" if outcome == "applied" else outcome
    _routed(tenant_id, conversation_id, member_id, queue_key(conversation_id, f"{since.timestamp():.6f}"), expected,
            now)
    waiting.record(tenant_id, conversation_id, "drained", member_id, None,
                   {"basis": basis, "open_count": seen.open_count, "capacity": seen.capacity}, now, execute)
    session.commit()
    return "applied"


def queue_key(conversation_id: uuid.UUID, occasion: str) -> str:
    """The command key of the queue's assignment of a conversation on one occasion (a wait, by when
    it began, or a silence, by the customer message left unanswered)."""
    return f"{waiting.QUEUE_KEY_PREFIX}{conversation_id}:{occasion}"


# --- no reply -------------------------------------------------------------------------------------

_NEWEST_CUSTOMER_MESSAGE = select(Message.id).where(
    Message.conversation_id == Conversation.id, Message.tenant_id == Conversation.tenant_id,
    Message.direction == "inbound", Message.kind == "public").order_by(
    Message.created_at.desc(), Message.id.desc()).limit(1).correlate(Conversation).scalar_subquery()


def silent(tenant_id: uuid.UUID, minutes: int, now: datetime) -> list:
    """(conversation_id, assignee, message_id) of the tenant's open assigned conversations whose
    newest public customer message is at least `minutes` old, without a public reply from the
    assignee since, assigned at least that long ago and not yet rerouted for that message."""
    cutoff = now - timedelta(minutes=minutes)
    reply = Message.__table__.alias("reply")
    return db.session.execute(select(Conversation.id, Conversation.assignee_member_id, Message.id).join(
        Message, Message.id == _NEWEST_CUSTOMER_MESSAGE).where(
        Conversation.tenant_id == tenant_id, Conversation.status == "open",
        Conversation.assignee_member_id.is_not(None),
        func.coalesce(Conversation.assigned_at, Conversation.created_at) <= cutoff, Message.created_at <= cutoff,
        ~exists().where(reply.c.conversation_id == Conversation.id, reply.c.tenant_id == tenant_id,
                        reply.c.direction == "outbound", reply.c.kind == "public",
                        reply.c.author_member_id == Conversation.assignee_member_id,
                        reply.c.created_at >= Message.created_at),
        ~exists().where(AvailabilityEvent.conversation_id == Conversation.id,
                        AvailabilityEvent.message_id == Message.id))
        .order_by(Message.created_at).limit(REROUTE_BATCH)).all()


def reassign_silent(tenant_id: uuid.UUID, policy: dict, board: dict[uuid.UUID, Seat], now: datetime) -> int:
    """Reassign (or queue, `no_reply`) each conversation left without a reply for the policy's
    `no_reply_minutes`; how many were reassigned."""
    minutes = policy["no_reply_minutes"]
    if minutes is None:
        return 0
    found = silent(tenant_id, minutes, now)
    db.session.rollback()  # only read
    reassigned = 0
    for conversation_id, assignee, message_id in found:
        seat = least_loaded(board, exclude=assignee)
        if seat is None:
            waiting.join(tenant_id, conversation_id, None, "no_reply", assignee, now, about=assignee,
                         message_id=message_id)
            db.session.commit()
            continue
        outcome = _reassign(tenant_id, conversation_id, assignee, message_id, minutes, seat.member_id, now)
        _took(seat, outcome, now)
        reassigned += outcome == "applied"
    return reassigned


def _reassign(tenant_id: uuid.UUID, conversation_id: uuid.UUID, silent_member: uuid.UUID, message_id: uuid.UUID,
              minutes: int, member_id: uuid.UUID, now: datetime) -> str:
    """One reassignment after a silence, in one transaction, committed: `_take`, the conversation
    out of the queue, `_routed`, the thread's `reassigned` line naming the customer message."""
    session = db.session
    execute = session.connection().execute
    outcome, seen, expected = _take(tenant_id, conversation_id, silent_member, member_id, now, execute)
    if outcome != "applied":
        session.rollback()
        return outcome
    waiting.leave(tenant_id, conversation_id, execute=execute)
    _routed(tenant_id, conversation_id, member_id, queue_key(conversation_id, str(message_id)), expected, now)
    waiting.record(tenant_id, conversation_id, "reassigned", silent_member, "no_reply",
                   {"to": str(member_id), "minutes": minutes, "open_count": seen.open_count,
                    "capacity": seen.capacity}, now, execute, message_id=message_id)
    session.commit()
    return "applied"


# --- offline members --------------------------------------------------------------------------------

def _customer_wrote_since(since: datetime):
    """EXISTS a public customer message of the conversation written at or after `since` and after
    it was assigned."""
    return exists().where(Message.conversation_id == Conversation.id, Message.tenant_id == Conversation.tenant_id,
                          Message.direction == "inbound", Message.kind == "public", Message.created_at >= since,
                          or_(Conversation.assigned_at.is_(None), Message.created_at >= Conversation.assigned_at))


def to_release(tenant_id: uuid.UUID, policy: dict, board: dict[uuid.UUID, Seat], now: datetime) -> list:
    """(conversation_id, member_id) of the open conversations the offline policy takes back from
    offline members now: all of a member's once offline `release_after_minutes`
    (`release_after`), or those whose customer wrote since the member went offline
    (`release_on_customer_reply`)."""
    rule = policy["offline_policy"]
    offline = [seat for seat in board.values() if seat.offline_since is not None and seat.open_count]
    if rule == "release_after":
        cutoff = now - timedelta(minutes=policy["release_after_minutes"])
        offline = [seat for seat in offline if seat.offline_since <= cutoff]
    elif rule != "release_on_customer_reply":
        return []
    if not offline:
        return []
    held = or_(*(and_(Conversation.assignee_member_id == seat.member_id,
                      _customer_wrote_since(seat.offline_since) if rule == "release_on_customer_reply" else True)
                 for seat in offline))
    return db.session.execute(select(Conversation.id, Conversation.assignee_member_id).where(
        Conversation.tenant_id == tenant_id, Conversation.status == "open", held)
        .order_by(Conversation.last_activity_at).limit(REROUTE_BATCH)).all()


def release(tenant_id: uuid.UUID, conversation_id: uuid.UUID, member_id: uuid.UUID, now: datetime) -> bool:
    """Take one open conversation back from an offline member, in one transaction, committed: the
    member still offline under their row lock, the conversation still theirs and open (then
    unassigned), waiting for anyone available, the thread's `released` line. Whether it did."""
    session = db.session
    execute = session.connection().execute
    seen, _ = waiting.target_state(tenant_id, member_id, conversation_id, now, execute)
    if seen is None or seen.presence != "offline" or not execute(update(Conversation).where(
            Conversation.id == conversation_id, Conversation.tenant_id == tenant_id, Conversation.status == "open",
            Conversation.assignee_member_id == member_id).values(assignee_member_id=None, assigned_at=now)
            .execution_options(synchronize_session=False)).rowcount:
        session.rollback()
        return False
    waiting.leave(tenant_id, conversation_id, execute=execute)
    waiting.join(tenant_id, conversation_id, None, "agent_offline", None, now, told=False)
    waiting.record(tenant_id, conversation_id, "released", member_id, "agent_offline", {}, now, execute)
    session.commit()
    return True


def release_offline(tenant_id: uuid.UUID, policy: dict, board: dict[uuid.UUID, Seat], now: datetime) -> int:
    """Apply the offline policy (`to_release`); how many conversations went back to the queue."""
    found = to_release(tenant_id, policy, board, now)
    db.session.rollback()  # only read
    released = 0
    for conversation_id, member_id in found:
        if release(tenant_id, conversation_id, member_id, now):
            board[member_id].open_count -= 1
            released += 1
    return released


# --- the tick -----------------------------------------------------------------------------------

def work(tenant_id: uuid.UUID) -> int:
    """One tenant's queue work now, if its policy is on: release, reassign after silence, drain;
    how many conversations were assigned."""
    now = utcnow()
    policy = policy_of(tenant_id)
    if not policy["enabled"]:
        db.session.rollback()
        return 0
    board = seats(tenant_id, now, policy["default_capacity"])
    release_offline(tenant_id, policy, board, now)
    return reassign_silent(tenant_id, policy, board, now) + drain(tenant_id, policy, board, now)


def sweep() -> int:
    """Tick handler: the queue work of every tenant whose availability policy is on; how many
    conversations were assigned. A tenant that fails is logged and the others go on."""
    tenants = list(db.session.scalars(select(AvailabilityPolicy.tenant_id).where(AvailabilityPolicy.enabled.is_(True))))
    db.session.rollback()  # only read
    assigned = 0
    for tenant_id in tenants:
        try:
            assigned += work(tenant_id)
        except Exception:
            db.session.rollback()
            log.exception("availability: the queue work of tenant %s failed", tenant_id)
    return assigned
