"""Service-level timers (issue 36): started, stopped, paused and resumed in the transaction of the
event that moves them, with their due times computed once per event and stored.

- A customer message starts the first-response timer (no member has replied yet) or a next-response
  timer (one has), unless a response timer is already running; and the resolution timer, or resumes
  it when the conversation was resolved (the message reopened it).
- A member's public reply ends the running response timers; private notes never stop a timer.
- `pending` pauses the resolution timer, `open` resumes it, `resolved` ends it and closes the
  running response timers (no reply was given: `closed`, not measured, unless already breached).

A timer takes the minutes and hours of the policy in force when it starts and keeps them: a policy
saved later applies from the next timer on. A breach is recorded once per timer, by a conditional
UPDATE, when the tick finds its due time passed (`sweep`, one indexed query) or when the timer ends
after its due time before the tick saw it. Services flush only.
"""
import uuid
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, exists, func, select, update

from core.clock import to_beijing, utcnow
from core.db import db
from core.metrics import SERVICE_LEVEL_BREACHES, TIMERS_ENDED
from desk.availability import calendar_of
from desk.business_time import business_minutes, due_after
from desk.duty import calendar_days
from desk.models import Message
from desk.service_level_models import TIMER_KINDS, ServiceLevelSettings, ServiceLevelTimer

RESPONSES = ("first_response", "next_response")
Timer = ServiceLevelTimer


def policy_for(policies: list[dict], channel_id: uuid.UUID) -> dict:
    """The policy of a channel: its override, else the default (the first)."""
    wanted = str(channel_id)
    return next((policy for policy in policies[1:] if policy["channel_id"] == wanted), policies[0])


def has_targets(policies: list[dict] | None) -> bool:
    """Whether any policy of the tenant sets a target (else no timer ever starts)."""
    return any(policy[f"{kind}_minutes"] for policy in policies or () for kind in TIMER_KINDS)


class _Hours:
    """The tenant's weekly hours and calendar, read on first need, for a timer's `business` or
    `calendar` hours."""

    def __init__(self, tenant_id: uuid.UUID):
        self.tenant_id, self._loaded = tenant_id, None

    def _business(self) -> tuple[list[dict], dict]:
        if self._loaded is None:
            settings = db.session.get(ServiceLevelSettings, self.tenant_id)
            self._loaded = (settings.hours if settings else [], calendar_days(calendar_of(self.tenant_id)))
        return self._loaded

    def due(self, start: datetime, minutes: float, hours: str) -> datetime | None:
        """The due time `minutes` counted minutes after `start`; None when the business hours and
        calendar give no business time within the search window."""
        if hours == "calendar":
            return start + timedelta(minutes=minutes)
        try:
            return due_after(start, minutes, *self._business())
        except ValueError:
            return None

    def counted(self, timer: Timer, now: datetime) -> float:
        """The minutes the timer has counted until `now`."""
        if timer.counted_since is None:
            return timer.used_minutes
        if timer.hours == "calendar":
            return timer.used_minutes + max((now - timer.counted_since) / timedelta(minutes=1), 0.0)
        return timer.used_minutes + business_minutes(timer.counted_since, now, *self._business())


def breach(now: datetime, *where: ColumnElement) -> int:
    """Record the breach of every running timer (among `where`) whose due time has passed: once, by
    a conditional UPDATE that racing ticks cannot both win; counted by kind. How many."""
    kinds = db.session.scalars(update(Timer).where(
        Timer.breached_at.is_(None), Timer.stopped_at.is_(None), Timer.due_at.is_not(None), Timer.due_at <= now, *where)
        .values(breached_at=Timer.due_at, outcome="breached").returning(Timer.kind)
        .execution_options(synchronize_session=False)).all()
    for kind in kinds:
        SERVICE_LEVEL_BREACHES.labels(kind).inc()
    return len(kinds)


def _start(ids: dict, kind: str, minutes: int, hours: str, clock: _Hours, now: datetime) -> None:
    db.session.add(Timer(
        **ids, kind=kind, hours=hours, target_minutes=minutes, started_at=now, started_on=to_beijing(now).date(),
        counted_since=now, used_minutes=0.0, due_at=clock.due(now, minutes, hours)))


def _timers(tenant_id: uuid.UUID, conversation_id: uuid.UUID, *where: ColumnElement) -> list[Timer]:
    return list(db.session.scalars(select(Timer).where(
        Timer.tenant_id == tenant_id, Timer.conversation_id == conversation_id, *where)
        .order_by(Timer.started_at, Timer.kind)))


def _end(timer: Timer, clock: _Hours, now: datetime, member_id: uuid.UUID | None, outcome: str) -> None:
    """End a timer: counted minutes, who ended it, met (or `outcome`) unless already breached."""
    timer.used_minutes = timer.elapsed_minutes = clock.counted(timer, now)
    timer.stopped_at, timer.member_id, timer.counted_since = now, member_id, None
    timer.outcome = "breached" if timer.breached_at is not None else outcome
    TIMERS_ENDED.labels(timer.kind, timer.outcome).inc()


def _run(timer: Timer, clock: _Hours, now: datetime, running: bool) -> None:
    """Resume a paused or ended resolution timer: counting from `now` with the minutes it has left
    (`running`), or held paused; a breach already recorded stays."""
    timer.stopped_at = timer.elapsed_minutes = timer.member_id = None
    timer.outcome = "breached" if timer.breached_at is not None else None
    timer.counted_since = now if running else None
    left = max(timer.target_minutes - timer.used_minutes, 0.0)
    timer.due_at = clock.due(now, left, timer.hours) if running else None


def _pause(timer: Timer, clock: _Hours, now: datetime) -> None:
    timer.used_minutes, timer.counted_since, timer.due_at = clock.counted(timer, now), None, None


def on_customer_message(tenant_id: uuid.UUID, conversation_id: uuid.UUID, channel_id: uuid.UUID,
                        policies: list[dict], now: datetime) -> None:
    """A public customer message arrived: start what it starts under the channel's policy, and resume
    the resolution timer if it had ended (the message reopened the resolved conversation)."""
    clock, policy = _Hours(tenant_id), policy_for(policies, channel_id)
    ids = {"tenant_id": tenant_id, "conversation_id": conversation_id, "channel_id": channel_id}
    timers = _timers(tenant_id, conversation_id)
    if not any(t.kind in RESPONSES and t.stopped_at is None for t in timers):
        replied = any(t.kind == "first_response" for t in timers) or db.session.scalar(select(exists().where(
            Message.tenant_id == tenant_id, Message.conversation_id == conversation_id,
            Message.direction == "outbound", Message.kind == "public", Message.author_member_id.is_not(None))))
        kind = "next_response" if replied else "first_response"
        if policy[f"{kind}_minutes"]:
            _start(ids, kind, policy[f"{kind}_minutes"], policy["hours"], clock, now)
    resolution = next((t for t in timers if t.kind == "resolution"), None)
    if resolution is None and policy["resolution_minutes"]:
        _start(ids, "resolution", policy["resolution_minutes"], policy["hours"], clock, now)
    elif resolution is not None and resolution.stopped_at is not None:
        _run(resolution, clock, now, running=True)
    db.session.flush()


def _fresh(timers: list[Timer], now: datetime) -> list[Timer]:
    """The timers, their breaches recorded first when due (reloaded if any was)."""
    if timers and breach(now, Timer.id.in_([t.id for t in timers])):
        for timer in timers:
            db.session.refresh(timer)
    return timers


def on_reply(tenant_id: uuid.UUID, conversation_id: uuid.UUID, member_id: uuid.UUID, now: datetime) -> None:
    """A member's public reply: the running response timers are met (or stay breached)."""
    running = _timers(tenant_id, conversation_id, Timer.kind.in_(RESPONSES), Timer.stopped_at.is_(None))
    clock = _Hours(tenant_id)
    for timer in _fresh(running, now):
        _end(timer, clock, now, member_id, "met")
    db.session.flush()


def on_status(tenant_id: uuid.UUID, conversation_id: uuid.UUID, status: str, member_id: uuid.UUID,
              now: datetime) -> None:
    """The conversation's status was changed by hand to `status` (open, pending or resolved)."""
    timers = _timers(tenant_id, conversation_id, (Timer.kind == "resolution") | Timer.stopped_at.is_(None))
    clock = _Hours(tenant_id)
    for timer in _fresh(timers, now):
        if timer.kind in RESPONSES:
            if status == "resolved":
                _end(timer, clock, now, None, "closed")
        elif status == "resolved":
            if timer.stopped_at is None:
                _end(timer, clock, now, member_id, "met")
        elif timer.stopped_at is not None:
            _run(timer, clock, now, running=status == "open")
        elif status == "pending" and timer.counted_since is not None:
            _pause(timer, clock, now)
        elif status == "open" and timer.counted_since is None:
            _run(timer, clock, now, running=True)
    db.session.flush()


def on_merged(tenant_id: uuid.UUID, conversation_id: uuid.UUID, now: datetime) -> None:
    """The conversation was merged into another (`desk.merge`): its running timers end `closed`;
    the target's own timers carry on."""
    clock = _Hours(tenant_id)
    for timer in _fresh(_timers(tenant_id, conversation_id, Timer.stopped_at.is_(None)), now):
        if timer.stopped_at is None:
            _end(timer, clock, now, None, "closed")
    db.session.flush()


def sweep() -> int:
    """Tick handler: record every breach whose due time has passed, across tenants, in one
    statement on the partial due-time index; how many."""
    recorded = breach(utcnow())
    db.session.commit()
    return recorded


def breached_since(tenant_id: uuid.UUID, since: datetime) -> int:
    """How many of the tenant's targets were breached at or after `since` (the team board's count)."""
    return db.session.scalar(select(func.count()).where(Timer.tenant_id == tenant_id, Timer.breached_at >= since))


def timers_of(tenant_id: uuid.UUID, conversation_id: uuid.UUID) -> list[Timer]:
    """The conversation's timers, oldest first (the thread shows them)."""
    return _timers(tenant_id, conversation_id)
