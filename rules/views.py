"""Automation console pages (navigation entry until the automation issue lands)."""
from flask import Blueprint, render_template

from desk.sessions import admin_console_required

bp = Blueprint("rules", __name__)


@bp.get("/extensions/automation")
@admin_console_required
def index():
    """Automation rules overview."""
    return render_template("console/upcoming.html", title="Automation",
                           summary="Weekly rotation, keyword and semantic routing of conversations.")
