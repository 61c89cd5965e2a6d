"""Tables of availability (issue 35): a tenant's policy, its calendar of holidays and make-up
workdays, and its waiting queue. A member's own presence, heartbeat, capacity, shifts and leave are
columns of `desk.models.Member`."""
import uuid
from datetime import date, datetime

from sqlalchemy import JSON, CheckConstraint, ForeignKey, Index, String, false
from sqlalchemy.orm import Mapped, mapped_column

from core.clock import utcnow
from core.db import Base, UUIDPrimaryKey
from desk.models import CAPACITY_RANGE, one_of, within

OFFLINE_POLICIES = ("keep", "release_after", "release_on_customer_reply")
CALENDAR_KINDS = ("holiday", "workday")  # a workday is a make-up workday (调休) with the shifts of `as_weekday`
# Why a member may not receive an automated assignment now, in the order the first that applies is given.
REASON_CODES = ("agent_on_leave", "holiday", "outside_shift", "agent_offline", "agent_away", "agent_at_capacity")
WAITING_REASONS = (*REASON_CODES, "no_reply")  # why a conversation waits in the queue
EVENT_KINDS = ("waiting", "drained", "reassigned", "released")  # availability decisions in a thread
MINUTES_RANGE = (1, 1440)  # no_reply_minutes, release_after_minutes
FALLBACK_RANGE = (0, 1440)  # fallback_after_minutes: 0 is at once
WEEKDAY_RANGE = (1, 7)  # Monday to Sunday
# A tenant without a policy row has these (the row is written by the first save).
POLICY_DEFAULTS = {"enabled": False, "default_capacity": 8, "fallback_after_minutes": 5, "no_reply_minutes": None,
                   "offline_policy": "keep", "release_after_minutes": None}


class AvailabilityPolicy(Base):
    """A tenant's availability policy: off by default, and then assignment is as document 2 says."""

    __tablename__ = "availability_policy"
    __table_args__ = (
        one_of("offline_policy", OFFLINE_POLICIES), within("default_capacity", *CAPACITY_RANGE),
        within("fallback_after_minutes", *FALLBACK_RANGE), within("no_reply_minutes", *MINUTES_RANGE),
        within("release_after_minutes", *MINUTES_RANGE),
        CheckConstraint("(offline_policy = 'release_after' AND release_after_minutes IS NOT NULL)"
                        " OR (offline_policy <> 'release_after' AND release_after_minutes IS NULL)",
                        name="release_after_minutes_set"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    enabled: Mapped[bool] = mapped_column(default=POLICY_DEFAULTS["enabled"], server_default=false())
    default_capacity: Mapped[int] = mapped_column(default=POLICY_DEFAULTS["default_capacity"])
    fallback_after_minutes: Mapped[int | None] = mapped_column(default=POLICY_DEFAULTS["fallback_after_minutes"])
    no_reply_minutes: Mapped[int | None]
    offline_policy: Mapped[str] = mapped_column(String(30), default=POLICY_DEFAULTS["offline_policy"])
    release_after_minutes: Mapped[int | None]


class CalendarException(Base):
    """One Beijing date of a tenant's calendar that is not an ordinary day: a holiday, or a make-up
    workday whose shifts are those of the weekday `as_weekday`."""

    __tablename__ = "calendar_exception"
    __table_args__ = (
        one_of("kind", CALENDAR_KINDS), within("as_weekday", *WEEKDAY_RANGE),
        CheckConstraint("(kind = 'workday' AND as_weekday IS NOT NULL) OR (kind = 'holiday' AND as_weekday IS NULL)",
                        name="as_weekday_set"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    day: Mapped[date] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(10))
    name: Mapped[str] = mapped_column(String(60))
    as_weekday: Mapped[int | None]


class WaitingConversation(Base):
    """A conversation in its tenant's waiting queue (at most once), first in first out by the time
    it joined; `preferred_member_id` is the member it goes to as soon as they are available."""

    __tablename__ = "waiting_conversation"
    __table_args__ = (one_of("reason_code", WAITING_REASONS),
                      Index("ix_waiting_conversation_tenant_id_waiting_since", "tenant_id", "waiting_since",
                            "conversation_id"))

    conversation_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("conversation.id"), primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    preferred_member_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("member.id"))
    reason_code: Mapped[str] = mapped_column(String(30))
    waiting_since: Mapped[datetime] = mapped_column(default=utcnow)
    # The conversation's assignee when it joined: assigned otherwise since, it has left the queue.
    expected_assignee_id: Mapped[uuid.UUID | None]


class AvailabilityEvent(UUIDPrimaryKey, Base):
    """One availability decision about a conversation, shown in its thread: it joined the waiting
    queue (`waiting`, because of `member_id`'s `reason_code`), was assigned from it (`drained` to
    `member_id`), was reassigned after the assignee's silence (`reassigned`: `member_id` the silent
    one) or released from an offline assignee (`released`). `detail` holds the numbers the line
    shows: the load (`open_count`, `capacity`), why that member (`basis`), the minutes waited."""

    __tablename__ = "availability_event"
    __table_args__ = (one_of("kind", EVENT_KINDS), one_of("reason_code", WAITING_REASONS),
                      Index("ix_availability_event_conversation_id_created_at", "conversation_id", "created_at"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    conversation_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("conversation.id"))
    kind: Mapped[str] = mapped_column(String(20))
    member_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("member.id"))
    reason_code: Mapped[str | None] = mapped_column(String(30))
    message_id: Mapped[uuid.UUID | None]  # reassigned, or waiting for no_reply: the customer message left unanswered
    detail: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
