"""Replies sent to a channel's outbound endpoint: an outbox row written with the reply, delivered by
the one delivery engine (`core.delivery`, the Open API webhooks' engine: same signature, retry
schedule and at-least-once promise). A channel without an endpoint only stores its replies;
private notes are never delivered."""
import json
import secrets
import uuid

from sqlalchemy import select, update

from core import delivery
from core.api import ApiError
from core.clock import iso, utcnow
from core.crypto import encrypt
from core.db import db, tenant_row
from core.egress import address_to_save
from desk.models import Channel, ChannelDelivery, ChannelDeliveryAttempt, Conversation, Customer, Message

REPLY_TYPE = "conversation.reply"
OUTBOX = delivery.Outbox(
    name="reply", job="jobs.tasks.deliver_reply", events=ChannelDelivery.__table__,
    attempts=ChannelDeliveryAttempt.__table__, targets=Channel.__table__, target_key="channel_id",
    url="outbound_url", secret="outbound_secret_encrypted", user_agent="CustomStudio-Replies/1")


def set_endpoint(tenant_id: uuid.UUID, channel_id: uuid.UUID, url: object) -> str:
    """Point the channel's replies at an HTTPS URL with a new signing secret (returned once, stored
    encrypted). 404 for another tenant's channel; 400 invalid_outbound_url for a URL egress refuses
    now, its host resolved (the read ends first: nothing is held while DNS answers). Flushes only."""
    channel = tenant_row(Channel, tenant_id, channel_id)
    address_to_save(url, "invalid_outbound_url")
    secret = secrets.token_hex(32)
    channel.outbound_url, channel.outbound_secret_encrypted = url, encrypt(secret)
    db.session.flush()
    return secret


def remove_endpoint(tenant_id: uuid.UUID, channel_id: uuid.UUID) -> None:
    """Replies of the channel are stored only from now on. Flushes only."""
    channel = tenant_row(Channel, tenant_id, channel_id)
    channel.outbound_url = channel.outbound_secret_encrypted = None
    db.session.flush()


def _body(delivery_id: uuid.UUID, message: Message, conversation_id: str, external_id: str | None) -> str:
    """The signed event of a reply; it never changes afterwards."""
    return json.dumps({"id": str(delivery_id), "type": REPLY_TYPE, "api_version": "v1", "created_at": iso(utcnow()),
                       "data": {"message_id": str(message.id), "conversation_id": conversation_id,
                                "customer_external_id": external_id, "text": message.text}},
                      ensure_ascii=False, separators=(",", ":"))


def add_delivery(conversation: Conversation, message: Message) -> uuid.UUID | None:
    """The outbox row of a public reply when its channel has an endpoint (same transaction as the
    reply); its id, or None when the reply is only stored."""
    if message.kind != "public" or message.direction != "outbound" or conversation.channel_id is None:
        return None
    external_id = db.session.scalar(select(Customer.external_id).where(Customer.id == conversation.customer_id))
    return _queued(conversation.tenant_id, conversation.channel_id, message, str(conversation.id), external_id)


def _queued(tenant_id: uuid.UUID, channel_id: uuid.UUID, message: Message, conversation_id: str,
            external_id: str | None) -> uuid.UUID | None:
    """A new outbox row for the reply to that customer on that channel, if it has an endpoint."""
    channel = db.session.execute(select(Channel.id, Channel.outbound_url).where(
        Channel.id == channel_id, Channel.tenant_id == tenant_id)).first()
    if channel is None or not channel.outbound_url:
        return None
    delivery_id = uuid.uuid4()
    db.session.add(ChannelDelivery(id=delivery_id, tenant_id=tenant_id, channel_id=channel.id, message_id=message.id,
                                   body=_body(delivery_id, message, conversation_id, external_id)))
    db.session.flush()
    return delivery_id


def latest_deliveries(tenant_id: uuid.UUID, message_ids: list[uuid.UUID]) -> dict[uuid.UUID, ChannelDelivery]:
    """Each message's newest delivery, in one statement."""
    latest: dict[uuid.UUID, ChannelDelivery] = {}
    if message_ids:
        for row in db.session.scalars(select(ChannelDelivery).where(
                ChannelDelivery.tenant_id == tenant_id, ChannelDelivery.message_id.in_(message_ids))
                .order_by(ChannelDelivery.created_at)):
            latest[row.message_id] = row
    return latest


def retry(tenant_id: uuid.UUID, message_id: uuid.UUID) -> uuid.UUID:
    """Send a reply whose delivery failed again, to the same customer on the same channel (also after
    a merge moved the message), as a new delivery with a fresh schedule; its id.
    The failed row turns `retried` by a conditional UPDATE, so two clicks send it once more, not
    twice. 404 for a foreign message; 409 delivery_not_failed unless the newest delivery failed."""
    message = tenant_row(Message, tenant_id, message_id)
    failed = latest_deliveries(tenant_id, [message.id]).get(message.id)
    if failed is None or failed.status != "failed":
        raise ApiError("delivery_not_failed", 409)
    moved = db.session.execute(update(ChannelDelivery).where(
        ChannelDelivery.id == failed.id, ChannelDelivery.status == "failed").values(status="retried")
        .execution_options(synchronize_session=False)).rowcount
    if moved != 1:
        raise ApiError("delivery_not_failed", 409)
    sent = json.loads(failed.body)["data"]  # to whom it went: a merge since may have moved the message
    again = _queued(tenant_id, failed.channel_id, message, sent["conversation_id"], sent["customer_external_id"])
    if again is None:
        raise ApiError("no_outbound_endpoint", 409)
    return again


def enqueue_delivery(delivery_id: uuid.UUID) -> None:
    """Queue the reply's delivery (after the commit)."""
    delivery.enqueue_delivery(OUTBOX, delivery_id)


def deliver(delivery_id: str) -> str:
    """Make the next attempt of a reply's delivery (the job `jobs.tasks.deliver_reply`)."""
    return delivery.deliver(OUTBOX, delivery_id)


def sweep() -> int:
    """Tick handler: re-queue reply deliveries whose attempt was interrupted or whose retry went missing."""
    return delivery.sweep(OUTBOX)
