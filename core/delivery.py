"""The one delivery engine for signed outbound events: Open API webhooks and channel replies alike.

Each kind of event is an `Outbox`: an outbox table written in the same transaction as what it
announces, an attempts table, and the row holding the receiver's URL and signing secret. After the
commit the writer enqueues `Outbox.job`; each run makes one attempt through the SSRF-safe client
(`core.egress`) and raises on failure so that RQ's `Retry` schedules the next (production: 30 s …
1,920 s, 8 attempts in all). A delivery whose worker died is found by the tick's sweeper once its
lease has passed and is enqueued again: delivery is at least once. Every event is signed the same
way: `X-Service-Signature: v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>`.
"""
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import SimpleNamespace

from flask import current_app
from rq import Retry
from sqlalchemy import ForeignKey, String, Table, Text, bindparam, insert, literal, select, update
from sqlalchemy.orm import Mapped, mapped_column

from core.clock import utcnow
from core.config import require_shorter
from core.crypto import decrypt_cached, hmac_sha256_hex
from core.db import POSTGRESQL, db, prepared, step_connection
from core.egress import EgressFailed, EgressRefused, post
from core.metrics import DELIVERIES
from core.queue import enqueue
from core.queue_names import WEBHOOKS

ATTEMPT_SECONDS = 10
JOB_SECONDS = 30  # RQ's bound on one attempt's job; below the sweeper's lease
SCHEDULE_SLACK = timedelta(seconds=2)
IN_FLIGHT = "in_flight"  # an attempt's error until it ends; the sweeper turns a stuck one "interrupted"

log = logging.getLogger(__name__)


class AttemptFailed(Exception):
    """One delivery attempt did not get a 2xx answer; RQ schedules the next."""


class OutboxColumns:
    """The columns the engine reads and writes on an outbox table; each table adds its target key
    and what its events are about. status: pending (waiting for an attempt), delivered, failed
    (attempts exhausted), or a final state of the table's own (cancelled, retried)."""

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    body: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20), default="pending")
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    finished_at: Mapped[datetime | None]


class AttemptColumns:
    """The columns of an attempts table besides `event_id` (a foreign key to its outbox table):
    when, the answer's status or the failure, how long."""

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"))
    number: Mapped[int]
    started_at: Mapped[datetime] = mapped_column(default=utcnow)
    status_code: Mapped[int | None]
    error: Mapped[str | None] = mapped_column(String(40))
    duration_ms: Mapped[int] = mapped_column(default=0)


@dataclass(frozen=True)
class Outbox:
    """One kind of signed event. `events` has id, tenant_id, status (pending, delivered, failed, …),
    attempts, next_attempt_at, body, finished_at and the column `target_key` naming a row of
    `targets`, which holds the URL and the encrypted secret in `url` and `secret`; `attempts` has
    id, tenant_id, event_id, number, started_at, status_code, error, duration_ms."""

    name: str  # in job ids and logs
    job: str  # the entry point taking the event id
    events: Table
    attempts: Table
    targets: Table
    target_key: str
    url: str
    secret: str
    user_agent: str


def _lease() -> timedelta:
    """How long an attempt may be in flight before the sweeper treats it as interrupted."""
    return timedelta(seconds=current_app.config["WEBHOOK_LEASE_SECONDS"])


def check_timing(cfg: Mapping) -> None:
    """An attempt ends before its job's timeout, which ends before the sweeper's lease."""
    require_shorter(("core.delivery.ATTEMPT_SECONDS", ATTEMPT_SECONDS), ("core.delivery.JOB_SECONDS", JOB_SECONDS),
                    "RQ would kill an attempt still waiting for the receiver")
    require_shorter(("core.delivery.JOB_SECONDS", JOB_SECONDS),
                    ("WEBHOOK_LEASE_SECONDS", cfg["WEBHOOK_LEASE_SECONDS"]),
                    "the sweeper would deliver again an event whose attempt is still running")


def retry_intervals() -> list[int]:
    """Seconds between attempts (production: 30, 60, … 1,920; tests shorten them)."""
    return list(current_app.config["WEBHOOK_RETRY_INTERVALS"])


def enqueue_delivery(outbox: Outbox, event_id: uuid.UUID, suffix: str = "") -> None:
    """Queue the event's delivery (after the commit); the job id collapses duplicates."""
    intervals = retry_intervals()
    enqueue(outbox.job, str(event_id), queue_name=WEBHOOKS, job_timeout=JOB_SECONDS,
            job_id=f"{outbox.name}-{event_id}{suffix}", retry=Retry(max=len(intervals), interval=intervals))


def signed_headers(secret: str, event_id: str, body: bytes, now: float, user_agent: str) -> dict[str, str]:
    """The delivery headers: event id, a fresh 10-digit timestamp and its signature."""
    timestamp = str(int(now))
    return {"Content-Type": "application/json", "User-Agent": user_agent,
            "X-Service-Event-Id": event_id, "X-Service-Timestamp": timestamp,
            "X-Service-Signature": "v1=" + hmac_sha256_hex(secret, timestamp.encode() + b"." + body)}


@dataclass(frozen=True)
class Claim:
    """One claimed attempt and what it needs, read before the claim commits (nothing reloads)."""

    attempt_id: uuid.UUID
    number: int
    event_id: uuid.UUID
    body: bytes
    url: str | None
    secret_encrypted: str | None


@prepared
def _statements(outbox: Outbox, dialect: str) -> SimpleNamespace:
    """Every statement of an attempt on this database (`prepared`). The claim is a compare-and-swap
    on the event's `attempts` while it is `pending` and due, so two jobs of one event never both
    attempt; a failed outcome moves only a still pending event. On PostgreSQL the claim (with the
    in-flight attempt row) and the outcome are one statement each, through data-modifying CTEs;
    elsewhere they are steps in one transaction."""
    event, target, attempt = outbox.events, outbox.targets, outbox.attempts
    url, secret = target.c[outbox.url].label("url"), target.c[outbox.secret].label("secret")
    pending = update(event).where(event.c.id == bindparam("p_event"), event.c.status == "pending")
    record = update(attempt).where(attempt.c.id == bindparam("p_attempt")).values(
        status_code=bindparam("p_status"), error=bindparam("p_error"), duration_ms=bindparam("p_duration"))
    outcomes = {"delivered": update(event).where(event.c.id == bindparam("p_event")).values(
                    status="delivered", finished_at=bindparam("p_now")),
                "failed": pending.values(status="failed", finished_at=bindparam("p_now")),
                "retry": pending.values(next_attempt_at=bindparam("p_next"))}
    read = (select(event.c.tenant_id, event.c.status, event.c.attempts, event.c.body, url, secret)
            .join_from(event, target, target.c.id == event.c[outbox.target_key])
            .where(event.c.id == bindparam("p_event")))
    if dialect != POSTGRESQL:
        return SimpleNamespace(read=read, claim=pending.where(
            event.c.attempts == bindparam("p_seen"), event.c.next_attempt_at <= bindparam("p_due"))
            .values(attempts=bindparam("p_number"), next_attempt_at=bindparam("p_lease")),
            begin=insert(attempt), failed=outcomes["failed"],
            outcomes={kind: (record, change) for kind, change in outcomes.items()})
    claimed = (pending.where(event.c.attempts <= bindparam("p_last"), event.c.next_attempt_at <= bindparam("p_due"))
               .values(attempts=event.c.attempts + 1, next_attempt_at=bindparam("p_lease"))
               .returning(event.c.id, event.c.tenant_id, event.c[outbox.target_key], event.c.attempts, event.c.body)
               .cte("claimed"))
    begun = insert(attempt).from_select(
        ["id", "tenant_id", "event_id", "number", "started_at", "error", "duration_ms"],
        select(bindparam("p_attempt", type_=attempt.c.id.type), claimed.c.tenant_id, claimed.c.id,
               claimed.c.attempts, bindparam("p_now", type_=attempt.c.started_at.type), literal(IN_FLIGHT),
               literal(0))).cte("begun")
    recorded = record.returning(attempt.c.id).cte("recorded")
    return SimpleNamespace(read=read, claim_in_one=select(claimed.c.attempts, claimed.c.body, url, secret)
                           .join_from(claimed, target, target.c.id == claimed.c[outbox.target_key]).add_cte(begun),
                           failed=outcomes["failed"],
                           outcomes={kind: (change.add_cte(recorded),) for kind, change in outcomes.items()})


def _claim(outbox: Outbox, conn, event_id: uuid.UUID) -> Claim | str:
    """Start the next attempt (compare-and-swap on `attempts`) with its in-flight row, committed;
    else why not: `missing`, the event's status, or `not claimed`.

    Not before the event's next attempt is due (RQ schedules in whole seconds, hence the slack),
    and never past the last attempt: a stray retry chain cannot add attempts or hurry them.
    """
    dialect, now, attempt_id = conn.dialect.name, utcnow(), uuid.uuid4()
    sql = _statements(outbox, dialect)
    if dialect == POSTGRESQL:
        claimed = conn.execute(sql.claim_in_one, {
            "p_event": event_id, "p_last": len(retry_intervals()), "p_due": now + SCHEDULE_SLACK,
            "p_lease": now + _lease(), "p_attempt": attempt_id, "p_now": now}).one_or_none()
        if claimed is not None:
            conn.commit()
            return Claim(attempt_id=attempt_id, number=claimed.attempts, event_id=event_id,
                         body=claimed.body.encode(), url=claimed.url, secret_encrypted=claimed.secret)
        conn.rollback()
    found = conn.execute(sql.read, {"p_event": event_id}).one_or_none()
    if found is None or found.status != "pending":
        return "missing" if found is None else found.status
    if found.attempts > len(retry_intervals()):
        conn.execute(sql.failed, {"p_event": event_id, "p_now": now})
        conn.commit()
        return "not claimed"
    if dialect == POSTGRESQL:
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
                 url=found.url, secret_encrypted=found.secret)


def _send(outbox: Outbox, claim: Claim) -> tuple[int | None, str | None]:
    """One HTTP attempt: (status code, None) or (None, failure reason)."""
    if not claim.url or not claim.secret_encrypted:
        return None, "no_endpoint"  # the receiver's endpoint was removed after the event was written
    headers = signed_headers(decrypt_cached(claim.secret_encrypted), str(claim.event_id), claim.body, time.time(),
                             outbox.user_agent)
    try:
        answer = post(claim.url, claim.body, headers, timeout=ATTEMPT_SECONDS)
    except (EgressRefused, EgressFailed) as failure:
        return None, failure.reason
    except Exception as error:  # the attempt must still be recorded, or the event would loop
        log.error("%s attempt of event %s failed inside: %s", outbox.name, claim.event_id, type(error).__name__)
        return None, "internal_error"
    return answer.status, None


def _finish(outbox: Outbox, conn, claim: Claim, status: int | None, error: str | None, elapsed: float) -> bool:
    """Record the attempt's outcome and the event's new state; True when delivered.

    A failed attempt changes only a pending event: one cancelled while the attempt was in flight
    stays cancelled. A delivery is recorded even then: it was sent.
    """
    now, intervals = utcnow(), retry_intervals()
    delivered = status is not None and 200 <= status < 300
    kind = "delivered" if delivered else "failed" if claim.number > len(intervals) else "retry"
    values = {"p_attempt": claim.attempt_id, "p_status": status, "p_error": error, "p_duration": int(elapsed * 1000),
              "p_event": claim.event_id, "p_now": now}
    if kind == "retry":
        values["p_next"] = now + timedelta(seconds=intervals[claim.number - 1])
    for statement in _statements(outbox, conn.dialect.name).outcomes[kind]:
        conn.execute(statement, values)
    conn.commit()
    DELIVERIES.labels(outbox.name, kind, str(claim.number)).inc()
    return delivered


def deliver(outbox: Outbox, event_id: str) -> str:
    """Make the next attempt of an event; raises AttemptFailed so RQ retries."""
    with step_connection() as conn:
        claim = _claim(outbox, conn, uuid.UUID(event_id))
    if isinstance(claim, str):
        return claim
    clock = time.monotonic()
    status, error = _send(outbox, claim)
    with step_connection() as conn:
        if _finish(outbox, conn, claim, status, error, time.monotonic() - clock):
            return "delivered"
    if claim.number > len(retry_intervals()):
        return "failed"
    raise AttemptFailed(f"attempt {claim.number} of {outbox.name} event {event_id}: {status or error}")


def sweep(outbox: Outbox) -> int:
    """Re-queue the outbox's events whose attempt was interrupted or whose retry went missing."""
    event, attempt = outbox.events, outbox.attempts
    stale = list(db.session.execute(select(event.c.id, event.c.attempts).where(
        event.c.status == "pending", event.c.next_attempt_at < utcnow() - _lease())))
    if not stale:
        return 0
    for event_id, attempts in stale:  # only the attempt the stale state belongs to
        db.session.execute(update(attempt).where(
            attempt.c.event_id == event_id, attempt.c.number == attempts,
            attempt.c.error == IN_FLIGHT).values(error="interrupted"))
    db.session.commit()
    for event_id, attempts in stale:
        enqueue_delivery(outbox, event_id, suffix=f"-sweep{attempts}")
    return len(stale)
