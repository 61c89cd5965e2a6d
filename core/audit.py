"""The audit log: who did what to which target, with a summary that never holds secrets."""
import uuid
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from core.clock import utcnow
from core.db import Base, UUIDPrimaryKey, db


class AuditEntry(UUIDPrimaryKey, Base):
    """One audited action inside a tenant."""

    __tablename__ = "audit_entry"

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    actor_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    action: Mapped[str] = mapped_column(String(80))
    target: Mapped[str] = mapped_column(String(200))
    summary: Mapped[dict] = mapped_column(JSON, default=dict)
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


_INSERT = AuditEntry.__table__.insert()  # built once: an entry is one INSERT, no unit of work


def record(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, action: str, target: str,
           summary: dict | None = None) -> None:
    """Add an audit entry to the current transaction (the caller commits): the session's pending
    changes are flushed first, since the entry may name them, then one INSERT."""
    db.session.flush()
    db.session.execute(_INSERT, {"tenant_id": tenant_id, "actor_id": actor_id, "action": action, "target": target,
                                 "summary": summary or {}})
