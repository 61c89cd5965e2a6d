"""Business time (issue 36): when a target of N business minutes started at an instant falls due,
and how many business minutes lie between two instants, under a tenant's weekly hours and its one
calendar of holidays and make-up workdays. Pure functions; the caller passes the hours, the calendar
and the instants (no clock is read here).

Weekly hours have the shape and the overnight rule of members' shifts (`desk.duty`): an entry whose
end is not after its start crosses midnight and belongs to the day it starts, so that day alone
decides whether it runs: a holiday stops it, a make-up workday runs the hours of its `as_weekday`.
No weekly hours means every hour of every day but holidays. Times are Beijing wall-clock times
(Asia/Shanghai has no daylight saving), returned as UTC.
"""
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, timezone

from core.clock import BEIJING, to_beijing
from desk.duty import CalendarDay, shift_span, weekday_worked

SEARCH_DAYS = 3 * 366  # the furthest ahead a due time is looked for: no calendar closes a desk longer


def _open_spans(hours: list[dict], calendar: dict[date, CalendarDay], day: date) -> list[tuple[datetime, datetime]]:
    """The naive Beijing spans of business time that start on `day`, by start."""
    weekday = weekday_worked(day, calendar)
    if weekday is None:
        return []
    if not hours:
        midnight = datetime.combine(day, time())
        return [(midnight, midnight + timedelta(days=1))]
    return sorted(shift_span(entry, day) for entry in hours if weekday in entry["weekdays"])


def open_spans(hours: list[dict], calendar: dict[date, CalendarDay], since: datetime,
               days: int = SEARCH_DAYS) -> Iterator[tuple[datetime, datetime]]:
    """The spans of business time that end after the naive Beijing time `since`, merged where they
    touch or overlap, in order, for at most `days` days (the day before `since` included: its
    overnight hours may still run)."""
    current = None
    first = since.date() - timedelta(days=1)
    for offset in range(days + 1):
        for begins, ends in _open_spans(hours, calendar, first + timedelta(days=offset)):
            if current is not None and begins <= current[1]:
                current = (current[0], max(current[1], ends))
                continue
            if current is not None and current[1] > since:
                yield current
            current = (begins, ends)
    if current is not None and current[1] > since:
        yield current


def _local(instant: datetime) -> datetime:
    return to_beijing(instant).replace(tzinfo=None)


def _aware(local: datetime) -> datetime:
    return local.replace(tzinfo=BEIJING).astimezone(timezone.utc)


def due_after(start: datetime, minutes: int, hours: list[dict], calendar: dict[date, CalendarDay]) -> datetime:
    """The instant `minutes` business minutes after `start` (UTC): counting starts at `start` when
    it is inside business time, else at the next opening. ValueError when no business time comes
    within SEARCH_DAYS."""
    since, left = _local(start), timedelta(minutes=minutes)
    for begins, ends in open_spans(hours, calendar, since):
        begins = max(begins, since)
        if begins + left <= ends:
            return _aware(begins + left)
        left -= ends - begins
    raise ValueError("no business time within the search window")


def business_minutes(start: datetime, end: datetime, hours: list[dict], calendar: dict[date, CalendarDay]) -> float:
    """The business minutes between two instants (0 when `end` is not after `start`)."""
    since, until = _local(start), _local(end)
    if until <= since:
        return 0.0
    total = timedelta()
    days = (until.date() - since.date()).days + 1
    for begins, ends in open_spans(hours, calendar, since, days):
        if begins >= until:
            break
        total += min(ends, until) - max(begins, since)
    return total / timedelta(minutes=1)


def calendar_minutes(start: datetime, end: datetime) -> float:
    """The minutes between two instants, every one counted (a policy's `calendar` hours)."""
    return max((end - start) / timedelta(minutes=1), 0.0)
