"""Studio console pages (HTMX): the application list, the template market, an application's page
(versions, editor, simulation, publishing, the ledger and charts) and AI drafts."""
import json
import uuid

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import current_user

from core.api import ApiError, parse_uuid
from core.db import db
from core.forms import form_integer
from core.model import model_state
from core.web import close_when_off, htmx, redirect_to
from desk.sessions import admin_console_required, current_member
from desk.models import Tenant
from studio import apps, generation, knowledge_ref, quota, records, workbench
from studio.charts import chart_summaries
from studio.compare import compare
from studio.compare_words import described
from studio.catalog import LIMITS, PUBLISH_PERMISSIONS, starter_definition
from studio.forms import form_to_input, parse_definition_text, split_script, with_script
from studio.svg import chart_figure
from studio.templates_market import (LICENSE, ORIGIN, find_template, imported_origin, shown_license, shown_origin,
                                     templates)

bp = Blueprint("studio", __name__)
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")


def _app_url(studio_app, version: int | None = None, anchor: str | None = None) -> str:
    """The app page, optionally showing one version and scrolled to a section."""
    return url_for("studio.app_page", app_id=studio_app.id, version=version, _anchor=anchor)


@bp.get("/extensions")
@admin_console_required
def index():
    """The administrator's list of applications."""
    tenant_id = current_member().tenant_id
    return render_template("studio/index.html", apps=apps.list_apps(tenant_id),
                           in_workbench=workbench.workbench_list(tenant_id))


@bp.post("/extensions/new")
@admin_console_required
def create_from_starter():
    """Create an application from the starter definition and open it."""
    try:
        version = apps.create_app(current_member().tenant_id, current_user.id, starter_definition())
    except ApiError as err:
        flash(_("Could not create the application: %(code)s.", code=err.code), "error")
        return redirect(url_for("studio.index"))
    db.session.commit()
    flash(_("Application created from the starter definition: version 1 is a draft."), "ok")
    return redirect(url_for("studio.app_page", app_id=version.app_id))


@bp.get("/template-market/studio")
@admin_console_required
def template_market():
    """Built-in studio templates, in the page's language."""
    return render_template("studio/template_market.html", templates=templates(), origin=shown_origin(ORIGIN),
                           license=shown_license(LICENSE))


@bp.post("/template-market/studio/<slug>/import")
@admin_console_required
def import_template(slug: str):
    """Import a template as an unpublished version-1 draft (nothing is authorized or run), its
    texts in the page's language; the origin and licence are stored in English."""
    template = find_template(slug)
    if template is None:
        raise ApiError("not_found", 404)
    try:
        version = apps.create_app(current_member().tenant_id, current_user.id, template["definition"],
                                  origin=imported_origin(slug), license=LICENSE)
    except ApiError as err:
        flash(_("Could not import the template: %(code)s.", code=err.code), "error")
        return redirect(url_for("studio.template_market"))
    db.session.commit()
    flash(_("Imported “%(title)s” as an unpublished draft.", title=template["title"]), "ok")
    return redirect(url_for("studio.app_page", app_id=version.app_id))


def _page_context(studio_app, selected: int | None) -> dict:
    """Everything the app page shows."""
    versions = apps.list_versions(studio_app)
    current = next((v for v in versions if v.version == selected), versions[0])
    live = [r for r in records.latest_records(studio_app) if r.version == studio_app.active_version]
    definitions = {v.version: v.definition for v in versions}
    summaries = chart_summaries(studio_app.tenant_id, studio_app.id, definitions)
    live_version = _live_version(studio_app, versions)
    definition, script = split_script(current.definition)
    pick = _default_pick(studio_app, versions)
    return {"app": studio_app, "versions": versions, "current": current, "ledger": live,
            "authors": apps.author_emails(versions),
            "live_version": live_version, "permissions": PUBLISH_PERMISSIONS,
            "compare_from": pick[0], "compare_to": pick[1],
            "publish_changes": live_version and _comparison(live_version, current),
            "figures": [chart_figure(s) for s in summaries.get(str(current.version), [])],
            "editor_text": json.dumps(definition, ensure_ascii=False, indent=2),
            "script_text": script, "script_limit": LIMITS["script_source_chars"],
            "idempotency_key": uuid.uuid4(), "workbench_entry": workbench.entry_of(studio_app),
            "submitters": records.submitters(live),
            "provenance": {"origin": shown_origin(studio_app.origin or ""),
                           "license": shown_license(studio_app.license or "")}}


def _live_version(studio_app, versions: list):
    """The live version (also when it is older than the newest versions listed), or None."""
    if studio_app.active_version is None:
        return None
    return next((v for v in versions if v.version == studio_app.active_version), None) \
        or apps.get_version(studio_app, studio_app.active_version)


def _default_pick(studio_app, versions: list) -> tuple[int, int]:
    """The two versions compared unless the administrator picks others: the live version against
    the newest one, or the one before the newest when that is live or nothing is."""
    newest = versions[0].version
    live = studio_app.active_version
    if live is not None and live != newest:
        return live, newest
    return (versions[1].version if len(versions) > 1 else newest), newest


def _picked_version(studio_app, name: str, default: int):
    """The version a query argument names (404 when the application has none of that number), or
    the default when the argument is missing or not a number."""
    number = form_integer(request.args.get(name))
    return apps.get_version(studio_app, default if number is None else number)


def _comparison(earlier, later):
    """What changes from one version to another, in words."""
    return described(earlier.definition, later.definition, compare(earlier.definition, later.definition))


def _render_app(studio_app, selected: int | None = None, status: int = 200, **extra):
    """Render the app page (422 and friends re-render it with the problem shown)."""
    context = {**_page_context(studio_app, selected), **extra}
    return render_template("studio/app.html", **context), status


@bp.get("/extensions/<uuid:app_id>")
@admin_console_required
def app_page(app_id: uuid.UUID):
    """One application: versions, editor, simulation, publishing, ledger and charts."""
    found = apps.get_app(current_member().tenant_id, app_id)
    return _render_app(found, form_integer(request.args.get("version")))


@bp.get("/extensions/<uuid:app_id>/compare")
@admin_console_required
def compare_page(app_id: uuid.UUID):
    """Two versions side by side: what changed from `from` to `to` (by default the live version
    against the newest), in the definition's terms."""
    found = apps.get_app(current_member().tenant_id, app_id)
    versions = apps.list_versions(found)
    earlier, later = (_picked_version(found, name, default)
                      for name, default in zip(("from", "to"), _default_pick(found, versions)))
    listed = [*versions, *(v for v in (earlier, later) if v not in versions)]
    return render_template("studio/compare.html", app=found, versions=listed, earlier=earlier, later=later,
                           comparison=_comparison(earlier, later))


@bp.post("/extensions/<uuid:app_id>/versions")
@admin_console_required
def save_version(app_id: uuid.UUID):
    """Save the advanced editor's JSON and script as a new draft version."""
    found = apps.get_app(current_member().tenant_id, app_id)
    text, script = request.form.get("definition", ""), request.form.get("script", "")
    try:
        version = apps.add_version(found, current_user.id, with_script(parse_definition_text(text), script))
    except ApiError as err:
        db.session.rollback()
        return _render_app(found, status=422, editor_text=text, script_text=script, editor_error=err)
    db.session.commit()
    flash(_("Saved version %(version)s as a draft. Simulate it before publishing.", version=version.version), "ok")
    return redirect(_app_url(found, version.version))


@bp.post("/extensions/<uuid:app_id>/simulate")
@admin_console_required
def simulate(app_id: uuid.UUID):
    """Run the selected version's rules on the form's sample input (nothing is saved)."""
    found = apps.get_app(current_member().tenant_id, app_id)
    version = apps.get_version(found, form_integer(request.form.get("version")) or 0)
    try:
        result = apps.simulate(found, current_user.id, version.version, form_to_input(version.definition, request.form))
    except ApiError as err:
        db.session.rollback()
        return render_template("studio/_simulation.html", version=version, error=err, form=request.form), 422
    db.session.commit()
    # The versions table and the publish section change with the new passing mark: swap them too.
    return render_template("studio/_simulation.html", version=version, result=result, oob=True,
                           **_page_context(found, version.version))


@bp.post("/extensions/<uuid:app_id>/publish")
@admin_console_required
def publish(app_id: uuid.UUID):
    """Publish, re-enable or roll back after the administrator confirmed the permissions."""
    found = apps.get_app(current_member().tenant_id, app_id)
    number = form_integer(request.form.get("version")) or 0
    expected = form_integer(request.form.get("expected_active_version"))
    permissions = PUBLISH_PERMISSIONS if request.form.get("confirm_permissions") == "on" else None
    try:
        apps.publish(found, current_user.id, number, expected, permissions,
                     request.form.get("code_confirmed") == "on", apps.publish_note(request.form.get("note", "")))
    except ApiError as err:
        db.session.rollback()
        flash(str(_PUBLISH_ERRORS.get(err.code) or _("Publishing failed: %(code)s.", code=err.code)), "error")
        return redirect(_app_url(found, number))
    db.session.commit()
    flash(_("Version %(version)s is live.", version=number), "ok")
    return redirect(_app_url(found, number))


_PUBLISH_ERRORS = {
    "simulation_required": _l("Simulate this version successfully before publishing it."),
    "permission_confirmation_required": _l("Tick the box to confirm the permissions."),
    "version_conflict": _l("Someone changed the live version meanwhile; the page now shows the current state."),
    "code_confirmation_required": _l("Confirm the script separately before publishing a version with code."),
    "invalid_note": _l("The publish note takes at most 400 characters, without control characters."),
}


@bp.post("/extensions/<uuid:app_id>/disable")
@admin_console_required
def disable(app_id: uuid.UUID):
    """Stop new submissions (records and the live version number are kept)."""
    found = apps.get_app(current_member().tenant_id, app_id)
    apps.disable(found, current_user.id)
    db.session.commit()
    flash(_("The application is disabled; publish again to re-enable it."), "ok")
    return redirect(_app_url(found))


@bp.post("/extensions/<uuid:app_id>/records")
@admin_console_required
def submit_record(app_id: uuid.UUID):
    """Submit the live version's form; a double submit replays the same record."""
    found = apps.get_app(current_member().tenant_id, app_id)
    try:
        version = apps.live_version(found)
        _record, replayed = records.create_record(
            found, current_user.id, version.version, form_to_input(version.definition, request.form),
            parse_uuid(request.form.get("idempotency_key", ""), "invalid_idempotency_key"))
    except ApiError as err:
        db.session.rollback()
        return _render_app(found, status=422, record_error=err, record_form=request.form)
    db.session.commit()
    flash(_("This submission was already saved.") if replayed else _("Record saved."), "ok")
    return redirect(_app_url(found, anchor="ledger"))


_WORKBENCH_ERRORS = {
    "extension_not_active": _l("Publish the application before adding it to the workbench."),
    "workbench_not_configured": _l("The live version has no workbench settings: add a `workbench` object to the "
                                   "definition, simulate and publish it first."),
    "workbench_limit": _l("The workbench already holds 10 applications: remove one first."),
}


@bp.post("/extensions/<uuid:app_id>/workbench")
@admin_console_required
def add_to_workbench(app_id: uuid.UUID):
    """Let agents and supervisors use the live version's form in the workbench."""
    found = apps.get_app(current_member().tenant_id, app_id)
    try:
        workbench.add_to_workbench(found, current_user.id)
    except ApiError as err:
        db.session.rollback()
        flash(str(_WORKBENCH_ERRORS.get(err.code) or _("Could not add it: %(code)s.", code=err.code)), "error")
        return redirect(_app_url(found, anchor="workbench-entry"))
    db.session.commit()
    flash(_("Added to the workbench: agents and supervisors see its form beside the customer's details."), "ok")
    return redirect(_app_url(found, anchor="workbench-entry"))


@bp.post("/extensions/<uuid:app_id>/workbench/remove")
@admin_console_required
def remove_from_workbench(app_id: uuid.UUID):
    """End the workbench's run entry of the application at once (records and grants stay)."""
    found = apps.get_app(current_member().tenant_id, app_id)
    workbench.remove_from_workbench(found, current_user.id)
    db.session.commit()
    flash(_("Removed from the workbench: open panels refuse their next submission."), "ok")
    if request.form.get("back") == "index":
        return redirect(url_for("studio.index"))
    return redirect(_app_url(found, anchor="workbench-entry"))


# --- AI drafts ----------------------------------------------------------------------------------

def _generate_form(status: int = 200, error: str | None = None, values: dict | None = None):
    """The generate page: requirement, target application, knowledge selector, consent, quota."""
    member = current_member()
    tenant = db.session.get(Tenant, member.tenant_id)
    page = "studio/_generate_form.html" if htmx else "studio/generate.html"
    return render_template(
        page, apps=apps.list_apps(member.tenant_id), model=model_state(), error=error, values=values or {},
        limits=LIMITS, quota=quota.quota_state(member.tenant_id, tenant.ai_points_enabled)), status


@bp.get("/extensions/generate")
@admin_console_required
def generate_page():
    """Draft an application from a written requirement."""
    return _generate_form()


@bp.get("/extensions/generate/knowledge")
@admin_console_required
def generate_knowledge():
    """One page of knowledge metadata for the selector, loaded only when it is opened."""
    page = knowledge_ref.options_page(current_member().tenant_id, request.args.get("cursor"))
    return render_template("studio/_knowledge_options.html", page=page)


@bp.post("/extensions/generate")
@admin_console_required
def generate():
    """Start a generation; the progress partial then polls until it finished."""
    form = request.form
    body = {"prompt": form.get("prompt", ""), "extension_id": form.get("extension_id") or None,
            "knowledge_document_ids": form.getlist("knowledge_document_ids"),
            "knowledge_confirmed": form.get("knowledge_confirmed") == "on"}
    try:
        started = generation.submit(current_member().tenant_id, current_user.id, body)
    except ApiError as err:
        return _generate_form(422, err.code, body)
    return render_template("studio/_generation.html", generation=started)


@bp.get("/extensions/generate/<uuid:generation_id>")
@admin_console_required
def generation_progress(generation_id: uuid.UUID):
    """The progress partial while the job runs; the draft's page once saved; why not otherwise."""
    try:
        found, data, status = generation.outcome(current_member().tenant_id, generation_id)
    except ApiError as err:
        return render_template("studio/_generation.html", error=err)
    if status in (200, 202):  # a routing-rule preview draft is shown, never saved; or still running
        return render_template("studio/_generation.html", generation=found, preview_draft=data.get("definition"))
    flash(_("Draft — simulate and review before publishing. Version %(version)s was generated from your "
            "requirement; nothing is published.", version=data["version"]), "draft")
    target = url_for("studio.app_page", app_id=found.app_id, version=data["version"])
    return redirect_to(target)  # a full page load, which shows the banner
