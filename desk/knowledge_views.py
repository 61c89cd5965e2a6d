"""Knowledge console pages (HTMX): documents, versions, publication, validity, and the knowledge
catalog of the template market."""
import logging
import uuid
from datetime import date

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _, lazy_gettext as _l
from flask_login import current_user
from redis.exceptions import RedisError

from core.api import ApiError
from core.clock import to_beijing, utcnow
from core.db import db
from core.forms import form_integer
from core.queue import enqueue
from core.web import htmx
from desk import knowledge
from desk.knowledge_market import ARTICLES, LICENSE, ORIGIN, find_article, localized, shown
from desk.models import KnowledgeDocument
from desk.sessions import admin_console_required, current_member

bp = Blueprint("knowledge", __name__)
log = logging.getLogger(__name__)

PAGE_SIZE = 50
FIELD_MESSAGES = {
    ("title", "required"): _l("Enter a title."),
    ("title", "too_long"): _l("Use at most %(max)s characters.", max=f"{knowledge.TITLE_MAX_CHARS:,}"),
    ("title", "unstorable"): _l("Remove the characters that cannot be stored."),
    ("body", "required"): _l("Enter the text of the document."),
    ("body", "too_long"): _l("Use at most %(max)s characters.", max=f"{knowledge.BODY_MAX_CHARS:,}"),
    ("body", "unstorable"): _l("Remove the characters that cannot be stored (NUL or broken characters)."),
}
VALIDITY_MESSAGES = {
    "invalid_valid_until": _l("Choose a date."),
    "past": _l("Choose today or a later date."),
    "too_far": _l("Choose a date at most %(years)s years ahead.", years=knowledge.VALID_UNTIL_MAX_DAYS // 365),
}


def _conflict(version: int) -> str:
    """What to say when someone else saved a version meanwhile."""
    return _("Someone saved version %(version)s meanwhile. Review it before you continue.", version=version)


def _messages(errors: dict[str, str]) -> dict[str, str]:
    """What to say next to each field."""
    return {field: FIELD_MESSAGES[(field, code)] for field, code in errors.items()}


def _document_url(doc: KnowledgeDocument) -> str:
    """The page of one document."""
    return url_for("knowledge.document", document_id=doc.id)


def _list_context() -> dict:
    """One page of the tenant's documents (metadata only) with their usability."""
    cursor = request.args.get("cursor")
    rows, after = knowledge.metadata_page(current_member().tenant_id, knowledge.parse_cursor(cursor), PAGE_SIZE)
    now = utcnow()
    return {"documents": [(row, knowledge.usability(row, now)) for row in rows], "paged": bool(cursor),
            "next_cursor": knowledge.cursor_text(after) if after is not None else None}


def _render_index(status: int = 200, errors: dict | None = None, form=None):
    """The list page with the form for a new document (422 re-renders it with the problems)."""
    return render_template("desk/knowledge.html", errors=errors or {}, form=form or {},
                           title_max=knowledge.TITLE_MAX_CHARS, body_max=knowledge.BODY_MAX_CHARS,
                           **_list_context()), status


@bp.get("/knowledge")
@admin_console_required
def index():
    """The tenant's knowledge documents, most recently changed first; the list alone for HTMX."""
    if htmx:
        return render_template("desk/_knowledge_list.html", **_list_context())
    return _render_index()


@bp.post("/knowledge")
@admin_console_required
def create():
    """Save a new document as a version-1 draft."""
    errors = knowledge.check_fields(request.form.get("title"), request.form.get("body"))[2]
    if errors:
        return _render_index(422, _messages(errors), request.form)
    doc = knowledge.create_document(current_member().tenant_id, current_user.id, request.form.get("title"),
                                    request.form.get("body"))
    db.session.commit()
    flash(_("Saved as a draft (version 1). Publish it to make it usable for generation."), "ok")
    return redirect(_document_url(doc))


def _status_context(doc: KnowledgeDocument) -> dict:
    """What the status region shows: the state and whether generation may use the document."""
    usability = knowledge.usability(doc, utcnow())
    return {"doc": doc, "usability": usability,
            "pending": usability.reason == knowledge.NOT_SAFE and usability.detail == "pending"}


def _render_document(doc: KnowledgeDocument, status: int = 200, **extra):
    """The document page (422 and 409 re-render it with the problem shown)."""
    context = {"edit_errors": {}, "edit_form": {"title": doc.title, "body": doc.body},
               "validity_error": None, "today": to_beijing(utcnow()).date().isoformat(),
               "valid_until_day": to_beijing(doc.valid_until).date().isoformat() if doc.valid_until else "",
               "title_max": knowledge.TITLE_MAX_CHARS, "body_max": knowledge.BODY_MAX_CHARS,
               **_status_context(doc), **extra}
    return render_template("desk/knowledge_document.html", provenance=shown, **context), status


@bp.get("/knowledge/<uuid:document_id>")
@admin_console_required
def document(document_id: uuid.UUID):
    """One document: state, publication, validity and editor; the status region alone for HTMX."""
    doc = knowledge.get_document(current_member().tenant_id, document_id)
    if htmx:
        return render_template("desk/_knowledge_status.html", **_status_context(doc))
    return _render_document(doc)


@bp.post("/knowledge/<uuid:document_id>/versions")
@admin_console_required
def save_version(document_id: uuid.UUID):
    """Save the edited title and body as the next version, a draft to publish again."""
    doc = knowledge.get_document(current_member().tenant_id, document_id)
    errors = knowledge.check_fields(request.form.get("title"), request.form.get("body"))[2]
    if errors:
        return _render_document(doc, 422, edit_errors=_messages(errors), edit_form=request.form)
    try:
        knowledge.save_version(doc, current_user.id, form_integer(request.form.get("version")) or 0,
                               request.form.get("title"), request.form.get("body"))
    except ApiError:
        db.session.rollback()
        return _render_document(doc, 409, edit_form=request.form,
                                edit_errors={"form": _conflict(doc.version)})
    db.session.commit()
    flash(_("Saved version %(version)s as a draft. Publish it again: generation uses only published, "
            "processed versions.", version=doc.version), "ok")
    return redirect(_document_url(doc))


def _queue_processing(doc: KnowledgeDocument) -> bool:
    """Queue safe processing of the published version (after the commit); False when Redis is
    out of reach, and publishing again queues it again."""
    try:
        enqueue("jobs.tasks.process_knowledge", str(doc.id), job_id=f"process-knowledge-{doc.id}-v{doc.version}")
    except RedisError:
        log.error("could not queue safe processing of knowledge document %s", doc.id)
        return False
    return True


@bp.post("/knowledge/<uuid:document_id>/publish")
@admin_console_required
def publish(document_id: uuid.UUID):
    """Publish the version shown, then queue its safe processing."""
    doc = knowledge.get_document(current_member().tenant_id, document_id)
    try:
        knowledge.publish(doc, current_user.id, form_integer(request.form.get("version")) or 0)
    except ApiError:
        db.session.rollback()
        flash(_conflict(doc.version), "error")
        return redirect(_document_url(doc))
    db.session.commit()
    if _queue_processing(doc):
        flash(_("Version %(version)s is published; safe processing is under way.", version=doc.version), "ok")
    else:
        flash(_("Version %(version)s is published, but safe processing could not be queued. "
                "Publish again in a moment.", version=doc.version), "error")
    return redirect(_document_url(doc))


def _chosen_day(form) -> date | None:
    """The date the validity form asks for; None when the end date is removed."""
    if "clear" in form:
        return None
    try:
        return date.fromisoformat(form.get("valid_until", ""))
    except ValueError:
        raise ApiError("invalid_valid_until", 400) from None


@bp.post("/knowledge/<uuid:document_id>/valid-until")
@admin_console_required
def set_valid_until(document_id: uuid.UUID):
    """Set (or remove) the last Beijing day the document is valid."""
    doc = knowledge.get_document(current_member().tenant_id, document_id)
    try:
        knowledge.set_valid_until(doc, current_user.id, _chosen_day(request.form), utcnow())
    except ApiError as err:
        db.session.rollback()
        return _render_document(doc, 422, validity_error=VALIDITY_MESSAGES[err.detail or err.code],
                                valid_until_day=request.form.get("valid_until", ""))
    db.session.commit()
    flash(_("The document no longer has an end date.") if doc.valid_until is None
          else _("The validity end is saved."), "ok")
    return redirect(_document_url(doc))


@bp.post("/knowledge/<uuid:document_id>/expire")
@admin_console_required
def expire(document_id: uuid.UUID):
    """Withdraw the document now."""
    doc = knowledge.get_document(current_member().tenant_id, document_id)
    knowledge.expire(doc, current_user.id)
    db.session.commit()
    flash(_("The document is expired: generation can no longer use it. Publish it to use it again."), "ok")
    return redirect(_document_url(doc))


@bp.get("/template-market/knowledge")
@admin_console_required
def template_market():
    """Built-in knowledge articles, in the page's language."""
    return render_template("desk/knowledge_market.html", articles=[localized(article) for article in ARTICLES],
                           origin=_(ORIGIN), license=_(LICENSE))


@bp.post("/template-market/knowledge/<slug>/import")
@admin_console_required
def import_article(slug: str):
    """Import an article, in the page's language, as an unpublished version-1 draft keeping its
    origin and licence (stored in English: the document page translates them)."""
    article = find_article(slug)
    if article is None:
        raise ApiError("not_found", 404)
    article = localized(article)
    doc = knowledge.create_document(current_member().tenant_id, current_user.id, article["title"],
                                    article["body"], origin=f"{ORIGIN}: {article['title']}", license=LICENSE)
    db.session.commit()
    flash(_("Imported “%(title)s” as a draft. Review it, then publish it.", title=article["title"]), "ok")
    return redirect(_document_url(doc))
