"""Business time (issue 36): due times and business minutes under weekly hours and the tenant's
calendar, against a brute-force walk minute by minute with `desk.duty`'s own test of whether an
instant is inside hours (property-based), and the issue's Spring Festival example."""
from datetime import date, datetime, timedelta, timezone

from hypothesis import assume, given, settings, strategies as st

from core.clock import BEIJING
from desk.business_time import business_minutes, calendar_minutes, due_after
from desk.duty import CalendarDay, duty_reason

HOURS = [{"weekdays": [1, 2, 3, 4, 5], "start": "09:00", "end": "18:00"}]
SPRING_FESTIVAL_2026 = {date(2026, 2, 15) + timedelta(days=n): CalendarDay("holiday", None) for n in range(9)}
WINDOW = date(2026, 2, 10)  # the property tests' calendars and starts fall in the ten days from here


def beijing(*parts) -> datetime:
    return datetime(*parts, tzinfo=BEIJING)


def test_a_message_before_a_holiday_is_due_on_the_first_make_up_workday_after_it():
    calendar = {**SPRING_FESTIVAL_2026, date(2026, 2, 14): CalendarDay("workday", 5),
                date(2026, 2, 28): CalendarDay("workday", 1)}
    friday = beijing(2026, 2, 13, 17, 55)
    assert due_after(friday, 30, HOURS, calendar) == beijing(2026, 2, 14, 9, 25)  # the make-up Saturday
    assert due_after(friday, 30, HOURS, SPRING_FESTIVAL_2026) == beijing(2026, 2, 24, 9, 25)  # without it


def test_a_start_outside_hours_counts_from_the_next_opening_and_the_end_of_a_day_is_due_at_closing():
    assert due_after(beijing(2026, 3, 2, 7, 0), 30, HOURS, {}) == beijing(2026, 3, 2, 9, 30)
    assert due_after(beijing(2026, 3, 2, 17, 30), 30, HOURS, {}) == beijing(2026, 3, 2, 18, 0)
    assert due_after(beijing(2026, 3, 6, 17, 30), 31, HOURS, {}) == beijing(2026, 3, 9, 9, 1)  # Friday → Monday


def test_overnight_hours_belong_to_the_day_they_start():
    night = [{"weekdays": [5], "start": "22:00", "end": "06:00"}]
    saturday_early = beijing(2026, 3, 7, 5, 0)  # an hour of Friday's night left
    assert due_after(saturday_early, 120, night, {}) == beijing(2026, 3, 13, 23, 0)
    assert due_after(beijing(2026, 3, 7, 5, 0), 60, night, {}) == beijing(2026, 3, 7, 6, 0)
    stopped = {date(2026, 3, 6): CalendarDay("holiday", None)}  # the Friday it starts is a holiday
    assert due_after(beijing(2026, 3, 7, 5, 0), 60, night, stopped) == beijing(2026, 3, 13, 23, 0)


def test_without_weekly_hours_every_hour_but_holidays_counts():
    holiday = {date(2026, 3, 3): CalendarDay("holiday", None)}
    assert due_after(beijing(2026, 3, 2, 23, 0), 120, [], holiday) == beijing(2026, 3, 4, 1, 0)
    assert business_minutes(beijing(2026, 3, 2, 23, 0), beijing(2026, 3, 4, 1, 0), [], holiday) == 120


def test_calendar_minutes_count_every_minute_and_never_go_negative():
    assert calendar_minutes(beijing(2026, 3, 2, 9, 0), beijing(2026, 3, 3, 9, 30)) == 1470
    assert calendar_minutes(beijing(2026, 3, 3, 9, 0), beijing(2026, 3, 2, 9, 0)) == 0


# --- against a minute walk --------------------------------------------------------------------------

def _open(hours, calendar, instant: datetime) -> bool:
    return duty_reason(hours, [], calendar, instant) is None


def walked_due(start: datetime, minutes: int, hours, calendar, limit_days: int = 60) -> datetime | None:
    counted, at = 0, start
    while at < start + timedelta(days=limit_days):
        if _open(hours, calendar, at):
            counted += 1
            if counted == minutes:
                return at + timedelta(minutes=1)
        at += timedelta(minutes=1)
    return None


clock = st.integers(0, 95).map(lambda quarter: f"{quarter // 4:02d}:{quarter % 4 * 15:02d}")
entry = st.builds(lambda weekdays, start, end: {"weekdays": sorted(weekdays), "start": start,
                                                "end": "24:00" if end == "00:00" else end},
                  st.sets(st.integers(1, 7), min_size=1), clock, clock).filter(lambda e: e["start"] != e["end"])
day = st.integers(0, 9).map(lambda n: WINDOW + timedelta(days=n))
special = st.one_of(st.just(CalendarDay("holiday", None)), st.integers(1, 7).map(lambda w: CalendarDay("workday", w)))
calendars = st.dictionaries(day, special, max_size=4)
starts = st.integers(0, 10 * 24 * 60 - 1).map(
    lambda minute: (datetime(WINDOW.year, WINDOW.month, WINDOW.day, tzinfo=BEIJING) + timedelta(minutes=minute))
    .astimezone(timezone.utc))


@settings(max_examples=120, deadline=None)
@given(st.lists(entry, max_size=3), calendars, starts, st.integers(1, 240))
def test_due_times_match_a_minute_walk(hours, calendar, start, minutes):
    expected = walked_due(start, minutes, hours, calendar)
    assume(expected is not None)  # open at least `minutes` within 60 days
    assert due_after(start, minutes, hours, calendar) == expected


@settings(max_examples=120, deadline=None)
@given(st.lists(entry, max_size=3), calendars, starts, st.integers(0, 3 * 24 * 60))
def test_business_minutes_match_a_minute_walk(hours, calendar, start, length):
    end = start + timedelta(minutes=length)
    walked = sum(_open(hours, calendar, start + timedelta(minutes=n)) for n in range(length))
    assert business_minutes(start, end, hours, calendar) == walked
