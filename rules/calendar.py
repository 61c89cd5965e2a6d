"""The weekly slot calendar of rules, in Beijing time (document 2, "Rule definition"): when each
slot starts, which slot is in effect at an instant, and the slot starts that follow or fall due."""
from datetime import datetime, timedelta, timezone
from itertools import islice
from typing import NamedTuple

from core.clock import BEIJING

NEXT_TIMES = 5


class SlotStart(NamedTuple):
    """One weekly start of a slot: minutes after Monday 00:00 Beijing time, and what it names."""

    minute: int
    weekday: int
    time: str
    assignee_ref: str


def slot_starts(slots: list[dict]) -> list[SlotStart]:
    """Every weekly start of the rule's slots, earliest in the week first."""
    return sorted(SlotStart((weekday - 1) * 1440 + int(slot["time"][:2]) * 60 + int(slot["time"][3:]),
                            weekday, slot["time"], slot["assignee_ref"])
                  for slot in slots for weekday in slot["weekdays"])


def week_start(instant: datetime) -> datetime:
    """Monday 00:00 Beijing time of the instant's Beijing week."""
    local = instant.astimezone(BEIJING)
    return (local - timedelta(days=local.isoweekday() - 1)).replace(hour=0, minute=0, second=0, microsecond=0)


def slot_in_effect(slots: list[dict], instant: datetime) -> SlotStart:
    """The latest slot start at or before the instant, wrapping to last week's final one."""
    starts = slot_starts(slots)
    elapsed = instant - week_start(instant)
    begun = [start for start in starts if timedelta(minutes=start.minute) <= elapsed]
    return begun[-1] if begun else starts[-1]


def _moments(slots: list[dict], since: datetime, weeks: int):
    """Every slot start from the week of `since` on, for `weeks` weeks, in order (Beijing time)."""
    first, starts = week_start(since), slot_starts(slots)
    return (first + timedelta(weeks=week, minutes=start.minute) for week in range(weeks) for start in starts)


def next_times(slots: list[dict], instant: datetime, count: int = NEXT_TIMES) -> list[str]:
    """The next `count` slot starts after the instant, as ISO 8601 in Beijing time (+08:00)."""
    later = (moment for moment in _moments(slots, instant, count + 1) if moment > instant)
    return [moment.isoformat() for moment in islice(later, count)]


def next_slot_start(slots: list[dict], now: datetime) -> datetime:
    """The first slot start after `now`, in UTC."""
    return next(moment for moment in _moments(slots, now, 2) if moment > now).astimezone(timezone.utc)


def due_slots(slots: list[dict], since: datetime, now: datetime) -> list[datetime]:
    """The slot starts in (since, now], in UTC, earliest first (`since` at most two weeks back)."""
    return [moment.astimezone(timezone.utc) for moment in _moments(slots, since, 3) if since < moment <= now]
