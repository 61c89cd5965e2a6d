"""Tables of the Open API v1: external applications, their records, webhook events and attempts."""
import uuid
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from core.clock import utcnow
from core.db import Base, JSONDocument, TenantAppCount, UUIDPrimaryKey
from core.delivery import AttemptColumns, OutboxColumns


class OpenTenantUsage(TenantAppCount, Base):
    """Applications ever created per tenant (revoked ones included): one conditional UPDATE."""

    __tablename__ = "open_tenant_usage"


class OpenApp(UUIDPrimaryKey, Base):
    """An external application: fixed scopes and URL, a hashed token, an encrypted signing secret."""

    __tablename__ = "open_app"
    __table_args__ = (Index("ix_open_app_tenant_id_created_at", "tenant_id", "created_at"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    name: Mapped[str] = mapped_column(String(80))
    scopes: Mapped[list] = mapped_column(JSON)
    webhook_url: Mapped[str | None] = mapped_column(String(2048))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    signing_secret_encrypted: Mapped[str | None] = mapped_column(Text)
    record_count: Mapped[int] = mapped_column(default=0)
    created_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]

    def status(self, now: datetime) -> str:
        """`revoked`, `expired` or `active` at `now`."""
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if now >= self.expires_at else "active"


class OpenRecord(UUIDPrimaryKey, Base):
    """A flat JSON record created by one application; keyset-paged by id."""

    __tablename__ = "open_record"
    __table_args__ = (
        UniqueConstraint("app_id", "idempotency_key"),
        Index("ix_open_record_app_id_id", "app_id", "id"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    app_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("open_app.id"))
    data: Mapped[dict] = mapped_column(JSONDocument)
    idempotency_key: Mapped[uuid.UUID]
    request_digest: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class WebhookEvent(UUIDPrimaryKey, OutboxColumns, Base):
    """One `app.record.created` event (an outbox row written with its record) and its fate;
    `cancelled`: the application was revoked first."""

    __tablename__ = "open_webhook_event"
    __table_args__ = (Index("ix_open_webhook_event_app_id_created_at", "app_id", "created_at"),
                      Index("ix_open_webhook_event_status_next_attempt_at", "status", "next_attempt_at"))

    app_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("open_app.id"))
    record_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("open_record.id"), unique=True)
    type: Mapped[str] = mapped_column(String(40))


class WebhookAttempt(UUIDPrimaryKey, AttemptColumns, Base):
    """One HTTP attempt of an event."""

    __tablename__ = "open_webhook_attempt"
    __table_args__ = (UniqueConstraint("event_id", "number"),)

    event_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("open_webhook_event.id"))
