"""Availability (issue 35), the stored part: validation of a tenant's policy, a member's schedule
and the tenant's calendar (and its CSV import), and the services that save and show them. Whether a
member is available at an instant is `desk.duty`'s to say; the write checks it (`desk.waiting`) and the
tick's queue work acts on it (`desk.drain`).

Each validator returns the normalized value or raises `ApiError(code, 400, detail=<path of the first
problem>)` with its own code (`invalid_policy`, `invalid_schedule`, `invalid_calendar`); a property
no object of these bodies has is `400 invalid_json` naming its path, as everywhere in the console
JSON API. The services take explicit arguments and flush only.
"""
import codecs
import csv
import io
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime

from sqlalchemy import delete, func, insert, select

from core import audit
from core.api import ApiError
from core.clock import iso
from core.db import db, tenant_row, upsert_insert
from core.guards import only_properties
from core.validation import (INVALID, MISSING, check_array, check_boolean, check_choice, check_integer,
                             check_object, check_text, fail, item_at, prop_at)
from desk.availability_models import (CALENDAR_KINDS, FALLBACK_RANGE, MINUTES_RANGE, OFFLINE_POLICIES,
                                      POLICY_DEFAULTS, WEEKDAY_RANGE, AvailabilityPolicy, CalendarException,
                                      WaitingConversation)
from desk.duty import assess, calendar_days
from desk.models import CAPACITY_RANGE, Conversation, Member, Tenant

BODY_LIMIT = 32_000  # bytes of a console POST, as every console JSON API (200 calendar entries fit)
SHIFTS_LIMIT, LEAVE_LIMIT, CALENDAR_LIMIT = 14, 50, 200
NAME_LIMIT = 60  # a calendar entry's name, in UTF-16 units
WEEKDAYS = tuple(range(WEEKDAY_RANGE[0], WEEKDAY_RANGE[1] + 1))
START_RE = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]", re.ASCII)  # fullmatch: 00:00 to 23:59
DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", re.ASCII)  # fullmatch, then a real date
END_OF_DAY = "24:00"  # a shift's end may also be midnight at the end of its day
POLICY_REQUIRED = ("enabled", "default_capacity", "fallback_after_minutes", "offline_policy")
POLICY_OPTIONAL = ("no_reply_minutes", "release_after_minutes")  # left out: null
CSV_HEADER = ["date", "kind", "name", "as_weekday"]


# --- validation ---------------------------------------------------------------------------------

@contextmanager
def refused_as(code: str) -> Iterator[None]:
    """Within the block, core.validation's refusals (invalid_definition, required_field_missing)
    are `400 code` with the same path; every other error passes as it is."""
    try:
        yield
    except ApiError as refused:
        if refused.code not in (INVALID, MISSING):
            raise
        raise ApiError(code, 400, detail=refused.detail) from None


def strict_object(value: object, path: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict:
    """An object: a property outside `required` and `optional` is 400 invalid_json naming it; not an
    object or a required property missing is refused by core.validation at its path."""
    if isinstance(value, dict):
        only_properties(value, required + optional, at=f"{path}." if path else "")
    return check_object(value, path, required, optional)


def _integer_or_null(value: object, path: str, low: int, high: int) -> int | None:
    """null, or a whole JSON number from `low` to `high`."""
    return None if value is None else check_integer(value, path, low, high)


def _date(value: object, path: str) -> str:
    """A real date written `YYYY-MM-DD`, returned as written."""
    if not isinstance(value, str) or not DATE_RE.fullmatch(value):
        fail(path)
    try:
        date.fromisoformat(value)
    except ValueError:
        fail(path)
    return value


def validate_policy(raw: object) -> dict:
    """The six values of a policy (`no_reply_minutes` and `release_after_minutes` left out are
    null), else 400 invalid_policy at `policy.<name>`: default_capacity 1-100, fallback_after_minutes
    null or 0-1440, no_reply_minutes null or 1-1440, offline_policy one of OFFLINE_POLICIES,
    release_after_minutes 1-1440 with `release_after` and null otherwise."""
    with refused_as("invalid_policy"):
        obj = strict_object(raw, "policy", POLICY_REQUIRED, POLICY_OPTIONAL)
        policy = {
            "enabled": check_boolean(obj["enabled"], "policy.enabled"),
            "default_capacity": check_integer(obj["default_capacity"], "policy.default_capacity", *CAPACITY_RANGE),
            "fallback_after_minutes": _integer_or_null(obj["fallback_after_minutes"], "policy.fallback_after_minutes",
                                                       *FALLBACK_RANGE),
            "no_reply_minutes": _integer_or_null(obj.get("no_reply_minutes"), "policy.no_reply_minutes",
                                                 *MINUTES_RANGE),
            "offline_policy": check_choice(obj["offline_policy"], "policy.offline_policy", OFFLINE_POLICIES),
        }
        release = obj.get("release_after_minutes")
        if policy["offline_policy"] == "release_after":
            release = check_integer(release, "policy.release_after_minutes", *MINUTES_RANGE)
        elif release is not None:
            fail("policy.release_after_minutes")
        policy["release_after_minutes"] = release
    return policy


def check_shift(value: object, path: str) -> dict:
    """`{weekdays, start, end}`: 1 to 7 distinct weekdays (1 Monday to 7 Sunday), start `HH:MM`
    00:00-23:59, end the same or `24:00`."""
    obj = strict_object(value, path, ("weekdays", "start", "end"))
    weekdays_path = prop_at(path, "weekdays")
    items = check_array(obj["weekdays"], weekdays_path, 1, len(WEEKDAYS))
    weekdays = []
    for index, item in enumerate(items):
        weekday = check_choice(item, item_at(weekdays_path, index), WEEKDAYS)
        if weekday in weekdays:
            fail(item_at(weekdays_path, index))
        weekdays.append(weekday)
    start, end = obj["start"], obj["end"]
    if not isinstance(start, str) or not START_RE.fullmatch(start):
        fail(prop_at(path, "start"))
    if not isinstance(end, str) or not (START_RE.fullmatch(end) or end == END_OF_DAY):
        fail(prop_at(path, "end"))
    return {"weekdays": weekdays, "start": start, "end": end}


def _leave(value: object, path: str) -> dict:
    """`{from, to}`: two dates, `from` not after `to` (else the path of `to`)."""
    obj = strict_object(value, path, ("from", "to"))
    first, last = _date(obj["from"], prop_at(path, "from")), _date(obj["to"], prop_at(path, "to"))
    if first > last:  # ISO dates of four-digit years sort as the days do
        fail(prop_at(path, "to"))
    return {"from": first, "to": last}


def validate_schedule(capacity: object, shifts: object, leave: object) -> tuple[int | None, list, list]:
    """A member's capacity (null or 1-100), at most 14 shifts and at most 50 leave ranges, else 400
    invalid_schedule at `capacity`, `shifts[i].…` or `leave[i].…`."""
    with refused_as("invalid_schedule"):
        checked = _integer_or_null(capacity, "capacity", *CAPACITY_RANGE)
        shift_items = check_array(shifts, "shifts", 0, SHIFTS_LIMIT)
        leave_items = check_array(leave, "leave", 0, LEAVE_LIMIT)
        return (checked, [check_shift(item, item_at("shifts", index)) for index, item in enumerate(shift_items)],
                [_leave(item, item_at("leave", index)) for index, item in enumerate(leave_items)])


def _calendar_entry(value: object, path: str) -> dict:
    """`{date, kind, name, as_weekday}`: a date, holiday or workday, a name of 1-60 characters
    (trimmed), and `as_weekday` 1-7 for a workday, absent or null for a holiday."""
    obj = strict_object(value, path, ("date", "kind", "name"), ("as_weekday",))
    entry = {"date": _date(obj["date"], prop_at(path, "date")),
             "kind": check_choice(obj["kind"], prop_at(path, "kind"), CALENDAR_KINDS),
             "name": check_text(obj["name"], prop_at(path, "name"), NAME_LIMIT),
             "as_weekday": obj.get("as_weekday")}
    if entry["kind"] == "workday":
        entry["as_weekday"] = check_choice(entry["as_weekday"], prop_at(path, "as_weekday"), WEEKDAYS)
    elif entry["as_weekday"] is not None:
        fail(prop_at(path, "as_weekday"))
    return entry


def _distinct_dates(entries: list[dict], paths: list[str]) -> None:
    """Refuse the first entry whose date an earlier one has, at its `date`."""
    seen = set()
    for entry, path in zip(entries, paths):
        if entry["date"] in seen:
            fail(prop_at(path, "date"))
        seen.add(entry["date"])


def validate_calendar(raw: object) -> list[dict]:
    """At most 200 entries with distinct dates, else 400 invalid_calendar at `calendar` or
    `calendar[i].…`."""
    with refused_as("invalid_calendar"):
        items = check_array(raw, "calendar", 0, CALENDAR_LIMIT)
        paths = [item_at("calendar", index) for index in range(len(items))]
        entries = [_calendar_entry(item, path) for item, path in zip(items, paths)]
        _distinct_dates(entries, paths)
    return entries


# --- the calendar's CSV import ------------------------------------------------------------------

def _csv_rows(data: bytes) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each non-empty row of UTF-8 text, a byte order mark allowed; text
    that is not UTF-8, or a row the CSV reader cannot read, is refused at `line N`."""
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8):]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as bad:
        line = data.count(b"\n", 0, bad.start) + 1
        fail(f"line {line}")
    reader = csv.reader(io.StringIO(text, newline=""))
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error:
            fail(f"line {reader.line_num}")
        if row:
            yield reader.line_num, row


def _csv_weekday(text: str) -> object:
    """An `as_weekday` field: empty is null, ASCII digits a number; anything else is passed on for
    the entry's check to refuse."""
    if not text:
        return None
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 2 else text


def parse_calendar_csv(data: bytes) -> list[dict]:
    """The calendar entries of an uploaded CSV file: UTF-8 with or without a byte order mark, the
    header row `date,kind,name,as_weekday`, then one entry per row (`as_weekday` empty for a
    holiday). Any problem is 400 invalid_calendar at `line N` (the row's line in the file) or
    `line N.<column>`: a missing or other header, a row of another width, a value the calendar
    refuses, a date given twice, more than 200 entries."""
    with refused_as("invalid_calendar"):
        rows = _csv_rows(data)
        first = next(rows, None)
        if first is None or [field.strip() for field in first[1]] != CSV_HEADER:
            fail(f"line {first[0] if first else 1}")
        entries, paths = [], []
        for line, row in rows:
            path = f"line {line}"
            if len(row) != len(CSV_HEADER) or len(entries) == CALENDAR_LIMIT:
                fail(path)
            day, kind, name, weekday = (field.strip() for field in row)
            entries.append(_calendar_entry({"date": day, "kind": kind, "name": name,
                                            "as_weekday": _csv_weekday(weekday)}, path))
            paths.append(path)
        _distinct_dates(entries, paths)
    return entries


# --- services -----------------------------------------------------------------------------------

def policy_of(tenant_id: uuid.UUID) -> dict:
    """The tenant's six policy values: POLICY_DEFAULTS until the first save writes its row."""
    row = db.session.get(AvailabilityPolicy, tenant_id)
    return dict(POLICY_DEFAULTS) if row is None else {name: getattr(row, name) for name in POLICY_DEFAULTS}


def save_policy(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, raw: object) -> dict:
    """Validate and save the tenant's policy (its row written on the first save, by one upsert, so
    two first saves at once cannot collide), audited; returns the six values. Flushes only."""
    policy = validate_policy(raw)
    table = AvailabilityPolicy.__table__
    statement = upsert_insert(db.session.get_bind().dialect.name)(table).values(tenant_id=tenant_id, **policy)
    db.session.execute(statement.on_conflict_do_update(index_elements=[table.c.tenant_id], set_=policy))
    audit.record(tenant_id, actor_id, "availability.policy_saved", f"tenant:{tenant_id}", policy)
    return policy


def save_schedule(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, member_id: uuid.UUID, capacity: object,
                  shifts: object, leave: object, now: datetime) -> dict:
    """Replace an active member's capacity, shifts and leave (404 not_found for a member of another
    tenant, an inactive or a missing one; then 400 invalid_schedule), audited; returns the member's
    entry as seen at `now`. Flushes only."""
    member = tenant_row(Member, tenant_id, member_id, Member.active.is_(True))
    member.capacity, member.shifts, member.leave = validate_schedule(capacity, shifts, leave)
    db.session.flush()
    audit.record(tenant_id, actor_id, "availability.schedule_saved", f"member:{member.id}",
                 {"capacity": member.capacity, "shifts": len(member.shifts), "leave": len(member.leave)})
    return _member_entries(tenant_id, [member], now, policy_of(tenant_id), calendar_of(tenant_id))[0]


def replace_calendar(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, raw: object) -> list[dict]:
    """Validate the tenant's calendar and replace every entry it had (under the tenant row's lock,
    so two replacements at once run one after the other), audited; returns the entries by date.
    Flushes only."""
    entries = sorted(validate_calendar(raw), key=lambda entry: entry["date"])
    db.session.execute(select(Tenant.id).where(Tenant.id == tenant_id).with_for_update())
    db.session.execute(delete(CalendarException).where(CalendarException.tenant_id == tenant_id))
    if entries:
        db.session.execute(insert(CalendarException), [
            {"tenant_id": tenant_id, "day": date.fromisoformat(entry["date"]), "kind": entry["kind"],
             "name": entry["name"], "as_weekday": entry["as_weekday"]} for entry in entries])
    kinds = [entry["kind"] for entry in entries]
    audit.record(tenant_id, actor_id, "availability.calendar_replaced", f"tenant:{tenant_id}",
                 {kind: kinds.count(kind) for kind in CALENDAR_KINDS})
    return entries


def calendar_of(tenant_id: uuid.UUID) -> list[dict]:
    """The tenant's calendar entries by date."""
    rows = db.session.scalars(select(CalendarException).where(CalendarException.tenant_id == tenant_id)
                              .order_by(CalendarException.day))
    return [{"date": row.day.isoformat(), "kind": row.kind, "name": row.name, "as_weekday": row.as_weekday}
            for row in rows]


def overview(tenant_id: uuid.UUID, now: datetime) -> dict:
    """Everything the console shows of the tenant's availability at `now`: the policy, each active
    member (by name) as seen then, the calendar and the waiting queue (oldest first)."""
    members = list(db.session.scalars(select(Member).where(Member.tenant_id == tenant_id, Member.active.is_(True))
                                      .order_by(Member.display_name, Member.id)))
    policy, calendar = policy_of(tenant_id), calendar_of(tenant_id)
    waiting = db.session.scalars(select(WaitingConversation).where(WaitingConversation.tenant_id == tenant_id)
                                 .order_by(WaitingConversation.waiting_since, WaitingConversation.conversation_id))
    return {"policy": policy, "members": _member_entries(tenant_id, members, now, policy, calendar),
            "calendar": calendar,
            "queue": [{"conversation_id": str(row.conversation_id),
                       "preferred_member_id": None if row.preferred_member_id is None else str(row.preferred_member_id),
                       "reason_code": row.reason_code, "waiting_since": iso(row.waiting_since)} for row in waiting]}


def open_counts(tenant_id: uuid.UUID, member_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    """How many of the tenant's conversations with status `open` each member is assigned (the load
    capacity limits); members without any are left out."""
    if not member_ids:
        return {}
    return dict(db.session.execute(
        select(Conversation.assignee_member_id, func.count()).where(
            Conversation.tenant_id == tenant_id, Conversation.status == "open",
            Conversation.assignee_member_id.in_(member_ids)).group_by(Conversation.assignee_member_id)).all())


def _member_entries(tenant_id: uuid.UUID, members: list[Member], now: datetime, policy: dict,
                    calendar: list[dict]) -> list[dict]:
    """Each member's console entry as seen at `now` under the tenant's policy and calendar:
    `presence` as it counts then, `capacity` as saved (null: the policy's default_capacity)."""
    days = calendar_days(calendar)
    loads = open_counts(tenant_id, [member.id for member in members])
    entries = []
    for member in members:
        seen = assess(member, days, loads.get(member.id, 0), policy["default_capacity"], now)
        entries.append({"member_id": str(member.id), "display_name": member.display_name, "role": member.role,
                        "presence": seen.presence, "available": seen.reason_code is None,
                        "reason_code": seen.reason_code, "open_count": seen.open_count, "capacity": member.capacity,
                        "shifts": member.shifts, "leave": member.leave})
    return entries
