"""Tables of service levels (issue 36): a tenant's policies (a default and per-channel overrides) and
its weekly business hours, stored as one document replaced whole; the business calendar is the
availability calendar's (`desk.availability_models.CalendarException`), one calendar, not two."""
import uuid
from datetime import datetime

from sqlalchemy import JSON, ForeignKey
from sqlalchemy.orm import Mapped, mapped_column

from core.clock import utcnow
from core.db import Base


class ServiceLevelSettings(Base):
    """A tenant's service-level policies and weekly business hours as validated by
    `desk.service_levels` (no row: the default policy without targets, and no weekly hours)."""

    __tablename__ = "service_level_settings"

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    policies: Mapped[list] = mapped_column(JSON)
    hours: Mapped[list] = mapped_column(JSON)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)
