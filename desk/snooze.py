"""Snooze (issue 37): a conversation set to `pending` until a time in Beijing, by the desk's
compare-and-swap (`desk.conversations.change_by_hand`); the tick reopens it at that time and a
customer message earlier, each with an event in the thread and its service-level timers resumed."""
import uuid
from datetime import UTC, datetime, timedelta

from flask_babel import gettext as _
from sqlalchemy import select, update

from core.api import ApiError
from core.clock import beijing_to_utc, iso, to_beijing, utcnow
from core.db import db
from desk import service_timers
from desk.models import Conversation, ConversationEvent

PRESETS = ("hour", "tonight", "tomorrow", "monday")
AHEAD = timedelta(minutes=1)  # a snooze ends at least this far ahead
FURTHEST = timedelta(days=365)
FIELD_FORMAT = "%Y-%m-%dT%H:%M"  # the date-time field's value, Beijing time to the minute
WAKE_BATCH = 500


def preset_until(preset: str, now: datetime) -> datetime | None:
    """When a preset ends, from `now` (UTC): in an hour (to the minute), tonight 18:00, tomorrow
    09:00, next Monday 09:00 (Beijing time); None when it is not ahead any more (tonight after 17:59)
    or not a preset."""
    local = to_beijing(now).replace(second=0, microsecond=0)
    days, hour = {"tonight": (0, 18), "tomorrow": (1, 9), "monday": (7 - local.weekday(), 9)}.get(preset, (None, 0))
    if preset == "hour":
        at = local + timedelta(hours=1)
    elif days is None:
        return None
    else:
        at = (local + timedelta(days=days)).replace(hour=hour, minute=0)
    return at.astimezone(UTC) if at - now >= AHEAD else None


def presets(now: datetime) -> list[tuple[str, datetime]]:
    """The presets on offer at `now`, with when each ends."""
    return [(preset, at) for preset in PRESETS if (at := preset_until(preset, now)) is not None]


def read_until(text: str, now: datetime) -> datetime:
    """The date-time field's value (Beijing time, to the minute) as a UTC instant at least AHEAD and
    at most FURTHEST from `now`; else 400 invalid_snooze."""
    try:
        at = beijing_to_utc(datetime.strptime(text.strip(), FIELD_FORMAT))
    except (ValueError, OverflowError):  # not a time, or one before year 1 in UTC
        raise ApiError("invalid_snooze", 400) from None
    if not AHEAD <= at - now <= FURTHEST:
        raise ApiError("invalid_snooze", 400)
    return at


def snoozed_words(until: datetime, now: datetime) -> str:
    """What the list says of a snoozed conversation: "Snoozed until 18:00", with the date when it is
    not today in Beijing."""
    local = to_beijing(until)
    shown = local.strftime("%H:%M" if local.date() == to_beijing(now).date() else "%Y-%m-%d %H:%M")
    return _("Snoozed until %(time)s", time=shown)


def _wake_one(tenant_id: uuid.UUID, conversation_id: uuid.UUID, until: datetime, by: str, now: datetime) -> bool:
    """Reopen a conversation still snoozed until `until` (a compare-and-swap on both); its event and
    timers when it did."""
    woke = db.session.execute(update(Conversation).where(
        Conversation.id == conversation_id, Conversation.tenant_id == tenant_id, Conversation.status == "pending",
        Conversation.snoozed_until == until).values(status="open", snoozed_until=None)
        .execution_options(synchronize_session=False)).rowcount == 1
    if woke:
        db.session.add(ConversationEvent(tenant_id=tenant_id, conversation_id=conversation_id, actor_member_id=None,
                                         kind="wake", before=iso(until), after=by, created_at=now))
        service_timers.on_status(tenant_id, conversation_id, "open", None, now)
    return woke


def woken_by_customer(tenant_id: uuid.UUID, conversation_id: uuid.UUID, until: datetime, now: datetime) -> None:
    """A customer message arrived on a snoozed conversation: it opens now (the inbound flow's
    transaction). Flushes only."""
    _wake_one(tenant_id, conversation_id, until, "customer", now)
    db.session.flush()


def sweep() -> int:
    """Tick handler: reopen every conversation whose snooze has ended, in batches, each committed;
    how many. A conversation changed meanwhile (by hand, by a customer) is left as it is."""
    woken = 0
    while True:
        now = utcnow()
        due = db.session.execute(select(Conversation.tenant_id, Conversation.id, Conversation.snoozed_until)
                                 .where(Conversation.snoozed_until <= now, Conversation.status == "pending")
                                 .order_by(Conversation.snoozed_until).limit(WAKE_BATCH)).all()
        batch = sum(_wake_one(row.tenant_id, row.id, row.snoozed_until, "tick", now) for row in due)
        db.session.commit()
        woken += batch
        if len(due) < WAKE_BATCH or not batch:
            return woken
