"""Draining the waiting queue (issue 35): every waiting conversation, first come first served, goes
to its preferred member once they are available, or after the policy's `fallback_after_minutes` to
the least loaded available agent or supervisor (open count ÷ capacity), ties to the one the queue
assigned longest ago (never first). Each assignment is its own transaction through the adapter's
compare-and-swap, with an `applied` receipt; racing drains give one assignment.

`sweep` is the tick's: it drains every tenant whose policy is on and whose queue is not empty, so a
freed seat (a resolve, an unassign, a member coming online, a shift starting, a leave or holiday
ending, a capacity raise) is used at the latest at the next tick.
"""
import logging
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update

from core.clock import utcnow
from core.db import db
from desk import waiting
from desk.availability import calendar_of, open_counts, policy_of
from desk.availability_models import AvailabilityPolicy, WaitingConversation
from desk.conversations import RECEIPTS, assign_if_unchanged, snapshot_of
from desk.duty import assess, calendar_days
from desk.models import Conversation, Member

log = logging.getLogger(__name__)

DRAIN_BATCH = 1000  # waiting conversations looked at per tenant and drain, oldest first
FALLBACK_ROLES = ("agent", "supervisor")  # an administrator is assigned only when a rule names them


@dataclass
class Seat:
    """A member as the drain sees them: may they receive a conversation now, their load and when
    the queue last assigned them one."""

    member_id: uuid.UUID
    role: str
    available: bool
    open_count: int
    capacity: int
    last_routed_at: datetime | None

    def load(self) -> float:
        return self.open_count / self.capacity


def seats(tenant_id: uuid.UUID, now: datetime, default_capacity: int) -> dict[uuid.UUID, Seat]:
    """Every active member of the tenant as seen at `now`, by id (three reads)."""
    members = list(db.session.scalars(select(Member).where(Member.tenant_id == tenant_id, Member.active.is_(True))))
    days = calendar_days(calendar_of(tenant_id))
    loads = open_counts(tenant_id, [member.id for member in members])
    found = {}
    for member in members:
        seen = assess(member, days, loads.get(member.id, 0), default_capacity, now)
        found[member.id] = Seat(member.id, member.role, seen.reason_code is None, seen.open_count, seen.capacity,
                                member.last_routed_at)
    return found


def least_loaded(board: dict[uuid.UUID, Seat], exclude: uuid.UUID | None = None) -> Seat | None:
    """The available agent or supervisor (not `exclude`) with the smallest open count ÷ capacity;
    ties to the one the queue assigned longest ago (never first), then by id."""
    candidates = [seat for seat in board.values()
                  if seat.available and seat.role in FALLBACK_ROLES and seat.member_id != exclude]
    return min(candidates, default=None, key=lambda seat: (
        seat.load(), seat.last_routed_at is not None, seat.last_routed_at or datetime.min, str(seat.member_id)))


def choose(entry: WaitingConversation, board: dict[uuid.UUID, Seat], fallback_after_minutes: int | None,
           now: datetime) -> tuple[Seat, str] | None:
    """Who the waiting conversation goes to now and why (`preferred` or `least_loaded`), or None
    while it must wait: its preferred member once available; after `fallback_after_minutes` of
    waiting (None: never) the least loaded available agent or supervisor."""
    preferred = board.get(entry.preferred_member_id)
    if preferred is not None and preferred.available:
        return preferred, "preferred"
    if fallback_after_minutes is None or now - entry.waiting_since < timedelta(minutes=fallback_after_minutes):
        return None
    seat = least_loaded(board)
    return None if seat is None else (seat, "least_loaded")


def drain(tenant_id: uuid.UUID) -> int:
    """Assign what can be assigned of the tenant's waiting queue now, oldest first; how many."""
    now = utcnow()
    policy = policy_of(tenant_id)
    if not policy["enabled"]:
        db.session.rollback()
        return 0
    queue = list(db.session.scalars(select(WaitingConversation).where(WaitingConversation.tenant_id == tenant_id)
                                    .order_by(WaitingConversation.waiting_since, WaitingConversation.conversation_id)
                                    .limit(DRAIN_BATCH)))
    board = seats(tenant_id, now, policy["default_capacity"]) if queue else {}
    db.session.rollback()  # only read
    assigned = 0
    for entry in queue:
        choice = choose(entry, board, policy["fallback_after_minutes"], now)
        if choice is None:
            continue
        seat, basis = choice
        outcome = assign_from_queue(tenant_id, entry.conversation_id, entry.waiting_since, entry.expected_assignee_id,
                                    seat.member_id, basis, now)
        if outcome == "applied":
            assigned += 1
            seat.open_count, seat.last_routed_at = seat.open_count + 1, now
            seat.available = seat.open_count < seat.capacity
        elif outcome == "unavailable":
            seat.available = False
    return assigned


_CURRENT = select(Conversation.status, Conversation.assignee_member_id, Conversation.bot_active,
                  Conversation.updated_at)


def assign_from_queue(tenant_id: uuid.UUID, conversation_id: uuid.UUID, since: datetime,
                      expected_assignee: uuid.UUID | None, member_id: uuid.UUID, basis: str, now: datetime) -> str:
    """Assign one waiting conversation (the wait that began at `since`) to `member_id`, in one
    transaction, committed: the member's availability under their row lock (`unavailable`), the
    conversation as it stands (no longer open, or assigned otherwise since it joined: it leaves the
    queue, `left`), the compare-and-swap and its wait's end (else `raced`: another drain, a person
    or a command came first), an `applied` receipt under the wait's own key, the member's
    `last_routed_at` and the thread's line. Its outcome."""
    session = db.session
    execute = session.connection().execute
    seen = waiting.target_state(tenant_id, member_id, now, execute)
    if seen is None or seen.reason_code is not None:
        session.rollback()
        return "unavailable"
    current = execute(_CURRENT.where(Conversation.id == conversation_id, Conversation.tenant_id == tenant_id)).first()
    if current is None or current.status != "open" or current.assignee_member_id != expected_assignee:
        left = waiting.leave(tenant_id, conversation_id, since, execute)
        session.commit()
        return "left" if left else "raced"
    expected = snapshot_of(tenant_id=tenant_id, conversation_id=conversation_id, **current._mapping)
    if not assign_if_unchanged(tenant_id, conversation_id, member_id, expected, execute) \
            or not waiting.leave(tenant_id, conversation_id, since, execute):
        session.rollback()
        return "raced"
    RECEIPTS.insert({
        "id": uuid.uuid4(), "tenant_id": tenant_id, "command_key": queue_key(conversation_id, since),
        "conversation_id": conversation_id, "target_member_id": member_id, "snapshot": expected,
        "status": "applied", "reason": None, "created_at": now, "updated_at": now})
    execute(update(Member).where(Member.id == member_id).values(last_routed_at=now)
            .execution_options(synchronize_session=False))
    waiting.record(tenant_id, conversation_id, "drained", member_id, None,
                   {"basis": basis, "open_count": seen.open_count, "capacity": seen.capacity}, now, execute)
    session.commit()
    return "applied"


def queue_key(conversation_id: uuid.UUID, since: datetime) -> str:
    """The command key of the queue's assignment of one wait (a conversation and when it joined)."""
    return f"{waiting.QUEUE_KEY_PREFIX}{conversation_id}:{since.timestamp():.6f}"


def sweep() -> int:
    """Tick handler: drain every tenant whose availability policy is on and whose queue is not
    empty; how many conversations were assigned. A tenant that fails is logged and the others go on."""
    tenants = list(db.session.scalars(select(WaitingConversation.tenant_id).distinct().join(
        AvailabilityPolicy, AvailabilityPolicy.tenant_id == WaitingConversation.tenant_id)
        .where(AvailabilityPolicy.enabled.is_(True))))
    db.session.rollback()  # only read
    assigned = 0
    for tenant_id in tenants:
        try:
            assigned += drain(tenant_id)
        except Exception:
            db.session.rollback()
            log.exception("waiting queue of tenant %s: drain failed", tenant_id)
    return assigned
