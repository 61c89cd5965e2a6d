"""Signed `app.record.created` webhooks: an outbox row per record, delivered by the one delivery
engine (`core.delivery`: RQ with retries, at least once, the sweeper for interrupted attempts)."""
import json
import uuid

from sqlalchemy import select

from core import delivery
from core.clock import iso, utcnow
from core.db import db
from openapi.models import OpenApp, OpenRecord, WebhookAttempt, WebhookEvent

EVENT_TYPE = "app.record.created"
OUTBOX = delivery.Outbox(
    name="webhook", job="jobs.tasks.deliver_webhook", events=WebhookEvent.__table__,
    attempts=WebhookAttempt.__table__, targets=OpenApp.__table__, target_key="app_id", url="webhook_url",
    secret="signing_secret_encrypted", user_agent="CustomStudio-Webhooks/1")


def add_record_event(app: OpenApp, record: OpenRecord) -> WebhookEvent:
    """Write the event of a new record (same transaction); its body never changes afterwards."""
    event_id = uuid.uuid4()
    body = {"id": str(event_id), "type": EVENT_TYPE, "api_version": "v1", "created_at": iso(utcnow()),
            "data": {"record_id": str(record.id)}}
    event = WebhookEvent(id=event_id, tenant_id=app.tenant_id, app_id=app.id, record_id=record.id,
                         type=EVENT_TYPE, body=json.dumps(body, separators=(",", ":")))
    db.session.add(event)
    return event


def enqueue_delivery(event_id: uuid.UUID) -> None:
    """Queue the event's delivery (after the commit)."""
    delivery.enqueue_delivery(OUTBOX, event_id)


def deliver(event_id: str) -> str:
    """Make the next attempt of an event (the job `jobs.tasks.deliver_webhook`)."""
    return delivery.deliver(OUTBOX, event_id)


def sweep() -> int:
    """Tick handler: re-queue webhook events whose attempt was interrupted or whose retry went missing."""
    return delivery.sweep(OUTBOX)


def recent_deliveries(app: OpenApp, limit: int = 100) -> list[tuple[WebhookEvent, list[WebhookAttempt]]]:
    """The application's latest events, newest first, each with its attempts in order."""
    events = list(db.session.scalars(select(WebhookEvent).where(
        WebhookEvent.app_id == app.id, WebhookEvent.tenant_id == app.tenant_id)
        .order_by(WebhookEvent.created_at.desc()).limit(limit)))
    attempts: dict[uuid.UUID, list[WebhookAttempt]] = {event.id: [] for event in events}
    for attempt in db.session.scalars(select(WebhookAttempt).where(
            WebhookAttempt.event_id.in_(list(attempts))).order_by(WebhookAttempt.number)):
        attempts[attempt.event_id].append(attempt)
    return [(event, attempts[event.id]) for event in events]
