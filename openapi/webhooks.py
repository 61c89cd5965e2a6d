"""Signed `app.record.created` webhooks: an outbox row per record, delivered by RQ with retries.

An event is written in the same transaction as its record. After the commit the view enqueues
`jobs.tasks.deliver_webhook`; each run makes one attempt through the SSRF-safe client and raises
on failure so that RQ's `Retry` schedules the next one (30 s … 1,920 s; 8 attempts in all). A
delivery whose worker died is found by the tick's sweeper (`sweep`, a tick handler listed in
`jobs.wiring`) once its lease has passed and is enqueued again: delivery is at least once.
"""
import json
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from flask import current_app
from rq import Retry
from sqlalchemy import select, update

from core.clock import iso, utcnow
from core.config import require_shorter
from core.crypto import decrypt, hmac_sha256_hex
from core.db import db
from core.egress import EgressFailed, EgressRefused, post
from core.queue import WEBHOOKS, enqueue
from openapi.models import OpenApp, OpenRecord, WebhookAttempt, WebhookEvent

EVENT_TYPE = "app.record.created"
ATTEMPT_SECONDS = 10
JOB_SECONDS = 30  # RQ's bound on one attempt's job; below the sweeper's lease
SCHEDULE_SLACK = timedelta(seconds=2)
IN_FLIGHT = "in_flight"  # an attempt's error until it ends; the sweeper turns a stuck one "interrupted"


log = logging.getLogger(__name__)


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


def check_timing(cfg: Mapping) -> None:
    """An attempt ends before its job's timeout, which ends before the sweeper's lease."""
    require_shorter(("openapi.webhooks.ATTEMPT_SECONDS", ATTEMPT_SECONDS), ("openapi.webhooks.JOB_SECONDS", JOB_SECONDS),
                    "RQ would kill an attempt still waiting for the receiver")
    require_shorter(("openapi.webhooks.JOB_SECONDS", JOB_SECONDS),
                    ("WEBHOOK_LEASE_SECONDS", cfg["WEBHOOK_LEASE_SECONDS"]),
                    "the sweeper would deliver again an event whose attempt is still running")


def retry_intervals() -> list[int]:
    """Seconds between attempts (production: 30, 60, … 1,920; tests shorten them)."""
    return list(current_app.config["WEBHOOK_RETRY_INTERVALS"])


def enqueue_delivery(event_id: uuid.UUID, suffix: str = "") -> None:
    """Queue the event's delivery (after the commit); the job id collapses duplicates."""
    intervals = retry_intervals()
    enqueue("jobs.tasks.deliver_webhook", str(event_id), queue_name=WEBHOOKS, job_timeout=JOB_SECONDS,
            job_id=f"webhook-{event_id}{suffix}", retry=Retry(max=len(intervals), interval=intervals))


def signed_headers(secret: str, event_id: str, body: bytes, now: float) -> dict[str, str]:
    """The delivery headers: event id, a fresh 10-digit timestamp and its signature."""
    timestamp = str(int(now))
    return {"Content-Type": "application/json", "User-Agent": "CustomStudio-Webhooks/1",
            "X-Service-Event-Id": event_id, "X-Service-Timestamp": timestamp,
            "X-Service-Signature": "v1=" + hmac_sha256_hex(secret, timestamp.encode() + b"." + body)}


@dataclass(frozen=True)
class Claim:
    """One claimed attempt and what it needs, read before the claim commits (nothing reloads)."""

    attempt_id: uuid.UUID
    number: int
    event_id: uuid.UUID
    body: bytes
    url: str
    secret_encrypted: str


def _claim(event: WebhookEvent, app: OpenApp) -> Claim | None:
    """Start the next attempt (compare-and-swap on `attempts`); None when it is not this job's.

    Not before the event's next attempt is due (RQ schedules in whole seconds, hence the slack),
    and never past the last attempt: a stray retry chain cannot add attempts or hurry them.
    """
    if event.attempts > len(retry_intervals()):
        event.status, event.finished_at = "failed", utcnow()
        db.session.commit()
        return None
    claim = Claim(attempt_id=uuid.uuid4(), number=event.attempts + 1, event_id=event.id,
                  body=event.body.encode(), url=app.webhook_url, secret_encrypted=app.signing_secret_encrypted)
    claimed = db.session.execute(update(WebhookEvent).where(
        WebhookEvent.id == event.id, WebhookEvent.status == "pending",
        WebhookEvent.attempts == event.attempts,
        WebhookEvent.next_attempt_at <= utcnow() + SCHEDULE_SLACK).values(
        attempts=claim.number, next_attempt_at=utcnow() + _lease()))
    if claimed.rowcount != 1:
        db.session.rollback()
        return None
    db.session.add(WebhookAttempt(id=claim.attempt_id, tenant_id=event.tenant_id, event_id=event.id,
                                  number=claim.number, error=IN_FLIGHT))
    db.session.commit()
    return claim


def _send(claim: Claim) -> tuple[int | None, str | None]:
    """One HTTP attempt: (status code, None) or (None, failure reason)."""
    headers = signed_headers(decrypt(claim.secret_encrypted), str(claim.event_id), claim.body, time.time())
    try:
        answer = post(claim.url, claim.body, headers, timeout=ATTEMPT_SECONDS)
    except (EgressRefused, EgressFailed) as failure:
        return None, failure.reason
    except Exception as error:  # the attempt must still be recorded, or the event would loop
        log.error("webhook attempt of event %s failed inside: %s", claim.event_id, type(error).__name__)
        return None, "internal_error"
    return answer.status, None


def _finish(claim: Claim, status: int | None, error: str | None, elapsed: float) -> bool:
    """Record the attempt's outcome and the event's new state (two UPDATEs); True when delivered.

    A failed attempt changes only a pending event: one cancelled by a revocation while the
    attempt was in flight stays cancelled. A delivery is recorded even then: it was sent.
    """
    delivered = status is not None and 200 <= status < 300
    unsynced = {"synchronize_session": False}  # the rows are not reread in this session
    db.session.execute(update(WebhookAttempt).where(WebhookAttempt.id == claim.attempt_id).values(
        status_code=status, error=error, duration_ms=int(elapsed * 1000)), execution_options=unsynced)
    event = update(WebhookEvent).where(WebhookEvent.id == claim.event_id)
    intervals = retry_intervals()
    if delivered:
        event = event.values(status="delivered", finished_at=utcnow())
    elif claim.number > len(intervals):
        event = event.where(WebhookEvent.status == "pending").values(status="failed", finished_at=utcnow())
    else:
        event = event.where(WebhookEvent.status == "pending").values(
            next_attempt_at=utcnow() + timedelta(seconds=intervals[claim.number - 1]))
    db.session.execute(event, execution_options=unsynced)
    db.session.commit()
    return delivered


def deliver(event_id: str) -> str:
    """Make the next attempt of an event; raises AttemptFailed so RQ retries."""
    found = db.session.execute(select(WebhookEvent, OpenApp).join(OpenApp, OpenApp.id == WebhookEvent.app_id)
                               .where(WebhookEvent.id == uuid.UUID(event_id))).one_or_none()
    if found is None:
        return "missing"
    event, app = found
    if event.status != "pending":
        return event.status
    claim = _claim(event, app)
    if claim is None:
        return "not claimed"
    clock = time.monotonic()
    status, error = _send(claim)
    if _finish(claim, status, error, time.monotonic() - clock):
        return "delivered"
    if claim.number > len(retry_intervals()):
        return "failed"
    raise AttemptFailed(f"attempt {claim.number} of event {event_id}: {status or error}")


def sweep() -> int:
    """Tick handler: re-queue events whose attempt was interrupted or whose retry went missing."""
    stale = list(db.session.execute(select(WebhookEvent.id, WebhookEvent.attempts).where(
        WebhookEvent.status == "pending", WebhookEvent.next_attempt_at < utcnow() - _lease())))
    if not stale:
        return 0
    for event_id, attempts in stale:  # only the attempt the stale state belongs to
        db.session.execute(update(WebhookAttempt).where(
            WebhookAttempt.event_id == event_id, WebhookAttempt.number == attempts,
            WebhookAttempt.error == IN_FLIGHT).values(error="interrupted"))
    db.session.commit()
    for event_id, attempts in stale:
        enqueue_delivery(event_id, suffix=f"-sweep{attempts}")
    return len(stale)


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
