"""Console page of availability (issue 35), `/availability`: the tenant's policy, each active member's
presence, load, capacity, shifts and leave, the calendar of holidays and make-up workdays (with its
CSV import) and the waiting queue. The page for people over the services `desk/availability_api.py`
offers as JSON: a form is read into the shapes the service takes (shifts and leave as text,
`desk.schedule_text`), one service call, commit, the page again; a refusal re-renders the form with a
message at the field it concerns (422) and nothing saved. A member's form is swapped in alone by htmx.
"""
import re
import uuid
from datetime import datetime

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _, lazy_gettext as _l, ngettext
from flask_login import current_user
from sqlalchemy import select
from werkzeug.datastructures import MultiDict

from core.api import ApiError
from core.clock import utcnow
from core.db import db
from core.forms import number_or_text
from core.i18n import beijing
from core.web import close_when_off, htmx
from desk import availability
from desk.availability_models import FALLBACK_RANGE, MINUTES_RANGE, OFFLINE_POLICIES
from desk.availability_words import PRESENCE_LABELS, REASON_LABELS
from desk.models import CAPACITY_RANGE, Conversation, Customer, Member
from desk.schedule_text import UnreadableLine, leave_text, read_leave, read_shifts, shifts_text, weekday_runs
from desk.sessions import admin_console_required, current_member

bp = Blueprint("availability", __name__)
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")  # as its JSON API: the same data

UPLOAD_LIMIT = 64 * 1024  # bytes of a calendar file: 200 entries with the longest names fit
POLICY_FIELDS = ("default_capacity", "fallback_after_minutes", "no_reply_minutes", "release_after_minutes")
OFFLINE_LABELS = {"keep": _l("Keep them assigned"), "release_after": _l("Release them after a delay"),
                  "release_on_customer_reply": _l("Release them when the customer writes again")}
KIND_LABELS = {"holiday": _l("Holiday"), "workday": _l("Make-up workday")}
WEEKDAY_LABELS = {1: _l("Mon"), 2: _l("Tue"), 3: _l("Wed"), 4: _l("Thu"), 5: _l("Fri"), 6: _l("Sat"), 7: _l("Sun")}
ROLE_LABELS = {"admin": _l("admin"), "supervisor": _l("supervisor"), "agent": _l("agent")}
POLICY_MESSAGES = {
    "default_capacity": _l("Default capacity: a whole number from %(low)s to %(high)s.",
                           low=CAPACITY_RANGE[0], high=CAPACITY_RANGE[1]),
    "fallback_after_minutes": _l("Fallback after minutes: leave it empty for never, or a whole number from %(low)s "
                                 "to %(high)s.", low=FALLBACK_RANGE[0], high=f"{FALLBACK_RANGE[1]:,}"),
    "no_reply_minutes": _l("No-reply minutes: leave it empty for off, or a whole number from %(low)s to %(high)s.",
                           low=MINUTES_RANGE[0], high=f"{MINUTES_RANGE[1]:,}"),
    "offline_policy": _l("Choose one of the offline policies listed."),
    "release_after_minutes": _l("Release after minutes: a whole number from %(low)s to %(high)s, needed when "
                                "conversations are released after a delay.",
                                low=MINUTES_RANGE[0], high=f"{MINUTES_RANGE[1]:,}"),
}
SCHEDULE_PATH = re.compile(r"(shifts|leave)\[([0-9]+)\](?:\.(weekdays|start|end|from|to))?")
LINE_MESSAGES = {
    "shifts": _l("Shifts, line %(line)s: write the weekdays (1 Monday to 7 Sunday, like 1-5 or 1,3,5), a space, "
                 "then the start and the end, like 1-5 09:00-18:00."),
    "weekdays": _l("Shifts, line %(line)s: weekdays are 1 (Monday) to 7 (Sunday), each at most once."),
    "start": _l("Shifts, line %(line)s: the start is a time from 00:00 to 23:59."),
    "end": _l("Shifts, line %(line)s: the end is a time from 00:00 to 24:00 (an end not after the start is on "
              "the next day)."),
    "leave": _l("Leave, line %(line)s: write the first and the last day, like 2026-10-01 2026-10-07, or one day."),
    "from": _l("Leave, line %(line)s: the first day is not a date written YYYY-MM-DD."),
    "to": _l("Leave, line %(line)s: the last day is not a date written YYYY-MM-DD, or comes before the first."),
}
CSV_MESSAGES = {
    "date": _l("Line %(line)s of the file: the date must be a real date written YYYY-MM-DD, and each date may "
               "appear only once."),
    "kind": _l("Line %(line)s of the file: the kind must be holiday or workday."),
    "name": _l("Line %(line)s of the file: the name must be 1 to %(max)s characters."),
    "as_weekday": _l("Line %(line)s of the file: as_weekday must be 1 (Monday) to 7 (Sunday) for a workday and "
                     "empty for a holiday."),
}


# --- reading -------------------------------------------------------------------------------------

def _when(moment: str) -> str:
    """An ISO time of the overview in Beijing time, to the minute (the column names the zone)."""
    return beijing(datetime.fromisoformat(moment), with_zone=False)


def _queue_rows(tenant_id: uuid.UUID, queue: list[dict]) -> list[dict]:
    """The waiting queue with the customer's name of each conversation and the name of the member it
    waits for (two reads of the tenant's rows)."""
    conversation_ids = [uuid.UUID(row["conversation_id"]) for row in queue]
    member_ids = [uuid.UUID(row["preferred_member_id"]) for row in queue if row["preferred_member_id"]]
    customers = dict(db.session.execute(
        select(Conversation.id, Customer.name).join(Customer, Customer.id == Conversation.customer_id)
        .where(Conversation.tenant_id == tenant_id, Conversation.id.in_(conversation_ids))).all()) \
        if conversation_ids else {}
    names = dict(db.session.execute(select(Member.id, Member.display_name).where(
        Member.tenant_id == tenant_id, Member.id.in_(member_ids))).all()) if member_ids else {}
    return [{**row, "customer": customers.get(uuid.UUID(row["conversation_id"])),
             "preferred": names.get(uuid.UUID(row["preferred_member_id"])) if row["preferred_member_id"] else None,
             "since": _when(row["waiting_since"])} for row in queue]


def _policy_values(policy: dict) -> dict:
    """The saved policy as its form shows it: numbers as text, null as an empty field."""
    return {"enabled": policy["enabled"], "offline_policy": policy["offline_policy"],
            **{name: "" if policy[name] is None else str(policy[name]) for name in POLICY_FIELDS}}


def _member_values(entry: dict) -> dict:
    """A member's saved capacity, shifts and leave as their form shows them."""
    return {"capacity": "" if entry["capacity"] is None else str(entry["capacity"]),
            "shifts": shifts_text(entry["shifts"]), "leave": leave_text(entry["leave"])}


def _shift_words(shift: dict) -> str:
    """A saved shift for people: `Mon–Fri, Sun 09:00–18:00`."""
    days = ", ".join(str(WEEKDAY_LABELS[first]) if first == last else f"{WEEKDAY_LABELS[first]}–{WEEKDAY_LABELS[last]}"
                     for first, last in weekday_runs(shift["weekdays"]))
    return f"{days} {shift['start']}–{shift['end']}"


def _member_section(entry: dict, values: dict | None = None, errors: dict | None = None, saved: bool = False) -> dict:
    """What one member's section shows: the entry, its form's values and errors, a saved note."""
    return {"entry": entry, "form": values or _member_values(entry), "errors": errors or {}, "saved": saved,
            "shift_words": [_shift_words(shift) for shift in entry["shifts"]]}


def _shared() -> dict:
    """What every part of the page shows alike: the words for codes and the limits."""
    return {"presence_labels": PRESENCE_LABELS, "reason_labels": REASON_LABELS, "role_labels": ROLE_LABELS,
            "capacity_range": CAPACITY_RANGE, "shifts_limit": availability.SHIFTS_LIMIT,
            "leave_limit": availability.LEAVE_LIMIT}


def _page(status: int = 200, policy_form: MultiDict | None = None, policy_errors: dict | None = None,
          member_form: dict | None = None, calendar_error: str | None = None):
    """The whole page as it stands now, with one form's refusal when there is one: the policy's
    posted values and errors, a member's (`{member_id, values, errors}`) or the calendar's message."""
    tenant_id, now = current_member().tenant_id, utcnow()
    seen = availability.overview(tenant_id, now)
    members = [_member_section(entry, member_form["values"], member_form["errors"])
               if member_form and member_form["member_id"] == entry["member_id"] else _member_section(entry)
               for entry in seen["members"]]
    policy_values = _policy_values(seen["policy"])
    if policy_form is not None:
        policy_values = {"enabled": bool(policy_form.get("enabled")),
                         "offline_policy": policy_form.get("offline_policy"),
                         **{name: policy_form.get(name, "") for name in POLICY_FIELDS}}
    return render_template(
        "desk/availability.html", now=beijing(now), policy=seen["policy"], policy_values=policy_values,
        policy_errors=policy_errors or {}, offline_policies=OFFLINE_POLICIES, offline_labels=OFFLINE_LABELS,
        members=members, calendar=seen["calendar"], kind_labels=KIND_LABELS, weekday_labels=WEEKDAY_LABELS,
        calendar_error=calendar_error, upload_limit_kb=UPLOAD_LIMIT // 1024, calendar_limit=availability.CALENDAR_LIMIT,
        name_limit=availability.NAME_LIMIT, queue=_queue_rows(tenant_id, seen["queue"]), fallback_range=FALLBACK_RANGE,
        minutes_range=MINUTES_RANGE, **_shared()), status


@bp.get("/availability")
@admin_console_required
def index():
    """The policy, the members, the calendar and the waiting queue."""
    return _page()


# --- the policy ----------------------------------------------------------------------------------

def _minutes(text: str | None) -> int | str | None:
    """An optional minutes field: empty is null, ASCII digits a number, anything else its text for
    the validator to refuse at its path."""
    text = (text or "").strip()
    return number_or_text(text) if text else None


def _policy_from(form: MultiDict) -> dict:
    """The policy form as `validate_policy` takes it. The release delay belongs to `release_after`
    alone: with another choice the field is not read, as if it were hidden."""
    offline = form.get("offline_policy", "")
    release = _minutes(form.get("release_after_minutes")) if offline == "release_after" else None
    return {"enabled": bool(form.get("enabled")),
            "default_capacity": number_or_text((form.get("default_capacity") or "").strip()),
            "fallback_after_minutes": _minutes(form.get("fallback_after_minutes")),
            "no_reply_minutes": _minutes(form.get("no_reply_minutes")), "offline_policy": offline,
            "release_after_minutes": release}


@bp.post("/availability/policy")
@admin_console_required
def save_policy():
    """Replace the tenant's policy."""
    try:
        availability.save_policy(current_member().tenant_id, current_user.id, _policy_from(request.form))
    except ApiError as err:
        if err.code != "invalid_policy":
            raise
        db.session.rollback()
        field = err.detail.removeprefix("policy.")
        return _page(422, policy_form=request.form, policy_errors={field: POLICY_MESSAGES[field]})
    db.session.commit()
    flash(_("Saved the availability policy."), "ok")
    return redirect(url_for("availability.index", _anchor="policy-h"))


# --- a member's capacity, shifts and leave --------------------------------------------------------

def _schedule_error(detail: str, lines: dict) -> dict:
    """The field and message of a refused schedule: `capacity`, or the shifts' or leave's line
    (`lines`: each field's line numbers by item) and what is wrong in it."""
    if detail == "capacity":
        return {"capacity": _("Capacity: leave it empty for the policy's default, or a whole number from %(low)s to "
                              "%(high)s.", low=CAPACITY_RANGE[0], high=CAPACITY_RANGE[1])}
    if detail in ("shifts", "leave"):  # too many
        return {detail: _("At most %(max)s shifts.", max=availability.SHIFTS_LIMIT) if detail == "shifts"
                else _("At most %(max)s leave ranges.", max=availability.LEAVE_LIMIT)}
    match = SCHEDULE_PATH.match(detail)
    field, index, part = match.group(1), int(match.group(2)), match.group(3)
    return {field: str(LINE_MESSAGES[part or field]) % {"line": lines[field][index]}}


def _read_schedule(form: MultiDict) -> tuple[dict, dict, dict]:
    """(shapes for save_schedule, line numbers of each field's items, errors of unreadable lines)."""
    shapes, lines, errors = {}, {}, {}
    for field, read in (("shifts", read_shifts), ("leave", read_leave)):
        try:
            shapes[field], lines[field] = read(form.get(field, ""))
        except UnreadableLine as bad:
            errors[field] = str(LINE_MESSAGES[field]) % {"line": bad.line}
    capacity = (form.get("capacity") or "").strip()
    shapes["capacity"] = number_or_text(capacity) if capacity else None
    return shapes, lines, errors


def _schedule_answer(entry: dict, policy: dict, status: int, values: dict | None = None, errors: dict | None = None):
    """The member's section alone for htmx, else the page (a refusal) or back to it (saved)."""
    if htmx:
        return render_template("desk/_availability_member.html", policy=policy, **_shared(),
                               section=_member_section(entry, values, errors, saved=status == 200)), status
    if errors:
        return _page(status, member_form={"member_id": entry["member_id"], "values": values, "errors": errors})
    flash(_("Saved the schedule of %(name)s.", name=entry["display_name"]), "ok")
    return redirect(url_for("availability.index", _anchor=f"member-{entry['member_id']}"))


@bp.post("/availability/members/<uuid:member_id>")
@admin_console_required
def save_schedule(member_id: uuid.UUID):
    """Replace one active member's capacity, shifts and leave (another tenant's member, an inactive
    or a missing one is 404)."""
    tenant_id, now = current_member().tenant_id, utcnow()
    seen = availability.overview(tenant_id, now)
    entry = next((found for found in seen["members"] if found["member_id"] == str(member_id)), None)
    if entry is None:
        raise ApiError("not_found", 404)
    values = {name: request.form.get(name, "") for name in ("capacity", "shifts", "leave")}
    shapes, lines, errors = _read_schedule(request.form)
    if errors:
        return _schedule_answer(entry, seen["policy"], 422, values, errors)
    try:
        saved = availability.save_schedule(tenant_id, current_user.id, member_id, shapes["capacity"],
                                           shapes["shifts"], shapes["leave"], now)
    except ApiError as err:
        if err.code != "invalid_schedule":
            raise
        db.session.rollback()
        return _schedule_answer(entry, seen["policy"], 422, values, _schedule_error(err.detail, lines))
    db.session.commit()
    return _schedule_answer(saved, seen["policy"], 200)


# --- the calendar ----------------------------------------------------------------------------------

def _calendar_message(detail: str) -> str:
    """What a refused file's `line N` or `line N.<column>` says to people."""
    line, _dot, column = detail.removeprefix("line ").partition(".")
    if column in CSV_MESSAGES:
        return str(CSV_MESSAGES[column]) % {"line": line, "max": availability.NAME_LIMIT}
    if line == "1":
        return _("Line 1 of the file must be the header date,kind,name,as_weekday, and the file UTF-8 text.")
    return _("Line %(line)s of the file could not be read: each line holds the four columns "
             "date,kind,name,as_weekday in UTF-8, and a calendar at most %(max)s entries.",
             line=line, max=availability.CALENDAR_LIMIT)


@bp.post("/availability/calendar")
@admin_console_required
def import_calendar():
    """Replace the calendar with the entries of an uploaded CSV file (all of them or none)."""
    upload = request.files.get("calendar")
    if upload is None or not upload.filename:
        return _page(422, calendar_error=_("Choose a CSV file to import."))
    data = upload.stream.read(UPLOAD_LIMIT + 1)
    if len(data) > UPLOAD_LIMIT:
        return _page(413, calendar_error=_("The file is larger than %(max)s KB: a year's calendar is far smaller. "
                                           "Check that it is the right file.", max=UPLOAD_LIMIT // 1024))
    try:
        entries = availability.replace_calendar(current_member().tenant_id, current_user.id,
                                                availability.parse_calendar_csv(data))
    except ApiError as err:
        if err.code != "invalid_calendar":
            raise
        db.session.rollback()
        return _page(422, calendar_error=_calendar_message(err.detail))
    db.session.commit()
    flash(ngettext("Imported the calendar: it holds the file's %(num)d entry now.",
                   "Imported the calendar: it holds the file's %(num)d entries now.", len(entries)), "ok")
    return redirect(url_for("availability.index", _anchor="calendar-h"))


@bp.post("/availability/calendar/clear")
@admin_console_required
def clear_calendar():
    """Remove every entry of the calendar."""
    availability.replace_calendar(current_member().tenant_id, current_user.id, [])
    db.session.commit()
    flash(_("Cleared the calendar: every day follows the weekly shifts."), "ok")
    return redirect(url_for("availability.index", _anchor="calendar-h"))
