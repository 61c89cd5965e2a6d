"""The team's availability as supervisors see it (issue 35): each active member's presence, whether
they may receive an automated assignment and if not why, their load against their capacity and
whether they are on shift, with the tenant's waiting queue in two numbers; and what a supervisor is
warned of before assigning a conversation by hand to a member who is unavailable or at capacity.

Reads only, on the tenant's own rows; the instant is passed in. The words people read are
`desk.availability_words`'.
"""
import uuid
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from core.clock import beijing_day_range, to_beijing
from core.db import db
from desk.availability import calendar_of, open_counts, policy_of
from desk.availability_models import WaitingConversation
from desk.duty import AT_CAPACITY, AWAY, OFFLINE, assess, calendar_days, duty_reason
from desk.models import Member
from desk.service_timers import breached_since


@dataclass(frozen=True)
class MemberState:
    """One member as seen at an instant: presence as it counts, the first reason they may not
    receive an automated assignment (None: available), open conversations against the capacity that
    applies to them (their own, else the policy's default), and why they are off duty (None: on
    shift)."""

    member: Member
    presence: str
    reason_code: str | None
    open_count: int
    capacity: int
    duty_reason: str | None

    @property
    def on_shift(self) -> bool:
        """Whether no leave, holiday or hour outside their shifts keeps them off duty."""
        return self.duty_reason is None

    def warnings(self) -> list[str]:
        """Every reason, not only the first, that a supervisor is told of before assigning to the
        member by hand: the duty reason (agent_on_leave, holiday, outside_shift), agent_offline or
        agent_away, and agent_at_capacity once one more would put them over; empty when none."""
        found = [self.duty_reason] if self.duty_reason is not None else []
        if self.presence != "online":
            found.append(OFFLINE if self.presence == "offline" else AWAY)
        if self.open_count >= self.capacity:
            found.append(AT_CAPACITY)
        return found


@dataclass(frozen=True)
class TeamBoard:
    """The team board at `as_of`: whether the tenant's availability policy is on, its default
    capacity, every active member by name, and how many conversations wait and since when the
    oldest (None: nobody waits), and how many service-level targets were breached since Beijing
    midnight."""

    as_of: datetime
    policy_enabled: bool
    default_capacity: int
    members: list[MemberState]
    waiting: int
    oldest_waiting_since: datetime | None
    breached_today: int

    @property
    def oldest_wait_minutes(self) -> int | None:
        """Whole minutes the oldest waiting conversation has waited at `as_of`."""
        if self.oldest_waiting_since is None:
            return None
        return max(0, int((self.as_of - self.oldest_waiting_since).total_seconds() // 60))


def member_states(tenant_id: uuid.UUID, members: list[Member], now: datetime,
                  policy: dict | None = None) -> list[MemberState]:
    """The tenant's `members` as seen at `now` under its policy (read unless given), in the order
    given; the tenant's calendar and the members' open counts are read in one statement each."""
    default_capacity = (policy or policy_of(tenant_id))["default_capacity"]
    days = calendar_days(calendar_of(tenant_id))
    loads = open_counts(tenant_id, [member.id for member in members])
    states = []
    for member in members:
        seen = assess(member, days, loads.get(member.id, 0), default_capacity, now)
        states.append(MemberState(member, seen.presence, seen.reason_code, seen.open_count, seen.capacity,
                                  duty_reason(member.shifts, member.leave, days, now)))
    return states


def team_board(tenant_id: uuid.UUID, now: datetime) -> TeamBoard:
    """The board of the tenant at `now`: its active members (agents, supervisors and administrators)
    by display name, its waiting queue's size and oldest entry, and today's breaches."""
    members = list(db.session.scalars(select(Member).where(Member.tenant_id == tenant_id, Member.active.is_(True))
                                      .order_by(Member.display_name, Member.id)))
    policy = policy_of(tenant_id)
    waiting, oldest = db.session.execute(
        select(func.count(), func.min(WaitingConversation.waiting_since))
        .where(WaitingConversation.tenant_id == tenant_id)).one()
    today = to_beijing(now).date()
    return TeamBoard(now, policy["enabled"], policy["default_capacity"],
                     member_states(tenant_id, members, now, policy), waiting, oldest,
                     breached_since(tenant_id, beijing_day_range(today, today)[0]))


def confirmation_needed(tenant_id: uuid.UUID, member_id: uuid.UUID, now: datetime) -> MemberState | None:
    """The state of the tenant's active member `member_id` when a supervisor assigning a
    conversation to them by hand is asked to confirm first: the tenant's availability policy is on
    and the member has warnings. None otherwise, also for a member who is inactive, foreign or
    missing (the assignment itself refuses them)."""
    policy = policy_of(tenant_id)
    if not policy["enabled"]:
        return None
    member = db.session.scalar(select(Member).where(Member.id == member_id, Member.tenant_id == tenant_id,
                                                    Member.active.is_(True)))
    if member is None:
        return None
    state = member_states(tenant_id, [member], now, policy)[0]
    return state if state.warnings() else None
