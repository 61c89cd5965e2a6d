"""Tables of service levels (issue 36): a tenant's policies (a default and per-channel overrides) and
its weekly business hours, stored as one document replaced whole (the business calendar is the
availability calendar's, `desk.availability_models.CalendarException`: one calendar, not two); and
the timers running on conversations."""
import uuid
from datetime import date, datetime

from sqlalchemy import JSON, ForeignKey, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column

from core.clock import utcnow
from core.db import Base, UUIDPrimaryKey
from desk.models import one_of

HOURS_KINDS = ("business", "calendar")


class ServiceLevelSettings(Base):
    """A tenant's service-level policies and weekly business hours as validated by
    `desk.service_levels` (no row: the default policy without targets, and no weekly hours)."""

    __tablename__ = "service_level_settings"

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    policies: Mapped[list] = mapped_column(JSON)
    hours: Mapped[list] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


TIMER_KINDS = ("first_response", "next_response", "resolution")
OUTCOMES = ("met", "breached", "closed")  # closed: a response timer ended by resolving, no reply given
OPEN_DUE = "breached_at IS NULL AND stopped_at IS NULL AND due_at IS NOT NULL"  # what the breach sweep looks at
RUNNING = "stopped_at IS NULL"  # what the workbench's "Breaching soon" looks at, breached or not
BREACHED = "breached_at IS NOT NULL"  # the team board's count of breaches


class ServiceLevelTimer(UUIDPrimaryKey, Base):
    """One target running on a conversation (`desk.service_timers`): started by a customer message
    with the minutes and hours of the policy then in force, and from then on its own. `due_at` is
    computed once per event (start, resume) and stored; null while paused (resolution in `pending`).
    `used_minutes` are the minutes counted before the running span that began at `counted_since`.
    A breach is `breached_at` (the due time), written once; `stopped_at`, `elapsed_minutes` (counted,
    in the timer's hours) and `member_id` (who replied or resolved) once it ends. `started_on` is the
    Beijing date of the start, the day the report files it under."""

    __tablename__ = "service_level_timer"
    __table_args__ = (
        one_of("kind", TIMER_KINDS), one_of("hours", HOURS_KINDS), one_of("outcome", OUTCOMES),
        Index("ix_service_level_timer_conversation_id_kind", "conversation_id", "kind"),
        Index("ix_service_level_timer_due", "due_at", postgresql_where=text(OPEN_DUE), sqlite_where=text(OPEN_DUE)),
        Index("ix_service_level_timer_tenant_id_due_at", "tenant_id", "due_at", postgresql_where=text(RUNNING),
              sqlite_where=text(RUNNING)),
        Index("ix_service_level_timer_tenant_id_started_on", "tenant_id", "started_on"),
        Index("ix_service_level_timer_tenant_id_breached_at", "tenant_id", "breached_at",
              postgresql_where=text(BREACHED), sqlite_where=text(BREACHED)))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    conversation_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("conversation.id"))
    channel_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("channel.id"))
    kind: Mapped[str] = mapped_column(String(20))
    hours: Mapped[str] = mapped_column(String(10))
    target_minutes: Mapped[int]
    started_at: Mapped[datetime]
    started_on: Mapped[date]
    counted_since: Mapped[datetime | None]
    used_minutes: Mapped[float] = mapped_column(default=0.0)
    due_at: Mapped[datetime | None]
    breached_at: Mapped[datetime | None]
    stopped_at: Mapped[datetime | None]
    elapsed_minutes: Mapped[float | None]
    member_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("member.id"))
    outcome: Mapped[str | None] = mapped_column(String(10))
