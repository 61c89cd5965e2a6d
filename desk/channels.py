"""Channels and the signed inbound message flow."""
import hmac
import re
import secrets
import uuid
from dataclasses import dataclass

from sqlalchemy import Row, bindparam, case, func, insert, or_, select, update
from sqlalchemy.sql.dml import Insert, Update

from core.api import ApiError
from core.clock import utcnow
from core.crypto import decrypt_cached, encrypt, hmac_sha256_hex
from core.db import db, prepared, upsert_insert
from core.once import CreateOnce
from core.text import storable
from desk import service_timers, snooze
from desk.models import Channel, Conversation, Customer, Message, Tenant
from desk.service_level_models import ServiceLevelSettings

TIMESTAMP_SKEW = 300
SIGNATURE_RE = re.compile(r"v1=([0-9a-f]{64})")
TIMESTAMP_RE = re.compile(r"[0-9]{1,12}")  # Unix seconds, ASCII digits only
INBOUND_BODY_LIMIT = 16 * 1024
TEXT_LIMIT = 4000
MESSAGES = CreateOnce(Message, ("channel_id", "external_id"))  # a replay answers with the original

# The inbound path runs plain Core statements on the tables, built once: no ORM objects are
# loaded or flushed for a message (measured in docs/benchmarks.md).
_CHANNEL, _TENANT = Channel.__table__, Tenant.__table__
_CUSTOMER, _CONVERSATION = Customer.__table__, Conversation.__table__
_SERVICE_LEVELS = ServiceLevelSettings.__table__
# The channel row carries its tenant's service-level policies (null without any), so a message of a
# tenant without service levels costs no statement for them.
_ACTIVE_CHANNEL = (
    select(_CHANNEL.c.id, _CHANNEL.c.tenant_id, _CHANNEL.c.secret_encrypted, _SERVICE_LEVELS.c.policies)
    .join(_TENANT, _TENANT.c.id == _CHANNEL.c.tenant_id)
    .outerjoin(_SERVICE_LEVELS, _SERVICE_LEVELS.c.tenant_id == _CHANNEL.c.tenant_id)
    .where(_CHANNEL.c.id == bindparam("p_channel"), _CHANNEL.c.active.is_(True), _TENANT.c.active.is_(True)))
# The customer's latest conversation on the channel gets the activity (and reopens when it was
# resolved) in one UPDATE; `updated_at` moves by the column's own onupdate.
_LATEST_CONVERSATION = (
    select(_CONVERSATION.c.id)
    .where(_CONVERSATION.c.customer_id == bindparam("p_customer"),
           _CONVERSATION.c.channel_id == bindparam("p_channel"))
    .order_by(_CONVERSATION.c.created_at.desc()).limit(1).scalar_subquery())


def _touch(which) -> Update:
    """The conversation's new activity, reopening it if resolved; a merged one is left resolved and
    names the conversation it went into."""
    merged = _CONVERSATION.c.merged_into_id.is_not(None)
    return (update(_CONVERSATION).where(_CONVERSATION.c.id == which, _CONVERSATION.c.tenant_id == bindparam("p_tenant"))
            .values(status=case((merged, _CONVERSATION.c.status), (_CONVERSATION.c.status == "resolved", "open"),
                                else_=_CONVERSATION.c.status),
                    last_activity_at=case((merged, _CONVERSATION.c.last_activity_at), else_=bindparam("p_now")))
            .returning(_CONVERSATION.c.id, _CONVERSATION.c.snoozed_until, _CONVERSATION.c.merged_into_id))


_TOUCH_CONVERSATION = _touch(_LATEST_CONVERSATION)
_TOUCH_MERGED_INTO = _touch(bindparam("p_conversation"))
MERGE_HOPS = 20  # a conversation merged into one merged later: follow at most this many
_NEW_CONVERSATION = insert(_CONVERSATION)


@dataclass(frozen=True)
class Inbound:
    """A verified inbound message, already validated."""

    message_id: str
    external_id: str
    name: str
    phone: str | None
    email: str | None
    text: str


@dataclass(frozen=True)
class Stored:
    """What the inbound flow did: the rows touched and whether the message was a replay."""

    tenant_id: uuid.UUID
    conversation_id: uuid.UUID
    message_id: uuid.UUID
    duplicate: bool


def create_channel(tenant_id: uuid.UUID, name: str) -> tuple[Channel, str]:
    """Create a channel; returns it with its plain signing secret (shown once)."""
    secret = secrets.token_hex(32)
    channel = Channel(tenant_id=tenant_id, name=name, secret_encrypted=encrypt(secret))
    db.session.add(channel)
    db.session.flush()
    return channel, secret


def verify_signature(channel: Row, timestamp: str | None, signature: str | None,
                     raw_body: bytes, now: float) -> None:
    """Check timestamp skew and the HMAC over `timestamp.body` in constant time."""
    if not timestamp or not TIMESTAMP_RE.fullmatch(timestamp) or abs(now - int(timestamp)) > TIMESTAMP_SKEW:
        raise ApiError("invalid_timestamp", 401)
    match = SIGNATURE_RE.fullmatch(signature or "")
    secret = decrypt_cached(channel.secret_encrypted)  # kept per process, keyed by the stored value
    expected = hmac_sha256_hex(secret, timestamp.encode() + b"." + raw_body)
    if match is None or not hmac.compare_digest(match.group(1), expected):
        raise ApiError("invalid_signature", 401)


def _text(value, limit: int, path: str, optional: bool = False) -> str | None:
    """A trimmed non-empty string up to `limit` characters that the database can store."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > limit or not storable(value):
        raise ApiError("invalid_message", 400, detail=path)
    return value.strip()


def parse_inbound(body: dict) -> Inbound:
    """Validate the inbound JSON shape; unknown properties are refused."""
    customer = body.get("customer")
    if set(body) - {"message_id", "customer", "text"} or not isinstance(customer, dict):
        raise ApiError("invalid_message", 400, detail="customer")
    if set(customer) - {"external_id", "name", "phone", "email"}:
        raise ApiError("invalid_message", 400, detail="customer")
    return Inbound(
        message_id=_text(body.get("message_id"), 128, "message_id"),
        external_id=_text(customer.get("external_id"), 128, "customer.external_id"),
        name=_text(customer.get("name"), 120, "customer.name"),
        phone=_text(customer.get("phone"), 40, "customer.phone", optional=True),
        email=_text(customer.get("email"), 254, "customer.email", optional=True),
        text=_text(body.get("text"), TEXT_LIMIT, "text"),
    )


def find_channel(channel_id: uuid.UUID) -> Row | None:
    """The channel's id, tenant, encrypted secret and service-level policies, while the channel and its
    tenant are active."""
    return db.session.execute(_ACTIVE_CHANNEL, {"p_channel": channel_id}).first()


@prepared
def _upsert_customer(dialect: str) -> Insert:
    """INSERT the customer, or ON CONFLICT (tenant_id, external_id) refresh its contact data;
    RETURNING its id. Either way the row stays locked until the transaction ends, like
    SELECT … FOR UPDATE, in one statement. `updated_at` moves only when the contact changed."""
    statement = upsert_insert(dialect)(_CUSTOMER)
    new, old = statement.excluded, _CUSTOMER.c
    contact = {"name": new.name, "phone": func.coalesce(new.phone, old.phone),
               "email": func.coalesce(new.email, old.email)}
    changed = or_(*(getattr(old, column).is_distinct_from(value) for column, value in contact.items()))
    return statement.on_conflict_do_update(
        index_elements=("tenant_id", "external_id"),
        set_={**contact, "updated_at": case((changed, new.updated_at), else_=old.updated_at)},
    ).returning(old.id)


def _lock_customer(channel: Row, inbound: Inbound) -> uuid.UUID:
    """The id of the customer with this external id, created if new or its contact refreshed,
    locked until the transaction ends.

    The lock serializes every message of one customer, so a conversation is opened once and a
    replay waiting behind its twin finds the twin's message. (SQLite serializes all writers.)
    """
    statement = _upsert_customer(db.session.get_bind().dialect.name)
    return db.session.execute(statement, {
        "tenant_id": channel.tenant_id, "external_id": inbound.external_id, "name": inbound.name,
        "phone": inbound.phone, "email": inbound.email}).scalar_one()


def _open_conversation(channel: Row, customer_id: uuid.UUID) -> uuid.UUID:
    """The customer's conversation on this channel, reopened if resolved or snoozed, or a new one
    (its id)."""
    now = utcnow()
    found = db.session.execute(_TOUCH_CONVERSATION, {
        "p_customer": customer_id, "p_channel": channel.id, "p_tenant": channel.tenant_id, "p_now": now}).first()
    for _ in range(MERGE_HOPS):  # merged (`desk.merge`): the message goes where the thread went
        if found is None or found.merged_into_id is None:
            break
        found = db.session.execute(_TOUCH_MERGED_INTO, {"p_conversation": found.merged_into_id,
                                                        "p_tenant": channel.tenant_id, "p_now": now}).first()
    if found is not None:
        if found.snoozed_until is not None:
            snooze.woken_by_customer(channel.tenant_id, found.id, found.snoozed_until, now)
        return found.id
    conversation_id = uuid.uuid4()
    db.session.execute(_NEW_CONVERSATION, {
        "id": conversation_id, "tenant_id": channel.tenant_id, "customer_id": customer_id,
        "channel_id": channel.id, "status": "open", "created_at": now, "updated_at": now,
        "last_activity_at": now})
    return conversation_id


def _message_key(channel: Row, inbound: Inbound) -> dict:
    """The unique key of an inbound message: its channel and the channel's message id."""
    return {"channel_id": channel.id, "external_id": inbound.message_id}


def _replay(channel: Row, message: Message) -> Stored:
    """What a replayed message_id answers: the original message, nothing changed."""
    return Stored(channel.tenant_id, message.conversation_id, message.id, duplicate=True)


def store_inbound(channel: Row, inbound: Inbound) -> Stored:
    """Store a verified message once, under any concurrency.

    A replayed message_id is reported as a duplicate; the caller then rolls back, since a
    replay changes nothing (its customer and conversation were touched before the message's
    unique key named it a replay). A replay that waited behind its twin on the customer's lock
    meets the twin's committed message; one naming another customer waits on the message's key.
    """
    customer_id = _lock_customer(channel, inbound)
    conversation_id = _open_conversation(channel, customer_id)
    message, replayed = MESSAGES.insert({
        **_message_key(channel, inbound), "tenant_id": channel.tenant_id,
        "conversation_id": conversation_id, "direction": "inbound", "kind": "public", "text": inbound.text})
    if replayed:
        return _replay(channel, message)
    if service_timers.has_targets(channel.policies):
        service_timers.on_customer_message(channel.tenant_id, conversation_id, channel.id, channel.policies, utcnow())
    return Stored(channel.tenant_id, conversation_id, message.id, duplicate=False)
