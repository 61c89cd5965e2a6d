"""Console pages of service levels (issue 36), for administrators in a console session as their
JSON API:

- `/service-levels`: the policies (the default and per-channel overrides) and the weekly business
  hours, one form replaced whole through `desk.service_levels.save_settings`; the weekly hours are
  typed as members' shifts are (`desk.schedule_text`). A refusal re-renders the form with a message
  at the field it concerns (422), nothing saved.
- `/reports/service-levels`: for the last 7 or 30 Beijing days, per target kind, per member and per
  channel, the numbers of `desk.service_report`, and a server-rendered SVG chart of the percentage
  achieved per day (no chart library). A `days` other than 7 or 30 shows 7 days.
"""
import re

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _, lazy_gettext as _l
from flask_login import current_user
from sqlalchemy import select
from werkzeug.datastructures import MultiDict

from core.api import ApiError
from core.clock import utcnow
from core.db import db
from core.forms import number_or_text
from core.web import close_when_off
from desk import service_levels, service_report
from desk.models import Channel
from desk.schedule_text import UnreadableLine, read_shifts, shifts_text
from desk.service_level_models import HOURS_KINDS, TIMER_KINDS
from desk.service_words import KIND_LABELS
from desk.sessions import admin_console_required, current_member
from desk.timeline import member_names

bp = Blueprint("service_levels", __name__)
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")  # as its JSON API: the same data

WIDTH, HEIGHT, AXIS, TOP, BOTTOM = 640, 200, 40, 10, 24  # the chart's box and margins, in SVG units
TARGET_FIELDS = {"first": "first_response_minutes", "next": "next_response_minutes",
                 "resolution": "resolution_minutes"}  # a row's form field -> the policy's property
NEW_ROWS = 2  # blank override rows the form offers beside the saved ones
HOURS_LABELS = {"business": _l("Business hours"), "calendar": _l("Every hour (calendar)")}
TARGET_MESSAGE = _l("Leave it empty for no target, or write whole minutes from 1 to 43,200 (30 days).")
HOURS_PATH = re.compile(r"hours\[([0-9]+)\]")


def chart(series: list[dict]) -> dict:
    """Bars of the percentage achieved per day, 0 to 100 % on a fixed scale; a day without a
    measured target has no bar."""
    step = (WIDTH - AXIS) / len(series)
    span = HEIGHT - TOP - BOTTOM
    bars = []
    for index, day in enumerate(series):
        percent = day["achieved_percent"]
        height = 0 if percent is None else max(1, round(percent / 100 * span, 1))
        bars.append({**day, "x": round(AXIS + index * step + step * 0.15, 1), "width": round(step * 0.7, 1),
                     "y": round(TOP + span - height, 1), "height": height})
    grid = [{"percent": percent, "y": round(TOP + span - percent / 100 * span, 1)} for percent in (0, 50, 100)]
    return {"bars": bars, "grid": grid, "width": WIDTH, "height": HEIGHT, "axis": AXIS, "base": HEIGHT - BOTTOM}


@bp.get("/reports/service-levels")
@admin_console_required
def report():
    """The report of the last 7 (default) or 30 days; members and channels by name."""
    tenant_id, now = current_member().tenant_id, utcnow()
    days = 30 if request.args.get("days") == "30" else 7
    found = service_report.report(tenant_id, days, now)
    channels = {str(channel_id): name for channel_id, name in db.session.execute(
        select(Channel.id, Channel.name).where(Channel.tenant_id == tenant_id))}
    members = member_names(tenant_id, {row["member_id"] for row in found["members"]})
    return render_template("desk/service_levels_report.html", report=found, days=days, kinds=TIMER_KINDS,
                           kind_labels=KIND_LABELS, chart=chart(service_report.daily(tenant_id, days, now)),
                           members=members, channels=channels,
                           member_rows=sorted(found["members"], key=lambda row: (members[row["member_id"]],
                                                                                 row["member_id"])),
                           channel_rows=sorted(found["channels"], key=lambda row: (channels[row["channel_id"]],
                                                                                   row["channel_id"])))


# --- policies and weekly hours ---------------------------------------------------------------------

def _rows(settings: dict) -> list[dict]:
    """The form's rows as saved: the default, each override, and NEW_ROWS blank overrides."""
    blank = {"channel": "", **{field: "" for field in TARGET_FIELDS}, "hours": "business"}
    return [{"channel": policy["channel_id"] or "", "hours": policy["hours"],
             **{field: "" if policy[name] is None else str(policy[name]) for field, name in TARGET_FIELDS.items()}}
            for policy in settings["policies"]] + [dict(blank) for _ in range(NEW_ROWS)]


def _posted_rows(form: MultiDict) -> list[dict]:
    """The rows as posted, aligned by position (each row has each field once)."""
    columns = {name: form.getlist(name) for name in ("channel", *TARGET_FIELDS, "hours")}
    return [{name: (values[index] if index < len(values) else "").strip() for name, values in columns.items()}
            for index in range(len(columns["hours"]))]


def _policies_of(rows: list[dict]) -> tuple[list[dict], list[int]]:
    """The policies the rows hold (the first row the default; an override row without a channel is
    left out) and the row of each."""
    policies, at = [], []
    for index, row in enumerate(rows):
        if index and not row["channel"]:
            continue
        policies.append({"channel_id": row["channel"] or None, "hours": row["hours"],
                         **{name: number_or_text(row[field]) if row[field] else None
                            for field, name in TARGET_FIELDS.items()}})
        at.append(index)
    return policies, at


def _hours_line(line: int) -> dict:
    return {"hours": _("Business hours, line %(line)s: write the weekdays (1 Monday to 7 Sunday), a space, then the "
                       "start and the end, like 1-5 09:00-18:00 (an end not after the start is on the next day).",
                       line=line)}


def _refusal(detail: str, at: list[int], lines: list[int]) -> dict:
    """Where a refused save's message goes (`row-<n>-<field>`, `overrides` or `hours`) and what it says."""
    hours = HOURS_PATH.match(detail)
    if hours:
        return _hours_line(lines[int(hours.group(1))])
    if detail == "hours":
        return {"hours": _("At most %(max)s lines of business hours.", max=service_levels.HOURS_LIMIT)}
    if detail == "policies":
        return {"overrides": _("At most %(max)s channel overrides.", max=service_levels.OVERRIDES_LIMIT)}
    index, _dot, name = detail.removeprefix("policies[").partition("].")
    row = at[int(index)]
    if name == "channel_id":
        return {f"row-{row}-channel": _("Choose each channel once, in one override.")}
    if name == "hours":
        return {f"row-{row}-hours": _("Choose business hours or every hour.")}
    field = next(field for field, prop in TARGET_FIELDS.items() if prop == name)
    return {f"row-{row}-{field}": str(TARGET_MESSAGE)}


def _settings_page(status: int = 200, rows: list[dict] | None = None, hours_text: str | None = None,
                   errors: dict | None = None):
    tenant_id = current_member().tenant_id
    settings = service_levels.settings_of(tenant_id)
    channels = list(db.session.execute(select(Channel.id, Channel.name).where(Channel.tenant_id == tenant_id)
                                       .order_by(Channel.name, Channel.id)))
    return render_template(
        "desk/service_levels.html", rows=_rows(settings) if rows is None else rows, errors=errors or {},
        hours_text=shifts_text(settings["hours"]) if hours_text is None else hours_text, channels=channels,
        fields=TARGET_FIELDS, kind_labels=KIND_LABELS, hours_kinds=HOURS_KINDS, hours_labels=HOURS_LABELS,
        target_message=TARGET_MESSAGE, overrides_limit=service_levels.OVERRIDES_LIMIT), status


@bp.get("/service-levels")
@admin_console_required
def settings():
    """The policies and the weekly business hours."""
    return _settings_page()


@bp.post("/service-levels")
@admin_console_required
def save_settings():
    """Replace the policies and the weekly business hours together."""
    rows, hours_text = _posted_rows(request.form), request.form.get("hours_text", "")
    try:
        weekly, lines = read_shifts(hours_text)
    except UnreadableLine as bad:
        return _settings_page(422, rows, hours_text, _hours_line(bad.line))
    policies, at = _policies_of(rows)
    try:
        service_levels.save_settings(current_member().tenant_id, current_user.id, policies, weekly)
    except ApiError as err:
        if err.code != "invalid_policy":
            raise
        db.session.rollback()
        return _settings_page(422, rows, hours_text, _refusal(err.detail, at, lines))
    db.session.commit()
    flash(_("Saved the service-level policies and business hours."), "ok")
    return redirect(url_for("service_levels.settings"))
