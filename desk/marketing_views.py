"""The marketing drafts page: campaigns prepared from records, with their review state."""
from flask import Blueprint, render_template

from desk import marketing
from desk.sessions import admin_console_required, current_member

bp = Blueprint("marketing", __name__)


@bp.get("/marketing/drafts")
@admin_console_required
def drafts():
    """The tenant's marketing drafts, newest first."""
    return render_template("desk/marketing_drafts.html", drafts=marketing.tenant_drafts(current_member().tenant_id),
                           states=marketing.REVIEW_STATES, all_opted_in=marketing.ALL_OPTED_IN,
                           limit=marketing.LIST_LIMIT)
