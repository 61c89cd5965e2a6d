"""Channels and the signed inbound message flow."""
import hmac
import re
import secrets
import uuid
from dataclasses import dataclass

from sqlalchemy import select

from core.api import ApiError
from core.clock import utcnow
from core.crypto import decrypt, encrypt, hmac_sha256_hex
from core.db import db, insert_unless_present
from core.once import CreateOnce
from core.text import storable
from desk.models import Channel, Conversation, Customer, Message

TIMESTAMP_SKEW = 300
SIGNATURE_RE = re.compile(r"v1=([0-9a-f]{64})")
TIMESTAMP_RE = re.compile(r"[0-9]{1,12}")  # Unix seconds, ASCII digits only
INBOUND_BODY_LIMIT = 16 * 1024
TEXT_LIMIT = 4000
MESSAGES = CreateOnce(Message, ("channel_id", "external_id"))  # a replay answers with the original


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


def verify_signature(channel: Channel, timestamp: str | None, signature: str | None,
                     raw_body: bytes, now: float) -> None:
    """Check timestamp skew and the HMAC over `timestamp.body` in constant time."""
    if not timestamp or not TIMESTAMP_RE.fullmatch(timestamp) or abs(now - int(timestamp)) > TIMESTAMP_SKEW:
        raise ApiError("invalid_timestamp", 401)
    match = SIGNATURE_RE.fullmatch(signature or "")
    expected = hmac_sha256_hex(decrypt(channel.secret_encrypted), timestamp.encode() + b"." + raw_body)
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


def _lock_customer(channel: Channel, inbound: Inbound) -> Customer:
    """The customer with this external id, created if new, locked until the transaction ends.

    The lock serializes every message of one customer, so a conversation is opened once and a
    replay waiting behind its twin finds the twin's message. (SQLite serializes all writers.)
    """
    insert_unless_present(Customer, ("tenant_id", "external_id"), {
        "tenant_id": channel.tenant_id, "external_id": inbound.external_id, "name": inbound.name})
    return db.session.scalar(select(Customer).where(
        Customer.tenant_id == channel.tenant_id, Customer.external_id == inbound.external_id)
        .with_for_update())


def _refresh_contact(customer: Customer, inbound: Inbound) -> None:
    """Keep the contact data the channel sent."""
    customer.name = inbound.name
    if inbound.phone is not None:
        customer.phone = inbound.phone
    if inbound.email is not None:
        customer.email = inbound.email


def _open_conversation(channel: Channel, customer: Customer) -> Conversation:
    """The customer's conversation on this channel, reopened if resolved, or a new one."""
    conversation = db.session.scalar(select(Conversation).where(
        Conversation.customer_id == customer.id, Conversation.channel_id == channel.id)
        .order_by(Conversation.created_at.desc()).limit(1))
    if conversation is None:
        conversation = Conversation(tenant_id=channel.tenant_id, customer_id=customer.id,
                                    channel_id=channel.id, status="open")
        db.session.add(conversation)
    elif conversation.status == "resolved":
        conversation.status = "open"
    now = utcnow()
    conversation.updated_at = now
    conversation.last_activity_at = now
    db.session.flush()
    return conversation


def _message_key(channel: Channel, inbound: Inbound) -> dict:
    """The unique key of an inbound message: its channel and the channel's message id."""
    return {"channel_id": channel.id, "external_id": inbound.message_id}


def _replay(channel: Channel, message: Message) -> Stored:
    """What a replayed message_id answers: the original message, nothing changed."""
    return Stored(channel.tenant_id, message.conversation_id, message.id, duplicate=True)


def store_inbound(channel: Channel, inbound: Inbound) -> Stored:
    """Store a verified message once, under any concurrency.

    A replayed message_id is reported as a duplicate; the caller then rolls back, since a
    replay changes nothing (its customer may have been touched before the twin was found).
    """
    existing = MESSAGES.existing(_message_key(channel, inbound))
    if existing is not None:
        return _replay(channel, existing)
    customer = _lock_customer(channel, inbound)
    existing = MESSAGES.existing(_message_key(channel, inbound))  # the twin held the lock first
    if existing is not None:
        return _replay(channel, existing)
    _refresh_contact(customer, inbound)
    conversation = _open_conversation(channel, customer)
    message, replayed = MESSAGES.insert({
        **_message_key(channel, inbound), "tenant_id": channel.tenant_id,
        "conversation_id": conversation.id, "direction": "inbound", "kind": "public", "text": inbound.text})
    if replayed:  # the same message_id sent at once for another customer won
        return _replay(channel, message)
    return Stored(channel.tenant_id, conversation.id, message.id, duplicate=False)
