"""Tables of the automation rules: rules, their immutable revisions and publication grants.

A rule's state is (state, active_revision, grant_id). Every save adds a revision; a publication
adds a grant naming the revision, the execution mode and the exact permissions confirmed, and
points the rule at it. Grants are never changed except to be revoked when replaced, so a task that
carries an older grant id can tell it no longer holds (plans and runs, issue 14, carry grant ids).
"""
import uuid
from datetime import datetime

from sqlalchemy import JSON, ForeignKey, Index, String, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from core.clock import utcnow
from core.db import Base, TenantAppCount, UUIDPrimaryKey
from desk.models import one_of

RULE_STATES = ("draft", "published", "paused")
EXECUTION_MODES = ("plan_only", "scheduled", "message_event")
TRIGGERS = ("weekly", "manual_sample", "message_received")
RUN_KINDS = ("manual", "scheduled", "message_event")
RUN_STATES = ("queued", "running", "complete", "partial", "cancelled", "failed", "missed")


class RuleTenantUsage(TenantAppCount, Base):
    """Per-tenant count of rules ever created (20 per tenant), taken with one conditional UPDATE."""

    __tablename__ = "rule_tenant_usage"


class AutomationRule(UUIDPrimaryKey, Base):
    """A routing rule of a tenant: its latest saved revision and, once published, the live one."""

    __tablename__ = "automation_rule"
    __table_args__ = (one_of("state", RULE_STATES), one_of("trigger", TRIGGERS),
                      Index("ix_automation_rule_tenant_id_updated_at", "tenant_id", "updated_at"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    name: Mapped[str] = mapped_column(String(120))
    trigger: Mapped[str] = mapped_column(String(20))  # of the latest revision
    state: Mapped[str] = mapped_column(String(20), default="draft")
    latest_revision: Mapped[int] = mapped_column(default=0)
    active_revision: Mapped[int | None]  # the published revision (kept while paused)
    # The current grant (automation_grant.id; no foreign key, which would make the two tables a cycle).
    grant_id: Mapped[uuid.UUID | None]
    created_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class AutomationRuleRevision(UUIDPrimaryKey, Base):
    """An immutable saved definition of a rule, its assignees bound to member ids."""

    __tablename__ = "automation_rule_revision"
    __table_args__ = (UniqueConstraint("rule_id", "revision"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    rule_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("automation_rule.id"))
    revision: Mapped[int]
    definition: Mapped[dict] = mapped_column(JSON)
    definition_hash: Mapped[str] = mapped_column(String(64))
    created_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AutomationGrant(UUIDPrimaryKey, Base):
    """One publication: the revision, the execution mode and the permissions the administrator
    confirmed. A fresh grant per publication; the one it replaces is revoked, never widened."""

    __tablename__ = "automation_grant"
    __table_args__ = (one_of("execution_mode", EXECUTION_MODES),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    rule_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("automation_rule.id"), index=True)
    revision: Mapped[int]
    execution_mode: Mapped[str] = mapped_column(String(20))
    permissions: Mapped[list] = mapped_column(JSON)
    granted_by: Mapped[uuid.UUID] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    revoked_at: Mapped[datetime | None]


class AutomationRun(UUIDPrimaryKey, Base):
    """One plan of a published rule (mode plan_only, never executed by itself): manual, for a
    scheduled slot time, or for one message event. Executing it is a separate, later step."""

    __tablename__ = "automation_run"
    __table_args__ = (one_of("kind", RUN_KINDS), one_of("status", RUN_STATES),
                      Index("ix_automation_run_rule_id_created_at", "rule_id", "created_at"),
                      Index("ix_automation_run_tenant_id_status", "tenant_id", "status"),
                      # One scheduled run per rule and slot time (a manual plan of the same slot may exist too).
                      Index("uq_automation_run_scheduled_slot", "rule_id", "planned_for", unique=True,
                            postgresql_where=text("kind = 'scheduled'"), sqlite_where=text("kind = 'scheduled'")),
                      UniqueConstraint("rule_id", "message_id"))  # one run per rule and message

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    rule_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("automation_rule.id"))
    revision: Mapped[int]
    grant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("automation_grant.id"))
    kind: Mapped[str] = mapped_column(String(20))
    mode: Mapped[str] = mapped_column(String(20), default="plan_only")
    executed: Mapped[bool] = mapped_column(default=False)
    status: Mapped[str] = mapped_column(String(20), default="queued")
    planned_for: Mapped[datetime | None]  # the slot time a weekly plan is for
    message_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("message.id"))
    scanned: Mapped[int] = mapped_column(default=0)
    planned_count: Mapped[int] = mapped_column(default=0)
    schedule_execution_state: Mapped[str | None] = mapped_column(String(20))
    schedule_execution_code: Mapped[str | None] = mapped_column(String(60))
    requested_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    approved_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    execution_requested_at: Mapped[datetime | None]
    execution_finished_at: Mapped[datetime | None]  # every command final; its summary audited once


class AutomationRunItem(UUIDPrimaryKey, Base):
    """A plan's decision for one conversation: the target and the reason, and the conversation's
    atomic snapshot when it is planned. No message text is stored."""

    __tablename__ = "automation_run_item"
    __table_args__ = (UniqueConstraint("run_id", "conversation_id"),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    run_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("automation_run.id"))
    conversation_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("conversation.id"))
    planned: Mapped[bool] = mapped_column(default=False)
    target_member_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("member.id"))
    reason: Mapped[str] = mapped_column(String(60))
    detail: Mapped[dict | None] = mapped_column(JSON)
    snapshot: Mapped[dict | None] = mapped_column(JSON)
