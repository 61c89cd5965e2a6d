"""Console pages for quick replies: the tenant's list (add, edit, delete) and the template market's
built-in bilingual replies to import."""
import uuid

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _, lazy_gettext as _l

from core.api import ApiError
from core.db import db
from core.i18n import current_locale, language_tag
from desk import quick_replies
from desk.quick_reply_market import LANGUAGES, LICENSE, ORIGIN, REPLIES, find_reply, shown
from desk.sessions import admin_console_required, current_member

bp = Blueprint("quick_replies", __name__)

MESSAGES = {
    "title": _l("Give it a title of 1 to %(max)s characters.", max=f"{quick_replies.TITLE_LIMIT:,}"),
    "body": _l("Write the reply: 1 to %(max)s characters.", max=f"{quick_replies.BODY_LIMIT:,}"),
    "placeholder": _l("The reply holds an unknown placeholder. Use {{customer.name}}, {{customer.first_name}}, "
                      "{{agent.name}} or {{conversation.id}}, each with an optional fallback like "
                      "{{customer.first_name | \"there\"}}."),
    "quick_reply_title_taken": _l("Another quick reply has this title: choose another."),
    "quick_reply_limit": _l("This workspace has %(limit)s quick replies, the most it may keep: delete one first.",
                            limit=quick_replies.LIMIT),
}


def _page(status: int = 200, errors: dict | None = None, form: dict | None = None, editing: str | None = None):
    """The list with the add form (and an edit form's errors, when one was refused)."""
    replies = quick_replies.tenant_replies(current_member().tenant_id)
    return render_template("desk/quick_replies.html", replies=replies, errors=errors or {}, form=form or {},
                           editing=editing, limit=quick_replies.LIMIT, title_max=quick_replies.TITLE_LIMIT,
                           body_max=quick_replies.BODY_LIMIT, provenance=shown), status


def _refused(err: ApiError) -> dict:
    """The field an error belongs to and what it says."""
    if err.code == "invalid_quick_reply":
        return {"body" if err.detail == "placeholder" else err.detail: MESSAGES[err.detail]}
    if err.code in MESSAGES:
        return {"title" if err.code == "quick_reply_title_taken" else "form": MESSAGES[err.code]}
    raise err


@bp.get("/quick-replies")
@admin_console_required
def index():
    """The tenant's quick replies."""
    return _page()


@bp.post("/quick-replies")
@admin_console_required
def add():
    """Save a new quick reply."""
    try:
        reply = quick_replies.add_reply(current_member().tenant_id, request.form.get("title", ""),
                                        request.form.get("body", ""))
    except ApiError as err:
        db.session.rollback()
        return _page(422, _refused(err), request.form)
    db.session.commit()
    flash(_("Saved “%(title)s”. Agents pick it by typing / in the composer.", title=reply.title), "ok")
    return redirect(url_for("quick_replies.index"))


@bp.post("/quick-replies/<uuid:reply_id>")
@admin_console_required
def edit(reply_id: uuid.UUID):
    """Change a quick reply's title and text."""
    try:
        quick_replies.edit_reply(current_member().tenant_id, reply_id, request.form.get("title", ""),
                                 request.form.get("body", ""))
    except ApiError as err:
        db.session.rollback()
        if err.code == "not_found":
            raise
        return _page(422, _refused(err), request.form, editing=str(reply_id))
    db.session.commit()
    flash(_("Saved."), "ok")
    return redirect(url_for("quick_replies.index"))


@bp.post("/quick-replies/<uuid:reply_id>/delete")
@admin_console_required
def delete(reply_id: uuid.UUID):
    """Delete a quick reply."""
    quick_replies.delete_reply(current_member().tenant_id, reply_id)
    db.session.commit()
    flash(_("Deleted."), "ok")
    return redirect(url_for("quick_replies.index"))


@bp.get("/template-market/quick_replies")
@admin_console_required
def market():
    """The built-in quick replies in both languages, the page's own first (each stays as written:
    a tenant may serve customers in either)."""
    owned = {reply.title for reply in quick_replies.tenant_replies(current_member().tenant_id)}
    page = language_tag(current_locale())
    languages = dict(sorted(LANGUAGES.items(), key=lambda item: item[0] != page))
    return render_template("desk/quick_reply_market.html", languages=languages, replies=REPLIES, owned=owned,
                           origin=_(ORIGIN), license=_(LICENSE))


def _import(entries: list[dict]) -> tuple[int, int]:
    """Import entries as the tenant's own, skipping titles it has; (imported, skipped). 409
    quick_reply_limit stops at the limit, with what came before it kept."""
    tenant_id, imported, skipped = current_member().tenant_id, 0, 0
    owned = {reply.title for reply in quick_replies.tenant_replies(tenant_id)}
    for entry in entries:
        if entry["title"] in owned:
            skipped += 1
            continue
        quick_replies.add_reply(tenant_id, entry["title"], entry["body"], origin=f"{ORIGIN}: {entry['slug']}",
                                license=LICENSE)
        imported += 1
    return imported, skipped


def _imported(entries: list[dict]):
    """Import and say what happened on the quick replies page."""
    try:
        imported, skipped = _import(entries)
    except ApiError as err:
        if err.code != "quick_reply_limit":
            raise
        db.session.commit()  # those imported before the limit stay
        flash(str(MESSAGES["quick_reply_limit"]), "error")
        return redirect(url_for("quick_replies.index"))
    db.session.commit()
    flash(_("Imported %(imported)s; %(skipped)s you already had kept as they are.", imported=imported, skipped=skipped)
          if skipped else _("Imported %(imported)s.", imported=imported), "ok")
    return redirect(url_for("quick_replies.index"))


@bp.post("/template-market/quick_replies/<slug>/import")
@admin_console_required
def import_reply(slug: str):
    """Import one built-in reply."""
    entry = find_reply(slug)
    if entry is None:
        raise ApiError("not_found", 404)
    return _imported([entry])


@bp.post("/template-market/quick_replies/import")
@admin_console_required
def import_language():
    """Import every built-in reply of one language."""
    language = request.form.get("language", "")
    if language not in LANGUAGES:
        raise ApiError("not_found", 404)
    return _imported([entry for entry in REPLIES if entry["lang"] == language])
