"""Studio console pages (navigation entry until the studio issue lands)."""
from flask import Blueprint, render_template

from desk.sessions import admin_console_required

bp = Blueprint("studio", __name__)


@bp.get("/extensions")
@admin_console_required
def index():
    """Studio apps: the administrator's landing page."""
    return render_template("console/upcoming.html", title="Studio apps",
                           summary="Build single-page form applications from a strict definition, "
                                   "simulate them and publish them to the workbench.")


@bp.get("/template-market/studio")
@admin_console_required
def template_market():
    """Studio templates of the template market."""
    return render_template("console/upcoming.html", title="Template market",
                           summary="Ready-made studio templates to import as unpublished drafts.")
