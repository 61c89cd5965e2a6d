"""Tables of the Studio app builder."""
import uuid
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from core.clock import utcnow
from core.db import Base, JSONDocument, TenantAppCount, UUIDPrimaryKey
from desk.models import one_of

GRANT_ITEMS = ("name", "contact", "note")  # name; phone and e-mail; the internal note
GENERATION_STATES = ("queued", "running", "succeeded", "unsupported", "failed", "interrupted")


class StudioTenantUsage(TenantAppCount, Base):
    """Per-tenant counters that enforce quotas with one conditional UPDATE."""

    __tablename__ = "studio_tenant_usage"


class StudioApp(UUIDPrimaryKey, Base):
    """A form application; its state is the pair (enabled, active_version)."""

    __tablename__ = "studio_app"
    __table_args__ = (Index("ix_studio_app_tenant_id_updated_at", "tenant_id", "updated_at"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    name: Mapped[str] = mapped_column(String(120))
    enabled: Mapped[bool] = mapped_column(default=False)
    active_version: Mapped[int | None]
    latest_version: Mapped[int] = mapped_column(default=0)
    record_count: Mapped[int] = mapped_column(default=0)
    origin: Mapped[str | None] = mapped_column(String(200))
    license: Mapped[str | None] = mapped_column(String(200))
    created_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class StudioVersion(UUIDPrimaryKey, Base):
    """An immutable definition of an application; what changes is `simulated` and the note of its
    latest publication that had one (`publish_note`, set from the console page: issue 38)."""

    __tablename__ = "studio_version"
    __table_args__ = (UniqueConstraint("app_id", "version"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    app_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("studio_app.id"))
    version: Mapped[int]
    definition: Mapped[dict] = mapped_column(JSON)
    definition_hash: Mapped[str] = mapped_column(String(64))
    simulated: Mapped[bool] = mapped_column(default=False)
    publish_note: Mapped[str | None] = mapped_column(String(400))
    created_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class StudioRecord(UUIDPrimaryKey, Base):
    """One saved submission of the live version, after rules."""

    __tablename__ = "studio_record"
    __table_args__ = (
        UniqueConstraint("app_id", "idempotency_key"),
        Index("ix_studio_record_app_id_version", "app_id", "version"),
        Index("ix_studio_record_app_id_created_at", "app_id", "created_at"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    app_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("studio_app.id"))
    version: Mapped[int]
    data: Mapped[dict] = mapped_column(JSONDocument)
    trace: Mapped[list] = mapped_column(JSON)
    idempotency_key: Mapped[uuid.UUID]
    input_digest: Mapped[str] = mapped_column(String(64))
    created_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    conversation_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("conversation.id"))  # from the workbench
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class StudioWorkbenchEntry(UUIDPrimaryKey, Base):
    """An application an administrator added to the workbench, in the tenant's order (at most 10)."""

    __tablename__ = "studio_workbench_entry"
    __table_args__ = (UniqueConstraint("tenant_id", "app_id"),
                      Index("ix_studio_workbench_entry_tenant_id_position", "tenant_id", "position"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    app_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("studio_app.id"))
    position: Mapped[int]
    added_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    added_at: Mapped[datetime] = mapped_column(default=utcnow)


class StudioDataGrant(UUIDPrimaryKey, Base):
    """An agent's authorization to see one item of the current customer's profile beside one
    version's form: bound to tenant, application, version and member; it lapses after 90 days or
    when revoked (the row stays, as the audit trail's counterpart)."""

    __tablename__ = "studio_data_grant"
    __table_args__ = (one_of("item", GRANT_ITEMS),
                      Index("ix_studio_data_grant_member_id_app_id", "member_id", "app_id"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    app_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("studio_app.id"))
    version: Mapped[int]
    member_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("member.id"))
    item: Mapped[str] = mapped_column(String(20))
    granted_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime]
    revoked_at: Mapped[datetime | None]


class StudioGeneration(UUIDPrimaryKey, Base):
    """One request to draft a definition with the model, from queued to its outcome.

    The job that calls the model saves the draft version and this row's outcome in one
    transaction, so a worker that dies mid-way leaves the row `running` (the sweeper then marks
    it `interrupted`) and no application behind.
    """

    __tablename__ = "studio_generation"
    __table_args__ = (one_of("status", GENERATION_STATES),
                      Index("ix_studio_generation_tenant_id_created_at", "tenant_id", "created_at"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    created_by: Mapped[uuid.UUID] = mapped_column(ForeignKey("user.id"))
    app_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("studio_app.id"))  # the app to version
    prompt: Mapped[str] = mapped_column(Text)
    knowledge: Mapped[list] = mapped_column(JSON, default=list)  # [{"id", "version"}] as consented
    status: Mapped[str] = mapped_column(String(20), default="queued")
    error_code: Mapped[str | None] = mapped_column(String(60))
    unsupported: Mapped[dict | None] = mapped_column(JSON)  # the 422 lists of an unsupported result
    draft_kind: Mapped[str | None] = mapped_column(String(40))  # a registered draft kind (studio.draft_kinds)
    preview_draft: Mapped[dict | None] = mapped_column(JSON)  # its definition (answered, never saved)
    version: Mapped[int | None]  # the draft version created
    input_tokens: Mapped[int | None]
    output_tokens: Mapped[int | None]
    slot_token: Mapped[str | None] = mapped_column(String(64))  # the platform in-progress lease
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]


ACTION_RUN_STATES = ("queued", "sending", "accepted", "failed", "awaiting_verification", "draft_created")


class StudioActionBinding(UUIDPrimaryKey, Base):
    """The fixed public HTTPS address an administrator bound to one http action of one version,
    with an optional bearer token (Fernet-encrypted). A new address or a new version is a new
    binding; at most one binding per version and action is enabled."""

    __tablename__ = "studio_action_binding"
    __table_args__ = (Index("ix_studio_action_binding_app_id_version", "app_id", "version", "action_key"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    app_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("studio_app.id"))
    version: Mapped[int]
    action_key: Mapped[str] = mapped_column(String(32))
    endpoint: Mapped[str] = mapped_column(Text)
    endpoint_host: Mapped[str] = mapped_column(String(255))
    bearer_token: Mapped[str | None] = mapped_column(Text)  # encrypted; never answered or logged
    enabled: Mapped[bool] = mapped_column(default=True)
    bound_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    bound_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    revoked_at: Mapped[datetime | None]


class StudioActionRun(UUIDPrimaryKey, Base):
    """The one run of one action on one record: its id, derived from both (studio.actions.action_id),
    is the `x-service-action-id`; the exact body sent, and the outcome (docs/decisions.md, "Record
    actions")."""

    __tablename__ = "studio_action_run"
    __table_args__ = (one_of("status", ACTION_RUN_STATES), Index("ix_studio_action_run_record_id", "record_id"),
                      Index("ix_studio_action_run_status_created_at", "status", "created_at"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    app_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("studio_app.id"))
    record_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("studio_record.id"))
    version: Mapped[int]
    action_key: Mapped[str] = mapped_column(String(32))
    kind: Mapped[str] = mapped_column(String(20))
    binding_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("studio_action_binding.id"))
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(30), default="queued")
    http_status: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(String(40))
    campaign_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("marketing_draft.id"))
    requested_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
