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
from functools import cache
from types import SimpleNamespace

from flask import current_app
from rq import Retry
from sqlalchemy import bindparam, insert, literal, select, update

from core.clock import iso, utcnow
from core.config import require_shorter
from core.crypto import decrypt_cached, hmac_sha256_hex
from core.db import db
from core.egress import EgressFailed, EgressRefused, post
from core.queue import enqueue
from core.queue_names import WEBHOOKS
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
    require_shorter(("openapi.webhooks.ATTEMPT_SECONDS", ATTEMPT_SECONDS),
                    ("openapi.webhooks.JOB_SECONDS", JOB_SECONDS),
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


@cache
def _statements(dialect: str) -> SimpleNamespace:
    """Every statement of an attempt on this database, built once (Core, bind parameters named
    `p_…` so none is taken for a column): building them costs more than running them. On
    PostgreSQL the claim (with the in-flight attempt row) and the outcome are one statement each,
    through data-modifying CTEs; elsewhere they are steps in one transaction."""
    event, app, attempt = WebhookEvent.__table__, OpenApp.__table__, WebhookAttempt.__table__
    pending = update(event).where(event.c.id == bindparam("p_event"), event.c.status == "pending")
    record = update(attempt).where(attempt.c.id == bindparam("p_attempt")).values(
        status_code=bindparam("p_status"), error=bindparam("p_error"), duration_ms=bindparam("p_duration"))
    outcomes = {"delivered": update(event).where(event.c.id == bindparam("p_event")).values(
                    status="delivered", finished_at=bindparam("p_now")),
                "failed": pending.values(status="failed", finished_at=bindparam("p_now")),
                "retry": pending.values(next_attempt_at=bindparam("p_next"))}
    read = (select(event.c.tenant_id, event.c.status, event.c.attempts, event.c.body, app.c.webhook_url,
                   app.c.signing_secret_encrypted)
            .join_from(event, app, app.c.id == event.c.app_id).where(event.c.id == bindparam("p_event")))
    if dialect != "postgresql":
        return SimpleNamespace(read=read, claim=pending.where(
            event.c.attempts == bindparam("p_seen"), event.c.next_attempt_at <= bindparam("p_due"))
            .values(attempts=bindparam("p_number"), next_attempt_at=bindparam("p_lease")),
            begin=insert(attempt), failed=outcomes["failed"],
            outcomes={kind: (record, change) for kind, change in outcomes.items()})
    claimed = (pending.where(event.c.attempts <= bindparam("p_last"), event.c.next_attempt_at <= bindparam("p_due"))
               .values(attempts=event.c.attempts + 1, next_attempt_at=bindparam("p_lease"))
               .returning(event.c.id, event.c.tenant_id, event.c.app_id, event.c.attempts, event.c.body)
               .cte("claimed"))
    begun = insert(attempt).from_select(
        ["id", "tenant_id", "event_id", "number", "started_at", "error", "duration_ms"],
        select(bindparam("p_attempt", type_=attempt.c.id.type), claimed.c.tenant_id, claimed.c.id,
               claimed.c.attempts, bindparam("p_now", type_=attempt.c.started_at.type), literal(IN_FLIGHT),
               literal(0))).cte("begun")
    recorded = record.returning(attempt.c.id).cte("recorded")
    return SimpleNamespace(read=read, claim_in_one=select(
        claimed.c.attempts, claimed.c.body, app.c.webhook_url, app.c.signing_secret_encrypted)
        .join_from(claimed, app, app.c.id == claimed.c.app_id).add_cte(begun),
        failed=outcomes["failed"], outcomes={kind: (change.add_cte(recorded),) for kind, change in outcomes.items()})


def _claim(conn, event_id: uuid.UUID) -> Claim | str:
    """Start the next attempt (compare-and-swap on `attempts`) with its in-flight row, committed;
    else why not: `missing`, the event's status, or `not claimed`.

    Not before the event's next attempt is due (RQ schedules in whole seconds, hence the slack),
    and never past the last attempt: a stray retry chain cannot add attempts or hurry them.
    """
    sql, now, attempt_id = _statements(conn.dialect.name), utcnow(), uuid.uuid4()
    if hasattr(sql, "claim_in_one"):
        claimed = conn.execute(sql.claim_in_one, {
            "p_event": event_id, "p_last": len(retry_intervals()), "p_due": now + SCHEDULE_SLACK,
            "p_lease": now + _lease(), "p_attempt": attempt_id, "p_now": now}).one_or_none()
        if claimed is not None:
            conn.commit()
            return Claim(attempt_id=attempt_id, number=claimed.attempts, event_id=event_id,
                         body=claimed.body.encode(), url=claimed.webhook_url,
                         secret_encrypted=claimed.signing_secret_encrypted)
        conn.rollback()
    found = conn.execute(sql.read, {"p_event": event_id}).one_or_none()
    if found is None or found.status != "pending":
        return "missing" if found is None else found.status
    if found.attempts > len(retry_intervals()):
        conn.execute(sql.failed, {"p_event": event_id, "p_now": now})
        conn.commit()
        return "not claimed"
    if hasattr(sql, "claim_in_one"):
        return "not claimed"  # not due yet, or a twin claimed it
    claimed = conn.execute(sql.claim, {"p_event": event_id, "p_seen": found.attempts, "p_due": now + SCHEDULE_SLACK,
                                       "p_number": found.attempts + 1, "p_lease": now + _lease()})
    if claimed.rowcount != 1:
        conn.rollback()
        return "not claimed"
    conn.execute(sql.begin, {"id": attempt_id, "tenant_id": found.tenant_id, "event_id": event_id,
                             "number": found.attempts + 1, "error": IN_FLIGHT})
    conn.commit()
    return Claim(attempt_id=attempt_id, number=found.attempts + 1, event_id=event_id, body=found.body.encode(),
                 url=found.webhook_url, secret_encrypted=found.signing_secret_encrypted)


def _send(claim: Claim) -> tuple[int | None, str | None]:
    """One HTTP attempt: (status code, None) or (None, failure reason)."""
    headers = signed_headers(decrypt_cached(claim.secret_encrypted), str(claim.event_id), claim.body, time.time())
    try:
        answer = post(claim.url, claim.body, headers, timeout=ATTEMPT_SECONDS)
    except (EgressRefused, EgressFailed) as failure:
        return None, failure.reason
    except Exception as error:  # the attempt must still be recorded, or the event would loop
        log.error("webhook attempt of event %s failed inside: %s", claim.event_id, type(error).__name__)
        return None, "internal_error"
    return answer.status, None


def _finish(conn, claim: Claim, status: int | None, error: str | None, elapsed: float) -> bool:
    """Record the attempt's outcome and the event's new state; True when delivered.

    A failed attempt changes only a pending event: one cancelled by a revocation while the
    attempt was in flight stays cancelled. A delivery is recorded even then: it was sent.
    """
    now, intervals = utcnow(), retry_intervals()
    delivered = status is not None and 200 <= status < 300
    kind = "delivered" if delivered else "failed" if claim.number > len(intervals) else "retry"
    values = {"p_attempt": claim.attempt_id, "p_status": status, "p_error": error, "p_duration": int(elapsed * 1000),
              "p_event": claim.event_id, "p_now": now}
    if kind == "retry":
        values["p_next"] = now + timedelta(seconds=intervals[claim.number - 1])
    for statement in _statements(conn.dialect.name).outcomes[kind]:
        conn.execute(statement, values)
    conn.commit()
    return delivered


def _connection():
    """A pooled connection for one step of an attempt (the claim, the outcome); none is held while
    the receiver answers. On PostgreSQL each step is a single statement, atomic by itself, so it
    runs in autocommit: one round trip, without BEGIN and COMMIT."""
    conn = db.engine.connect()
    return conn.execution_options(isolation_level="AUTOCOMMIT") if conn.dialect.name == "postgresql" else conn


def deliver(event_id: str) -> str:
    """Make the next attempt of an event; raises AttemptFailed so RQ retries."""
    with _connection() as conn:
        claim = _claim(conn, uuid.UUID(event_id))
    if isinstance(claim, str):
        return claim
    clock = time.monotonic()
    status, error = _send(claim)
    with _connection() as conn:
        if _finish(conn, claim, status, error, time.monotonic() - clock):
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
