"""Availability's rules without the web (issue 35): shifts (overnight ones too), holidays, make-up
workdays and leave in Beijing time, the heartbeat, the order of the reasons, capacity, and the
validators and CSV import of the console's bodies with each error code and detail."""
from datetime import datetime, timedelta, timezone

import pytest

from core.api import ApiError
from desk.availability import (parse_calendar_csv, validate_calendar, validate_policy,
                               validate_schedule)
from desk.duty import HEARTBEAT_SECONDS, assess, calendar_days, duty_reason, first_reason, presence_now
from desk.models import Member

HOLIDAY_THURSDAY = "2026-10-01"  # 国庆节, a Thursday
MAKE_UP_SATURDAY = "2026-10-10"  # worked as a Friday
CALENDAR = calendar_days([
    {"date": HOLIDAY_THURSDAY, "kind": "holiday", "name": "国庆节", "as_weekday": None},
    {"date": MAKE_UP_SATURDAY, "kind": "workday", "name": "国庆节调休", "as_weekday": 5},
])
WEEKDAYS_9_TO_6 = [{"weekdays": [1, 2, 3, 4, 5], "start": "09:00", "end": "18:00"}]


def beijing(day: str, clock: str, second: int = 0) -> datetime:
    """The instant of a Beijing wall-clock time, in UTC (as the app holds instants)."""
    local = datetime.fromisoformat(f"{day}T{clock}:{second:02d}+08:00")
    return local.astimezone(timezone.utc)


def refusal(check, *args) -> tuple[str, str | None]:
    """(code, detail) of the ApiError a validator raises."""
    with pytest.raises(ApiError) as refused:
        check(*args)
    return refused.value.code, refused.value.detail


# --- shifts ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("day, clock, reason", [
    ("2026-10-05", "21:59", "outside_shift"),  # Monday, before the shift
    ("2026-10-05", "22:00", None),
    ("2026-10-05", "23:59", None),
    ("2026-10-06", "00:00", None),  # Tuesday: still Monday's shift
    ("2026-10-06", "05:59", None),
    ("2026-10-06", "06:00", "outside_shift"),  # the end is not included
    ("2026-10-05", "03:00", "outside_shift"),  # Monday morning: no Sunday shift ran into it
    ("2026-10-06", "22:00", "outside_shift"),  # no Tuesday shift
])
def test_an_overnight_shift_belongs_to_the_day_it_starts(day, clock, reason):
    monday_nights = [{"weekdays": [1], "start": "22:00", "end": "06:00"}]
    assert duty_reason(monday_nights, [], {}, beijing(day, clock)) == reason


def test_the_boundaries_are_beijing_time_whatever_zone_the_instant_has():
    monday_nights = [{"weekdays": [1], "start": "22:00", "end": "06:00"}]
    utc_midnight_beijing_eight = datetime(2026, 10, 5, 14, 0, tzinfo=timezone.utc)  # Monday 22:00 in Beijing
    assert duty_reason(monday_nights, [], {}, utc_midnight_beijing_eight) is None
    assert duty_reason(monday_nights, [], {}, utc_midnight_beijing_eight - timedelta(seconds=1)) == "outside_shift"


def test_a_shift_may_end_at_midnight_and_one_that_ends_at_its_start_lasts_a_day():
    until_midnight = [{"weekdays": [1], "start": "18:00", "end": "24:00"}]
    assert duty_reason(until_midnight, [], {}, beijing("2026-10-05", "23:59", 59)) is None
    assert duty_reason(until_midnight, [], {}, beijing("2026-10-06", "00:00")) == "outside_shift"
    whole_day = [{"weekdays": [1], "start": "09:00", "end": "09:00"}]
    assert duty_reason(whole_day, [], {}, beijing("2026-10-06", "08:59")) is None
    assert duty_reason(whole_day, [], {}, beijing("2026-10-06", "09:00")) == "outside_shift"


def test_a_member_without_shifts_is_on_shift_at_all_times():
    for clock in ("00:00", "03:30", "23:59"):
        assert duty_reason([], [], {}, beijing("2026-10-04", clock)) is None  # a Sunday


# --- holidays and make-up workdays ------------------------------------------------------------------

@pytest.mark.parametrize("day, clock, reason", [
    ("2026-09-30", "10:00", None),  # Wednesday
    (HOLIDAY_THURSDAY, "10:00", "holiday"),  # Thursday, inside the usual shift
    (HOLIDAY_THURSDAY, "20:00", "holiday"),  # also outside it: holiday comes first
    ("2026-10-02", "10:00", None),  # Friday
    ("2026-10-02", "20:00", "outside_shift"),
])
def test_a_holiday_on_a_weekday_stops_its_shifts(day, clock, reason):
    assert duty_reason(WEEKDAYS_9_TO_6, [], CALENDAR, beijing(day, clock)) == reason


def test_a_member_without_shifts_is_off_on_a_holiday():
    assert duty_reason([], [], CALENDAR, beijing(HOLIDAY_THURSDAY, "10:00")) == "holiday"
    assert duty_reason([], [], CALENDAR, beijing(MAKE_UP_SATURDAY, "10:00")) is None


@pytest.mark.parametrize("day, clock, reason", [
    ("2026-09-30", "23:00", None),  # Wednesday night
    (HOLIDAY_THURSDAY, "03:00", None),  # Wednesday's shift runs into the holiday: its start day decides
    (HOLIDAY_THURSDAY, "22:00", "holiday"),  # Thursday's own shift does not run
    ("2026-10-02", "03:00", "holiday"),  # the rest of it, on an ordinary Friday: stopped by the holiday
    ("2026-10-02", "22:00", None),  # Friday's own shift
])
def test_an_overnight_shift_runs_or_not_by_the_day_it_starts(day, clock, reason):
    nights = [{"weekdays": [1, 2, 3, 4, 5], "start": "22:00", "end": "06:00"}]
    assert duty_reason(nights, [], CALENDAR, beijing(day, clock)) == reason


@pytest.mark.parametrize("day, clock, reason", [
    (MAKE_UP_SATURDAY, "10:00", "outside_shift"),  # Friday's shift is in the afternoon
    (MAKE_UP_SATURDAY, "13:00", None),
    (MAKE_UP_SATURDAY, "19:59", None),
    (MAKE_UP_SATURDAY, "20:00", "outside_shift"),
    ("2026-10-17", "13:00", "outside_shift"),  # an ordinary Saturday
])
def test_a_make_up_saturday_works_the_shifts_of_its_weekday(day, clock, reason):
    friday_afternoons = [{"weekdays": [5], "start": "13:00", "end": "20:00"},
                         {"weekdays": [6], "start": "08:00", "end": "11:00"}]  # Saturday's own shift does not run
    assert duty_reason(friday_afternoons, [], CALENDAR, beijing(day, clock)) == reason


def test_a_make_up_days_overnight_shift_runs_into_the_next_day():
    friday_nights = [{"weekdays": [5], "start": "22:00", "end": "06:00"}]
    assert duty_reason(friday_nights, [], CALENDAR, beijing("2026-10-11", "03:00")) is None  # Sunday after it
    assert duty_reason(friday_nights, [], CALENDAR, beijing("2026-10-18", "03:00")) == "outside_shift"


# --- leave ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("day, clock, reason", [
    ("2026-01-29", "23:59", None),
    ("2026-01-30", "00:00", "agent_on_leave"),
    ("2026-01-31", "12:00", "agent_on_leave"),
    ("2026-02-01", "12:00", "agent_on_leave"),
    ("2026-02-02", "23:59", "agent_on_leave"),  # the last day is included
    ("2026-02-03", "00:00", None),
])
def test_leave_across_a_month_end_includes_both_dates(day, clock, reason):
    leave = [{"from": "2026-01-30", "to": "2026-02-02"}]
    assert duty_reason([], leave, {}, beijing(day, clock)) == reason


def test_leave_counts_by_the_beijing_date():
    leave = [{"from": "2026-01-30", "to": "2026-01-30"}]
    assert duty_reason([], leave, {}, datetime(2026, 1, 29, 16, 0, tzinfo=timezone.utc)) == "agent_on_leave"
    assert duty_reason([], leave, {}, datetime(2026, 1, 30, 16, 0, tzinfo=timezone.utc)) is None


# --- precedence -------------------------------------------------------------------------------------

def test_leave_comes_before_a_holiday_and_a_holiday_before_being_outside_a_shift():
    leave = [{"from": HOLIDAY_THURSDAY, "to": HOLIDAY_THURSDAY}]
    assert duty_reason(WEEKDAYS_9_TO_6, leave, CALENDAR, beijing(HOLIDAY_THURSDAY, "20:00")) == "agent_on_leave"
    assert duty_reason(WEEKDAYS_9_TO_6, [], CALENDAR, beijing(HOLIDAY_THURSDAY, "20:00")) == "holiday"


@pytest.mark.parametrize("duty, presence, open_count, reason", [
    ("agent_on_leave", "offline", 8, "agent_on_leave"),
    ("holiday", "away", 8, "holiday"),
    ("outside_shift", "offline", 8, "outside_shift"),
    (None, "offline", 8, "agent_offline"),
    (None, "away", 8, "agent_away"),
    (None, "online", 8, "agent_at_capacity"),
    (None, "online", 9, "agent_at_capacity"),
    (None, "online", 7, None),
])
def test_the_first_reason_in_the_issues_order_is_given(duty, presence, open_count, reason):
    assert first_reason(duty, presence, open_count, 8) == reason


# --- presence and capacity --------------------------------------------------------------------------

def test_the_heartbeat_expires_at_exactly_ninety_seconds():
    seen = datetime(2026, 10, 5, 2, 0, tzinfo=timezone.utc)
    assert HEARTBEAT_SECONDS == 90
    assert presence_now("online", seen, seen) == "online"
    assert presence_now("online", seen, seen + timedelta(seconds=90) - timedelta(microseconds=1)) == "online"
    assert presence_now("online", seen, seen + timedelta(seconds=90)) == "offline"
    assert presence_now("away", seen, seen + timedelta(seconds=30)) == "away"
    assert presence_now("online", None, seen) == "offline"  # never opened the workbench


def member(**columns) -> Member:
    """A member as availability reads one (not stored)."""
    return Member(**{"presence": "online", "last_seen_at": None, "capacity": None, "shifts": [], "leave": [],
                     **columns})


def test_capacity_is_the_members_own_else_the_policy_default():
    now = beijing("2026-10-05", "10:00")
    own = member(capacity=3, last_seen_at=now)
    assert assess(own, {}, 2, 8, now).reason_code is None
    assert assess(own, {}, 3, 8, now).reason_code == "agent_at_capacity"
    default = member(last_seen_at=now)
    assert assess(default, {}, 7, 8, now).reason_code is None
    seen = assess(default, {}, 8, 8, now)
    assert (seen.reason_code, seen.capacity, seen.open_count, seen.presence) == ("agent_at_capacity", 8, 8, "online")


def test_assess_reads_presence_as_it_counts_at_the_instant():
    now = beijing("2026-10-05", "10:00")
    stale = member(last_seen_at=now - timedelta(seconds=HEARTBEAT_SECONDS))
    assert assess(stale, {}, 0, 8, now).presence == "offline"
    assert assess(stale, {}, 0, 8, now).reason_code == "agent_offline"
    away = member(presence="away", last_seen_at=now)
    assert assess(away, {}, 0, 8, now).reason_code == "agent_away"


# --- the policy's validator -------------------------------------------------------------------------

POLICY = {"enabled": True, "default_capacity": 8, "fallback_after_minutes": 5, "no_reply_minutes": None,
          "offline_policy": "keep", "release_after_minutes": None}


def test_a_policy_without_the_optional_minutes_has_them_null():
    given = {key: POLICY[key] for key in ("enabled", "default_capacity", "fallback_after_minutes", "offline_policy")}
    assert validate_policy(given) == POLICY
    assert validate_policy({**POLICY, "fallback_after_minutes": None})["fallback_after_minutes"] is None
    assert validate_policy({**POLICY, "fallback_after_minutes": 0})["fallback_after_minutes"] == 0
    releasing = validate_policy({**POLICY, "offline_policy": "release_after", "release_after_minutes": 1440})
    assert releasing["release_after_minutes"] == 1440


@pytest.mark.parametrize("change, code, detail", [
    ({"colour": "blue"}, "invalid_json", "policy.colour"),
    ({"enabled": "yes"}, "invalid_policy", "policy.enabled"),
    ({"default_capacity": 0}, "invalid_policy", "policy.default_capacity"),
    ({"default_capacity": 101}, "invalid_policy", "policy.default_capacity"),
    ({"default_capacity": 2.5}, "invalid_policy", "policy.default_capacity"),
    ({"default_capacity": True}, "invalid_policy", "policy.default_capacity"),
    ({"fallback_after_minutes": -1}, "invalid_policy", "policy.fallback_after_minutes"),
    ({"fallback_after_minutes": 1441}, "invalid_policy", "policy.fallback_after_minutes"),
    ({"no_reply_minutes": 0}, "invalid_policy", "policy.no_reply_minutes"),
    ({"no_reply_minutes": 1441}, "invalid_policy", "policy.no_reply_minutes"),
    ({"offline_policy": "sometimes"}, "invalid_policy", "policy.offline_policy"),
    ({"offline_policy": "release_after"}, "invalid_policy", "policy.release_after_minutes"),
    ({"offline_policy": "release_after", "release_after_minutes": 0}, "invalid_policy",
     "policy.release_after_minutes"),
    ({"release_after_minutes": 30}, "invalid_policy", "policy.release_after_minutes"),
    ({"offline_policy": "release_on_customer_reply", "release_after_minutes": 30}, "invalid_policy",
     "policy.release_after_minutes"),
])
def test_a_bad_policy_value_is_refused_at_its_path(change, code, detail):
    assert refusal(validate_policy, {**POLICY, **change}) == (code, detail)


def test_a_policy_that_is_no_object_or_lacks_a_value_is_invalid_policy():
    assert refusal(validate_policy, [POLICY]) == ("invalid_policy", "policy")
    assert refusal(validate_policy, {k: v for k, v in POLICY.items() if k != "enabled"}) == \
        ("invalid_policy", "policy.enabled")


# --- a member's schedule ----------------------------------------------------------------------------

def test_a_schedule_at_its_limits_is_kept_as_sent():
    shifts = [{"weekdays": [7, 1], "start": "00:00", "end": "24:00"}] * 14
    leave = [{"from": "2026-01-30", "to": "2026-02-02"}] * 50
    assert validate_schedule(100, shifts, leave) == (100, shifts, leave)
    assert validate_schedule(None, [], []) == (None, [], [])


SHIFT = {"weekdays": [1], "start": "09:00", "end": "18:00"}


@pytest.mark.parametrize("capacity, shifts, leave, code, detail", [
    (0, [], [], "invalid_schedule", "capacity"),
    (101, [], [], "invalid_schedule", "capacity"),
    ("5", [], [], "invalid_schedule", "capacity"),
    (None, {}, [], "invalid_schedule", "shifts"),
    (None, [SHIFT] * 15, [], "invalid_schedule", "shifts"),
    (None, [{**SHIFT, "weekdays": []}], [], "invalid_schedule", "shifts[0].weekdays"),
    (None, [SHIFT, {**SHIFT, "weekdays": [8]}], [], "invalid_schedule", "shifts[1].weekdays[0]"),
    (None, [{**SHIFT, "weekdays": [0]}], [], "invalid_schedule", "shifts[0].weekdays[0]"),
    (None, [{**SHIFT, "weekdays": [3, 3]}], [], "invalid_schedule", "shifts[0].weekdays[1]"),
    (None, [{**SHIFT, "start": "24:00"}], [], "invalid_schedule", "shifts[0].start"),
    (None, [{**SHIFT, "start": "9:00"}], [], "invalid_schedule", "shifts[0].start"),
    (None, [{**SHIFT, "end": "24:01"}], [], "invalid_schedule", "shifts[0].end"),
    (None, [{**SHIFT, "end": 1800}], [], "invalid_schedule", "shifts[0].end"),
    (None, [{"weekdays": [1], "start": "09:00"}], [], "invalid_schedule", "shifts[0].end"),
    (None, [{**SHIFT, "note": "x"}], [], "invalid_json", "shifts[0].note"),
    (None, [], {}, "invalid_schedule", "leave"),
    (None, [], [{"from": "2026-01-30", "to": "2026-02-02"}] * 51, "invalid_schedule", "leave"),
    (None, [], [{"from": "2026-02-03", "to": "2026-02-02"}], "invalid_schedule", "leave[0].to"),
    (None, [], [{"from": "2026-02-30", "to": "2026-03-02"}], "invalid_schedule", "leave[0].from"),
    (None, [], [{"from": "2026-2-3", "to": "2026-03-02"}], "invalid_schedule", "leave[0].from"),
    (None, [], [{"from": "2026-02-03"}], "invalid_schedule", "leave[0].to"),
    (None, [], [{"from": "2026-02-03", "to": "2026-02-03", "why": "x"}], "invalid_json", "leave[0].why"),
])
def test_a_bad_schedule_is_refused_at_its_path(capacity, shifts, leave, code, detail):
    assert refusal(validate_schedule, capacity, shifts, leave) == (code, detail)


# --- the calendar -----------------------------------------------------------------------------------

HOLIDAY = {"date": HOLIDAY_THURSDAY, "kind": "holiday", "name": "国庆节"}
WORKDAY = {"date": MAKE_UP_SATURDAY, "kind": "workday", "name": "国庆节调休", "as_weekday": 5}


def test_a_calendar_is_normalized_with_as_weekday_null_for_holidays():
    entries = validate_calendar([HOLIDAY, {**WORKDAY, "name": "  国庆节调休 "}])
    assert entries == [{**HOLIDAY, "as_weekday": None}, WORKDAY]
    assert validate_calendar([{**HOLIDAY, "as_weekday": None}, {**HOLIDAY, "date": "2026-10-02",
                                                                  "name": "x" * 60}])[1]["name"] == "x" * 60


@pytest.mark.parametrize("calendar, code, detail", [
    ({}, "invalid_calendar", "calendar"),
    ([{**HOLIDAY, "date": f"2026-{1 + n // 28:02d}-{1 + n % 28:02d}"} for n in range(201)], "invalid_calendar",
     "calendar"),
    ([HOLIDAY, WORKDAY, {**HOLIDAY, "name": "again"}], "invalid_calendar", "calendar[2].date"),
    ([{**HOLIDAY, "date": "2026-13-01"}], "invalid_calendar", "calendar[0].date"),
    ([{**HOLIDAY, "kind": "vacation"}], "invalid_calendar", "calendar[0].kind"),
    ([{**HOLIDAY, "name": "   "}], "invalid_calendar", "calendar[0].name"),
    ([{**HOLIDAY, "name": "x" * 61}], "invalid_calendar", "calendar[0].name"),
    ([{**HOLIDAY, "name": "a\nb"}], "invalid_calendar", "calendar[0].name"),
    ([{"date": HOLIDAY_THURSDAY, "kind": "holiday"}], "invalid_calendar", "calendar[0].name"),
    ([{**WORKDAY, "as_weekday": None}], "invalid_calendar", "calendar[0].as_weekday"),
    ([{k: v for k, v in WORKDAY.items() if k != "as_weekday"}], "invalid_calendar", "calendar[0].as_weekday"),
    ([{**WORKDAY, "as_weekday": 8}], "invalid_calendar", "calendar[0].as_weekday"),
    ([{**HOLIDAY, "as_weekday": 4}], "invalid_calendar", "calendar[0].as_weekday"),
    ([{**HOLIDAY, "note": "x"}], "invalid_json", "calendar[0].note"),
])
def test_a_bad_calendar_is_refused_at_its_path(calendar, code, detail):
    assert refusal(validate_calendar, calendar) == (code, detail)


CSV_TEXT = ("date,kind,name,as_weekday\r\n"
            "2026-10-01,holiday,国庆节,\r\n"
            '2026-10-10,workday,"国庆节调休, 周六",5\r\n'
            "\r\n")


@pytest.mark.parametrize("prefix", [b"", b"\xef\xbb\xbf"], ids=["without BOM", "with BOM"])
def test_the_csv_import_reads_utf8_with_or_without_a_byte_order_mark(prefix):
    assert parse_calendar_csv(prefix + CSV_TEXT.encode()) == [
        {**HOLIDAY, "as_weekday": None}, {**WORKDAY, "name": "国庆节调休, 周六"}]


@pytest.mark.parametrize("data, detail", [
    (b"", "line 1"),
    (b"date,kind,name\n2026-10-01,holiday,x\n", "line 1"),
    ("\n".join(CSV_TEXT.splitlines()[:3] + ["2026-10-11,workday,调休,"]).encode(), "line 4.as_weekday"),
    ("\n".join(CSV_TEXT.splitlines()[:3] + ["2026-10-11,workday,调休,七"]).encode(), "line 4.as_weekday"),
    ("\n".join(CSV_TEXT.splitlines()[:3] + ["2026-10-01,holiday,again,"]).encode(), "line 4.date"),
    ("\n".join(CSV_TEXT.splitlines()[:2] + ["2026-10-02,holiday"]).encode(), "line 3"),
    ("\n".join(CSV_TEXT.splitlines()[:2]).encode() + "\n2026-10-02,holiday,国庆".encode("gb18030") + b",\n",
     "line 3"),
    (("date,kind,name,as_weekday\n" + "".join(f"2026-{1 + n // 28:02d}-{1 + n % 28:02d},holiday,h,\n"
                                              for n in range(201))).encode(), "line 202"),
])
def test_a_bad_csv_line_is_invalid_calendar_naming_its_line(data, detail):
    assert refusal(parse_calendar_csv, data) == ("invalid_calendar", detail)
