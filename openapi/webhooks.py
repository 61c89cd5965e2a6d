"""Signed `app.record.created` webhooks: an outbox row per record, delivered by RQ with retries.

An event is written in the same transaction as its record. After the commit the view enqueues
`jobs.tasks.deliver_webhook`; each run makes one attempt through the SSRF-safe client and raises
on failure so that RQ's `Retry` schedules the next one (30 s … 1,920 s; 8 attempts in all). A
delivery whose worker died is found by the tick's sweeper once its lease has passed and is
enqueued again: delivery is at least once.
"""
import json
import logging
import time
import uuid
from datetime import timedelta

from flask import current_app
from rq import Retry
from sqlalchemy import select, update

from core.clock import iso, utcnow
from core.crypto import decrypt, hmac_sha256_hex
from core.db import db
from core.egress import EgressFailed, EgressRefused, post
from jobs.cron import register_tick
from jobs.queues import WEBHOOKS, enqueue
from openapi.models import OpenApp, OpenRecord, WebhookAttempt, WebhookEvent

log = logging.getLogger(__name__)

EVENT_TYPE = "app.record.created"
ATTEMPT_SECONDS = 10


register_tick("openapi.webhooks.sweep")


class AttemptFailed(Exception):
    """One delivery attempt did not get a 2xx answer; RQ schedules the next."""


def add_record_event(app: OpenApp, record: OpenRecord) -> WebhookEvent:
    """Write the event of a new record (same transaction); its body never changes afterwards."""
    event_id = uuid.uuid4()
    body = {"id": str(event_id), "type": EVENT_TYPE, "api_version": "v1", "created_at": iso(utcnow()),
            "data": {"record_id": str(record.id)}}
    event = WebhookEvent(id=event_id, tenant_id=app.tenant_id, app_id=app.id, record_id=record.id,
                         type=EVENT_TYPE, body=json.dumps(body, separators=(",", ":")))
    db.session.add(event)
    return event


def _lease() -> timedelta:
    """How long an attempt may be in flight before the sweeper treats it as interrupted."""
    return timedelta(seconds=current_app.config["WEBHOOK_LEASE_SECONDS"])


def retry_intervals() -> list[int]:
    """Seconds between attempts (production: 30, 60, … 1,920; tests shorten them)."""
    return list(current_app.config["WEBHOOK_RETRY_INTERVALS"])


def enqueue_delivery(event_id: uuid.UUID, suffix: str = "") -> None:
    """Queue the event's delivery (after the commit); the job id collapses duplicates."""
    intervals = retry_intervals()
    enqueue("jobs.tasks.deliver_webhook", str(event_id), queue_name=WEBHOOKS,
            job_id=f"webhook-{event_id}{suffix}", retry=Retry(max=len(intervals), interval=intervals))


def signed_headers(secret: str, event_id: str, body: bytes, now: float) -> dict[str, str]:
    """The delivery headers: event id, a fresh 10-digit timestamp and its signature."""
    timestamp = str(int(now))
    return {"Content-Type": "application/json", "User-Agent": "CustomStudio-Webhooks/1",
            "X-Service-Event-Id": event_id, "X-Service-Timestamp": timestamp,
            "X-Service-Signature": "v1=" + hmac_sha256_hex(secret, timestamp.encode() + b"." + body)}


def _claim(event: WebhookEvent) -> int | None:
    """Take the next attempt number (compare-and-swap on `attempts`); None when not ours."""
    number = event.attempts + 1
    claimed = db.session.execute(update(WebhookEvent).where(
        WebhookEvent.id == event.id, WebhookEvent.status == "pending",
        WebhookEvent.attempts == event.attempts).values(
        attempts=number, next_attempt_at=utcnow() + _lease()))
    db.session.commit()
    return number if claimed.rowcount == 1 else None


def _send(app: OpenApp, event: WebhookEvent) -> tuple[int | None, str | None]:
    """One HTTP attempt: (status code, None) or (None, failure reason)."""
    body = event.body.encode()
    headers = signed_headers(decrypt(app.signing_secret_encrypted), str(event.id), body, time.time())
    try:
        answer = post(app.webhook_url, body, headers, timeout=ATTEMPT_SECONDS)
    except (EgressRefused, EgressFailed) as failure:
        return None, failure.reason
    return answer.status, None


def _finish(event_id: uuid.UUID, number: int, status: int | None, error: str | None,
            started, elapsed: float) -> bool:
    """Record the attempt and the event's new state; True when delivered."""
    delivered = status is not None and 200 <= status < 300
    event = db.session.get(WebhookEvent, event_id)
    db.session.add(WebhookAttempt(tenant_id=event.tenant_id, event_id=event_id, number=number,
                                  started_at=started, status_code=status, error=error,
                                  duration_ms=int(elapsed * 1000)))
    intervals = retry_intervals()
    if delivered:
        event.status, event.finished_at = "delivered", utcnow()
    elif number > len(intervals):
        if event.status == "pending":
            event.status, event.finished_at = "failed", utcnow()
    elif event.status == "pending":
        event.next_attempt_at = utcnow() + timedelta(seconds=intervals[number - 1])
    db.session.commit()
    return delivered


def deliver(event_id: str) -> str:
    """Make the next attempt of an event; raises AttemptFailed so RQ retries."""
    event = db.session.get(WebhookEvent, uuid.UUID(event_id))
    if event is None or event.status != "pending":
        return event.status if event else "missing"
    app = db.session.get(OpenApp, event.app_id)
    number = _claim(event)
    if number is None:
        return "claimed elsewhere"
    started, clock = utcnow(), time.monotonic()
    status, error = _send(app, event)
    if _finish(event.id, number, status, error, started, time.monotonic() - clock):
        return "delivered"
    if number > len(retry_intervals()):
        return "failed"
    raise AttemptFailed(f"attempt {number} of event {event_id}: {status or error}")


def sweep() -> int:
    """Tick handler: enqueue events whose attempt was interrupted or whose retry went missing."""
    stale = list(db.session.execute(select(WebhookEvent.id, WebhookEvent.attempts).where(
        WebhookEvent.status == "pending", WebhookEvent.next_attempt_at < utcnow() - _lease())))
    for event_id, attempts in stale:
        enqueue_delivery(event_id, suffix=f"-sweep{attempts}")
    return len(stale)
