"""Open platform console page (navigation entry until the open API issue lands)."""
from flask import Blueprint, render_template

from desk.sessions import admin_console_required

bp = Blueprint("openapi", __name__)


@bp.get("/open-platform")
@admin_console_required
def index():
    """External applications with scoped tokens and signed webhooks."""
    return render_template("console/upcoming.html", title="Open platform",
                           summary="External applications, scoped API tokens and signed webhooks.")
