"""Console page of the service-level report (issue 36), `/reports/service-levels`: for the last 7 or
30 Beijing days, per target kind, per member and per channel, the numbers of `desk.service_report`,
and a server-rendered SVG chart of the percentage achieved per day (no chart library). Administrators
in a console session, as the report's JSON API. A `days` other than 7 or 30 shows 7 days."""
from flask import Blueprint, render_template, request
from sqlalchemy import select

from core.clock import utcnow
from core.db import db
from core.web import close_when_off
from desk import service_report
from desk.models import Channel
from desk.service_level_models import TIMER_KINDS
from desk.service_words import KIND_LABELS
from desk.sessions import admin_console_required, current_member
from desk.timeline import member_names

bp = Blueprint("service_levels", __name__)
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")  # as its JSON API: the same data

WIDTH, HEIGHT, AXIS, TOP, BOTTOM = 640, 200, 40, 10, 24  # the chart's box and margins, in SVG units


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
