"""Console JSON API of service levels under /api/extensions/service-levels (issue 36): the tenant's
policies and weekly business hours, and the report of the last 7 or 30 days. Thin views, as every console JSON API (see
`desk.availability_api`): the administrator's console session and the same-origin Origin, a strict
body of at most 32,000 bytes, one service call, commit, the envelope."""
from flask import Blueprint, request
from flask_login import current_user

from core.api import ok
from core.clock import utcnow
from core.db import db
from core.guards import console_json_body, only_properties
from core.web import answer_unreachable_stores, close_when_off
from desk import service_levels, service_report
from desk.availability import BODY_LIMIT
from desk.sessions import admin_console_required, current_member

bp = Blueprint("service_levels_api", __name__, url_prefix="/api/extensions/service-levels")
answer_unreachable_stores(bp, "extensions_unavailable")
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")

NAMES = ("policies", "hours")


@bp.get("")
@admin_console_required
def settings():
    """`{policies, hours}`: the default policy first, then the per-channel overrides."""
    return ok(service_levels.settings_of(current_member().tenant_id))


@bp.post("")
@admin_console_required
def save_settings():
    """Replace the tenant's policies and weekly hours together; answers them as saved."""
    body = only_properties(console_json_body(BODY_LIMIT), NAMES, NAMES)
    saved = service_levels.save_settings(current_member().tenant_id, current_user.id, body["policies"],
                                         body["hours"])
    db.session.commit()
    return ok(saved)


@bp.get("/report")
@admin_console_required
def report():
    """The report of the last `days` (7 or 30) Beijing days; any other `days` is 400 invalid_days."""
    days = service_report.report_days(request.args.get("days"))
    return ok(service_report.report(current_member().tenant_id, days, utcnow()))
