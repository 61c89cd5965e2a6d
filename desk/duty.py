"""Whether a member is available at an instant, and if not why (issue 35): pure functions of the
member's shifts, leave, presence and load, the tenant's calendar and the instant, which the caller
passes in (no clock is read here). Times are Beijing wall-clock times (Asia/Shanghai, as every time
here); shifts, leave and calendar entries are the validated shapes of `desk.availability`.

Precedence, first that applies: leave, holiday, outside shift (a holiday unless a make-up workday,
whose shifts are those of its `as_weekday`; a member without shifts is on shift at all times),
offline, away, at capacity. A shift whose end is not after its start crosses midnight and belongs
to the day it starts: that day alone decides whether it runs (a holiday stops it, a make-up workday
gives it).
"""
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, timezone

from core.clock import to_beijing
from desk.models import Member

HEARTBEAT_SECONDS = 90  # a member with no workbench request for this long counts as offline
NEVER = datetime.min.replace(tzinfo=timezone.utc)  # offline since ever: never seen
DAY_MINUTES = 24 * 60
ON_LEAVE, HOLIDAY, OUTSIDE_SHIFT = "agent_on_leave", "holiday", "outside_shift"
OFFLINE, AWAY, AT_CAPACITY = "agent_offline", "agent_away", "agent_at_capacity"


@dataclass(frozen=True)
class CalendarDay:
    """A date of the tenant's calendar that is not ordinary: a holiday, or a make-up workday
    working the shifts of `as_weekday`."""

    kind: str
    as_weekday: int | None


@dataclass(frozen=True)
class Availability:
    """A member as seen at one instant: presence as it counts, the first reason they may not be
    assigned (None: available), and the load against the capacity that applies to them."""

    presence: str
    reason_code: str | None
    open_count: int
    capacity: int


def calendar_days(entries: Iterable[dict]) -> dict[date, CalendarDay]:
    """The tenant's calendar entries (`{date, kind, name, as_weekday}`) by date."""
    return {date.fromisoformat(entry["date"]): CalendarDay(entry["kind"], entry["as_weekday"]) for entry in entries}


def _minutes(clock: str) -> int:
    """Minutes after midnight of `HH:MM` (`24:00` is the day's end)."""
    return int(clock[:2]) * 60 + int(clock[3:])


def shift_span(shift: dict, start_day: date) -> tuple[datetime, datetime]:
    """The naive Beijing times a shift run from `start_day` covers: from its start, inclusive, to
    its end, exclusive, on the next day when the end is not after the start."""
    start, end = _minutes(shift["start"]), _minutes(shift["end"])
    begins = datetime.combine(start_day, time()) + timedelta(minutes=start)
    length = end - start if end > start else end + DAY_MINUTES - start
    return begins, begins + timedelta(minutes=length)


def _covers(shift: dict, start_day: date, local: datetime) -> bool:
    """Whether the shift, run from `start_day`, covers the naive Beijing time `local`."""
    begins, ends = shift_span(shift, start_day)
    return begins <= local < ends


def weekday_worked(day: date, calendar: dict[date, CalendarDay]) -> int | None:
    """The weekday whose shifts run on the Beijing date `day`: its own, a make-up workday's
    `as_weekday`, or None on a holiday."""
    special = calendar.get(day)
    if special is None:
        return day.isoweekday()
    return special.as_weekday if special.kind == "workday" else None


def on_leave(leave: list[dict], day: date) -> bool:
    """Whether a leave range (`from` to `to`, both included) holds the Beijing date `day`."""
    return any(date.fromisoformat(span["from"]) <= day <= date.fromisoformat(span["to"]) for span in leave)


def duty_reason(shifts: list[dict], leave: list[dict], calendar: dict[date, CalendarDay],
                instant: datetime) -> str | None:
    """None when the member is on duty at the instant, else the first of agent_on_leave, holiday,
    outside_shift that applies.

    A shift runs from a day (yesterday's may still cover the instant) unless that day is a holiday;
    on a make-up workday the shifts of its `as_weekday` run. Not covered, the reason is `holiday`
    when today is a holiday or a covering shift was stopped by one, else `outside_shift`.
    """
    local = to_beijing(instant).replace(tzinfo=None)
    today = local.date()
    if on_leave(leave, today):
        return ON_LEAVE
    holiday_today = today in calendar and calendar[today].kind == "holiday"
    if not shifts:
        return HOLIDAY if holiday_today else None
    stopped = False
    for start_day in (today - timedelta(days=1), today):
        special = calendar.get(start_day)
        weekday = special.as_weekday if special is not None and special.kind == "workday" else start_day.isoweekday()
        if any(weekday in shift["weekdays"] and _covers(shift, start_day, local) for shift in shifts):
            if special is None or special.kind == "workday":
                return None
            stopped = True
    return HOLIDAY if holiday_today or stopped else OUTSIDE_SHIFT


def presence_now(saved: str, last_seen_at: datetime | None, now: datetime) -> str:
    """The presence that counts at `now`: the saved choice, but offline with no workbench request
    in the last HEARTBEAT_SECONDS (at exactly that age it has expired) or none ever."""
    if last_seen_at is None or now - last_seen_at >= timedelta(seconds=HEARTBEAT_SECONDS):
        return "offline"
    return saved


def offline_since(saved: str, saved_since: datetime | None, last_seen_at: datetime | None,
                  now: datetime) -> datetime | None:
    """Since when the member counts as offline at `now` (None: they do not): since their heartbeat
    expired (HEARTBEAT_SECONDS after the last workbench request), or since they chose offline when
    that was earlier; a member never seen, or who chose offline before it was recorded when, since
    ever (`NEVER`)."""
    if last_seen_at is None:
        return NEVER
    expired = last_seen_at + timedelta(seconds=HEARTBEAT_SECONDS)
    if saved != "offline":
        return expired if expired <= now else None
    return min(expired, saved_since or NEVER)


def first_reason(duty: str | None, presence: str, open_count: int, capacity: int) -> str | None:
    """The first reason in the issue's order that applies (None: available): the duty reason, then
    agent_offline, agent_away, then agent_at_capacity once the open count reaches the capacity."""
    if duty is not None:
        return duty
    if presence != "online":
        return OFFLINE if presence == "offline" else AWAY
    return AT_CAPACITY if open_count >= capacity else None


def assess(member: Member, calendar: dict[date, CalendarDay], open_count: int, default_capacity: int,
           now: datetime) -> Availability:
    """The member as seen at `now`, with `open_count` open conversations
    assigned and their own capacity, else the policy's `default_capacity`."""
    presence = presence_now(member.presence, member.last_seen_at, now)
    capacity = member.capacity if member.capacity is not None else default_capacity
    reason = first_reason(duty_reason(member.shifts, member.leave, calendar, now), presence, open_count, capacity)
    return Availability(presence, reason, open_count, capacity)
