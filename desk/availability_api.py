"""Console JSON API of availability under /api/extensions/availability (issue 35): the tenant's
policy, each member's capacity, shifts and leave, the calendar, and the waiting queue.

Thin views, as every console JSON API: the administrator's console session and the same-origin
Origin (the session guard), the body as one JSON object of at most 32,000 bytes with no unknown
property (400 invalid_json), one service call, commit, the envelope.
"""
import uuid

from flask import Blueprint
from flask_login import current_user

from core.api import ok
from core.clock import utcnow
from core.db import db
from core.guards import console_json_body, only_properties
from core.web import answer_unreachable_stores, close_when_off
from desk import availability
from desk.sessions import admin_console_required, current_member

bp = Blueprint("availability_api", __name__, url_prefix="/api/extensions/availability")
answer_unreachable_stores(bp, "extensions_unavailable")
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")


def _body(names: tuple[str, ...]) -> dict:
    """The console POST body with exactly the properties `names` (400 invalid_json naming another;
    400 required_field_missing naming one left out)."""
    return only_properties(console_json_body(availability.BODY_LIMIT), names, names)


@bp.get("")
@admin_console_required
def overview():
    """The policy, every active member as seen now, the calendar and the waiting queue."""
    return ok(availability.overview(current_member().tenant_id, utcnow()))


@bp.post("")
@admin_console_required
def save_policy():
    """Replace the tenant's policy; answers `{policy}` as saved."""
    body = _body(("policy",))
    policy = availability.save_policy(current_member().tenant_id, current_user.id, body["policy"])
    db.session.commit()
    return ok({"policy": policy})


@bp.post("/members/<uuid:member_id>")
@admin_console_required
def save_schedule(member_id: uuid.UUID):
    """Replace one member's capacity, shifts and leave; answers the member's entry."""
    body = _body(("capacity", "shifts", "leave"))
    entry = availability.save_schedule(current_member().tenant_id, current_user.id, member_id, body["capacity"],
                                       body["shifts"], body["leave"], utcnow())
    db.session.commit()
    return ok(entry)


@bp.post("/calendar")
@admin_console_required
def replace_calendar():
    """Replace the tenant's calendar of holidays and make-up workdays; answers `{calendar}` by date."""
    body = _body(("calendar",))
    calendar = availability.replace_calendar(current_member().tenant_id, current_user.id, body["calendar"])
    db.session.commit()
    return ok({"calendar": calendar})
