"""Tables of the host desk."""
import uuid
from datetime import datetime

from flask import current_app
from flask_login import UserMixin
from sqlalchemy import (JSON, CheckConstraint, ForeignKey, Index, String, Text, UniqueConstraint,
                        bindparam, false, literal_column)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Mapped, mapped_column, relationship
from sqlalchemy.sql.functions import FunctionElement
from werkzeug.security import check_password_hash, generate_password_hash

from core.clock import utcnow
from core.db import Base, UTCDateTime, UUIDPrimaryKey
from core.delivery import AttemptColumns, OutboxColumns

TIERS = ("standard", "professional")
ROLES = ("admin", "supervisor", "agent")
CONVERSATION_STATUSES = ("open", "pending", "resolved")
DIRECTIONS = ("inbound", "outbound")
MESSAGE_KINDS = ("public", "private_note")
KNOWLEDGE_STATUSES = ("draft", "published", "expired")
AI_USES = ("generation", "intent", "semantic_preview", "semantic_routing")
# A command receipt of the atomic assignment adapter (document 2), one per plan and conversation.
RECEIPT_STATES = ("pending", "sending", "applied", "state_changed", "rejected", "command_conflict", "uncertain",
                  "cancelled")
ACCOUNT_KINDS = ("independent", "shared")
# What changed in a conversation: by hand (assignment, status, snooze, merged_into on the source,
# merged_from on the target; issue 37), or a snooze's end (wake: by the tick or a customer message).
EVENT_KINDS = ("assignment", "status", "snooze", "wake", "merged_into", "merged_from")
PRESENCES = ("online", "away", "offline")  # a member's saved availability choice (issue 35)
CAPACITY_RANGE = (1, 100)  # open conversations a member may hold at once, when set


def one_of(column: str, values: tuple[str, ...]) -> CheckConstraint:
    """A named CHECK constraint keeping a string column inside its allowed values."""
    allowed = ", ".join(f"'{v}'" for v in values)
    return CheckConstraint(f"{column} IN ({allowed})", name=f"{column}_allowed")


def within(column: str, low: int, high: int) -> CheckConstraint:
    """A named CHECK constraint keeping an integer column from `low` to `high` (NULL passes)."""
    return CheckConstraint(f"{column} BETWEEN {low} AND {high}", name=f"{column}_range")


class changed_time(FunctionElement):  # noqa: N801  a SQL function, named like one
    """The time a row is changed at: now, but always past the column's previous value.

    It is evaluated inside the UPDATE, under the row's lock, so every write moves the value
    forward by at least a microsecond: two writes within one tick of the clock, or one from a
    host whose clock is behind, still leave two different, increasing values. Compare-and-swap
    writers can therefore rely on `updated_at` to the microsecond.
    """

    type = UTCDateTime()
    inherit_cache = True


def _now_parameter(compiler) -> str:
    """The application's clock, read when the statement runs, as a bound parameter."""
    return compiler.process(bindparam("changed_now", callable_=utcnow, type_=UTCDateTime(), unique=True))


@compiles(changed_time, "postgresql")
def _changed_time_postgresql(element, compiler, **kw):
    (previous,) = element.clauses
    return (f"GREATEST({_now_parameter(compiler)}, "
            f"{compiler.process(previous, **kw)} + interval '1 microsecond')")


@compiles(changed_time, "sqlite")
def _changed_time_sqlite(element, compiler, **kw):
    # SQLite keeps the UTC wall time as text 'YYYY-MM-DD HH:MM:SS.ffffff', which sorts by time,
    # and its date functions stop at milliseconds: the microsecond is added in whole numbers.
    (previous,) = element.clauses
    column = compiler.process(previous, **kw)
    micros = (f"(CAST(strftime('%s', substr({column}, 1, 19)) AS INTEGER) * 1000000"
              f" + CAST(substr({column}, 21, 6) AS INTEGER) + 1)")
    later = (f"strftime('%Y-%m-%d %H:%M:%S', {micros} / 1000000, 'unixepoch')"
             f" || printf('.%06d', {micros} % 1000000)")
    return f"max({_now_parameter(compiler)}, {later})"


class Tenant(UUIDPrimaryKey, Base):
    """A customer-service organisation; every other row belongs to exactly one tenant."""

    __tablename__ = "tenant"
    __table_args__ = (one_of("tier", TIERS),)

    name: Mapped[str] = mapped_column(String(120))
    tier: Mapped[str] = mapped_column(String(20), default="standard")
    active: Mapped[bool] = mapped_column(default=True)
    # Metered AI use: generation is then limited by the points ledger, not by 20 per day.
    ai_points_enabled: Mapped[bool] = mapped_column(default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class User(UUIDPrimaryKey, UserMixin, Base):
    """A person who can log in; tenant roles come from Member rows."""

    __tablename__ = "user"

    email: Mapped[str] = mapped_column(String(254), unique=True)
    password_hash: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    locale: Mapped[str | None] = mapped_column(String(8))  # the pages' language, a core.i18n.LOCALES id

    def set_password(self, password: str) -> None:
        """Store a salted hash of the password."""
        self.password_hash = generate_password_hash(
            password, method=current_app.config["PASSWORD_HASH_METHOD"])

    def check_password(self, password: str) -> bool:
        """Compare a password with the stored hash."""
        return check_password_hash(self.password_hash, password)


class Member(UUIDPrimaryKey, Base):
    """A user's seat in one tenant with a role."""

    __tablename__ = "member"
    __table_args__ = (UniqueConstraint("tenant_id", "user_id"), one_of("role", ROLES), one_of("presence", PRESENCES),
                      within("capacity", *CAPACITY_RANGE))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    user_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("user.id"), index=True)
    role: Mapped[str] = mapped_column(String(20))
    display_name: Mapped[str] = mapped_column(String(80))
    active: Mapped[bool] = mapped_column(default=True)
    synchronized: Mapped[bool] = mapped_column(default=True)
    workbench_style: Mapped[str | None] = mapped_column(String(40))  # a workbench tool's style key, or defaults
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Availability (issue 35): the saved choice, the workbench's last request (None: never), the
    # member's own capacity (None: the tenant's default) and weekly shifts and leave as validated
    # by desk/availability.py.
    presence: Mapped[str] = mapped_column(String(10), default="online", server_default="online")
    last_seen_at: Mapped[datetime | None]
    capacity: Mapped[int | None]
    shifts: Mapped[list] = mapped_column(JSON, default=list, server_default="[]")
    leave: Mapped[list] = mapped_column(JSON, default=list, server_default="[]")
    last_routed_at: Mapped[datetime | None]  # the waiting queue's last assignment to them: idle since
    presence_since: Mapped[datetime | None]  # when the saved choice last changed (None: never changed)

    tenant: Mapped[Tenant] = relationship()
    user: Mapped[User] = relationship()


class Customer(UUIDPrimaryKey, Base):
    """A person the desk serves."""

    __tablename__ = "customer"
    __table_args__ = (UniqueConstraint("tenant_id", "external_id"),
                      Index("ix_customer_tenant_id_id", "tenant_id", "id"))  # open API keyset pages

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    phone: Mapped[str | None] = mapped_column(String(40))
    email: Mapped[str | None] = mapped_column(String(254))
    support_note: Mapped[str] = mapped_column(Text, default="")
    external_id: Mapped[str | None] = mapped_column(String(128))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Channel(UUIDPrimaryKey, Base):
    """An inbound messaging channel; its signing secret is stored encrypted."""

    __tablename__ = "channel"

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    name: Mapped[str] = mapped_column(String(80))
    secret_encrypted: Mapped[str] = mapped_column(Text)
    active: Mapped[bool] = mapped_column(default=True)
    # Where replies go (HTTPS), with their own signing secret; none: replies are stored only.
    outbound_url: Mapped[str | None] = mapped_column(String(2048))
    outbound_secret_encrypted: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Conversation(UUIDPrimaryKey, Base):
    """A thread between a customer and the desk on one channel."""

    __tablename__ = "conversation"
    # Every UPDATE, by the unit of work or a bulk `update(Conversation)`, moves `updated_at`
    # (never set it by hand); the new value is read back by the same statement.
    __mapper_args__ = {"eager_defaults": True}
    __table_args__ = (
        one_of("status", CONVERSATION_STATUSES),
        # Newest activity first with the id as tie-breaker, straight from the index (no sort): the
        # tenant's conversations (plans, the search's scan window), the workbench's list tabs
        # (status; mine and unassigned), and the "changes since" poll.
        Index("ix_conversation_tenant_id_last_activity_at", "tenant_id", "last_activity_at", "id"),
        Index("ix_conversation_tenant_id_status_last_activity_at", "tenant_id", "status", "last_activity_at", "id"),
        Index("ix_conversation_tenant_assignee_status_activity", "tenant_id", "assignee_member_id", "status",
              "last_activity_at", "id"),
        Index("ix_conversation_tenant_id_updated_at", "tenant_id", "updated_at"),
        Index("ix_conversation_customer_id_channel_id", "customer_id", "channel_id"),
        Index("ix_conversation_snoozed_until", "snoozed_until"),  # the tick's wake-up
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    customer_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("customer.id"))
    channel_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("channel.id"))
    status: Mapped[str] = mapped_column(String(20), default="open")
    assignee_member_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("member.id"))
    assigned_at: Mapped[datetime | None]  # when the assignee last changed (None: before issue 35, or never)
    bot_active: Mapped[bool] = mapped_column(default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(
        default=utcnow, onupdate=changed_time(literal_column("conversation.updated_at")))
    last_activity_at: Mapped[datetime] = mapped_column(default=utcnow)
    # Issue 37: while pending by a snooze, when the tick reopens it (null otherwise: only a
    # pending conversation is snoozed); the conversation a merge moved this one's messages into.
    snoozed_until: Mapped[datetime | None]
    merged_into_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("conversation.id"))

    customer: Mapped[Customer] = relationship()
    assignee: Mapped[Member | None] = relationship()


class Message(UUIDPrimaryKey, Base):
    """One message or private note in a conversation."""

    __tablename__ = "message"
    __table_args__ = (
        UniqueConstraint("channel_id", "external_id"),
        UniqueConstraint("conversation_id", "client_message_id"),
        one_of("direction", DIRECTIONS),
        one_of("kind", MESSAGE_KINDS),
        Index("ix_message_conversation_id_created_at", "conversation_id", "created_at"),
    )

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    conversation_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("conversation.id"))
    channel_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("channel.id"))
    external_id: Mapped[str | None] = mapped_column(String(128))
    direction: Mapped[str] = mapped_column(String(10))
    kind: Mapped[str] = mapped_column(String(20), default="public")
    author_member_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("member.id"))
    text: Mapped[str] = mapped_column(Text)
    attachments: Mapped[list] = mapped_column(JSON, default=list)
    # The composer's id of a reply or note: a retried POST stores the message once.
    client_message_id: Mapped[uuid.UUID | None]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ConversationRead(Base):
    """When a member last read a conversation in the workbench: later activity marks it unread."""

    __tablename__ = "conversation_read"

    member_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("member.id"), primary_key=True)
    conversation_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("conversation.id"), primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    read_at: Mapped[datetime] = mapped_column(default=utcnow)


class ComposerDraft(Base):
    """What a member has typed in a conversation's composer and not sent yet (issue 37): theirs
    alone, restored wherever they open the conversation again, removed when they send and by the
    sweep after 30 days. `private` is the composer's note toggle."""

    __tablename__ = "composer_draft"
    __table_args__ = (Index("ix_composer_draft_updated_at", "updated_at"),)

    member_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("member.id"), primary_key=True)
    conversation_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("conversation.id"), primary_key=True)
    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    text: Mapped[str] = mapped_column(Text)
    private: Mapped[bool] = mapped_column(default=False)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class ConversationEvent(UUIDPrimaryKey, Base):
    """A change made to a conversation (EVENT_KINDS), shown in the thread with its actor: the
    person who made it, none for a snooze ended by the tick or a customer message. Automated
    reassignments are their applied receipts."""

    __tablename__ = "conversation_event"
    __table_args__ = (one_of("kind", EVENT_KINDS),
                      Index("ix_conversation_event_conversation_id_created_at", "conversation_id", "created_at"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    conversation_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("conversation.id"))
    actor_member_id: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("member.id"))
    kind: Mapped[str] = mapped_column(String(20))
    before: Mapped[str | None] = mapped_column(String(40))  # a member id or a status
    after: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class ChannelDelivery(UUIDPrimaryKey, OutboxColumns, Base):
    """The outbox row of one reply sent to its channel's outbound endpoint, delivered by the one
    delivery engine (`core.delivery`); `retried`: failed, then sent again as a newer row."""

    __tablename__ = "channel_delivery"
    __table_args__ = (Index("ix_channel_delivery_message_id_created_at", "message_id", "created_at"),
                      Index("ix_channel_delivery_status_next_attempt_at", "status", "next_attempt_at"))

    channel_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("channel.id"))
    message_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("message.id"))


class ChannelDeliveryAttempt(UUIDPrimaryKey, AttemptColumns, Base):
    """One HTTP attempt of a reply's delivery."""

    __tablename__ = "channel_delivery_attempt"
    __table_args__ = (UniqueConstraint("event_id", "number"),)

    event_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("channel_delivery.id"))  # the delivery


class KnowledgeDocument(UUIDPrimaryKey, Base):
    """A knowledge-base article; only valid, published, safely processed ones may feed the AI."""

    __tablename__ = "knowledge_document"
    __table_args__ = (one_of("status", KNOWLEDGE_STATUSES),
                      Index("ix_knowledge_document_tenant_id_updated_at_id", "tenant_id", "updated_at", "id"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    title: Mapped[str] = mapped_column(String(200))
    version: Mapped[int] = mapped_column(default=1)
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), default="draft")
    valid_until: Mapped[datetime | None]
    safe_processed: Mapped[bool] = mapped_column(default=False)
    # What the safe-processing job made of the published body (plain text), or why it refused it.
    safe_body: Mapped[str | None] = mapped_column(Text)
    unsafe_reason: Mapped[str | None] = mapped_column(String(60))
    published_at: Mapped[datetime | None]
    origin: Mapped[str | None] = mapped_column(String(200))  # a template-market import keeps both
    license: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class QuickReply(UUIDPrimaryKey, Base):
    """A tenant's saved answer, picked in the composer by typing `/`."""

    __tablename__ = "quick_reply"
    __table_args__ = (UniqueConstraint("tenant_id", "title"),)  # also the tenant's list, by title

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    title: Mapped[str] = mapped_column(String(80))
    body: Mapped[str] = mapped_column(Text)
    origin: Mapped[str | None] = mapped_column(String(200))  # a template-market import keeps both
    license: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class OfficialAccount(UUIDPrimaryKey, Base):
    """A messaging official account; campaigns need an independent one."""

    __tablename__ = "official_account"
    __table_args__ = (one_of("kind", ACCOUNT_KINDS),)

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    kind: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class MarketingDraft(UUIDPrimaryKey, Base):
    """An unsent campaign draft; review and sending happen in the messaging area."""

    __tablename__ = "marketing_draft"

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    official_account_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("official_account.id"))
    title: Mapped[str] = mapped_column(String(200))
    body: Mapped[str] = mapped_column(Text)
    audience_tag: Mapped[str | None] = mapped_column(String(200))  # None: all eligible opted-in recipients
    source: Mapped[str] = mapped_column(String(40))
    source_ref: Mapped[str | None] = mapped_column(String(200))
    status: Mapped[str] = mapped_column(String(20), default="draft")
    created_by: Mapped[uuid.UUID | None] = mapped_column(ForeignKey("user.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AiPointsEntry(UUIDPrimaryKey, Base):
    """One metered use of the platform model by a tenant: its tokens and the points they cost."""

    __tablename__ = "ai_points_entry"
    __table_args__ = (one_of("kind", AI_USES), Index("ix_ai_points_entry_tenant_id_created_at",
                                                     "tenant_id", "created_at"))

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    kind: Mapped[str] = mapped_column(String(30))
    reference: Mapped[str | None] = mapped_column(String(80))  # e.g. studio_generation:<id>
    input_tokens: Mapped[int]
    output_tokens: Mapped[int]
    points: Mapped[int]
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class AssignmentReceipt(UUIDPrimaryKey, Base):
    """The idempotent receipt of one assignment command: created once per command key (a plan, a
    scheduled round, a message event) and conversation, and moved to its outcome by the atomic
    adapter in the same transaction as the reassignment it records."""

    __tablename__ = "assignment_receipt"
    __table_args__ = (UniqueConstraint("command_key", "conversation_id"), one_of("status", RECEIPT_STATES),
                      Index("ix_assignment_receipt_conversation_id_status", "conversation_id", "status"),
                      Index("ix_assignment_receipt_status_updated_at", "status", "updated_at"))  # the sweep

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), index=True)
    command_key: Mapped[str] = mapped_column(String(80))  # e.g. "run:<run id>"
    conversation_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("conversation.id"))
    target_member_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("member.id"))
    snapshot: Mapped[dict] = mapped_column(JSON)  # the conversation as planned, compared before writing
    status: Mapped[str] = mapped_column(String(20), default="pending")
    reason: Mapped[str | None] = mapped_column(String(60))  # why rejected, cancelled or uncertain
    reason_code: Mapped[str | None] = mapped_column(String(30))  # rejected: why the target was unavailable
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
