"""Console pages of record actions: the addresses bound per version and action, and a record's
review page, where an administrator reads the exact payload and target, confirms and follows the
run to its outcome."""
import uuid

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from flask_login import current_user

from core.api import ApiError, parse_uuid
from core.db import db
from core.egress import ADDRESS_RULES, URL_MAX_CHARS, address_refusal
from core.forms import form_integer
from core.queue import commit_then_enqueue
from core.web import close_when_off, htmx
from desk.sessions import admin_console_required, current_member
from studio import actions, apps
from studio.catalog import LIMITS

bp = Blueprint("studio_actions", __name__)
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")

MESSAGES = {
    "invalid_version": _l("Choose a version of this application."),
    "not_found": _l("This version has no such action, or nothing is bound to it."),
    "invalid_action_kind": _l("Only http actions are bound to an address."),
    "invalid_bearer_token": _l("A bearer token holds letters, digits and - . _ ~ + / (then = padding) only, "
                               "up to 4,096 characters."),
    "action_confirmation_required": _l("Tick the confirmation first: nothing was done."),
    "binding_not_active": _l("That address was revoked or replaced meanwhile: review the target again."),
    "extension_not_active": _l("The application is disabled or this is no longer the live version."),
    "record_not_live": _l("This record belongs to an older version: actions run only on records of the live "
                          "version."),
    "action_payload_too_large": _l("The payload is over %(size)s KiB: it cannot be sent.",
                                   size=LIMITS["action_payload_bytes"] // 1024),
    "campaign_field_empty": _l("The record leaves a field the campaign needs empty."),
    "campaign_name_too_long": _l("The campaign name is over %(count)s characters.",
                                 count=actions.CAMPAIGN_NAME_MAX_CHARS),
    "campaign_tier_required": _l("Campaign drafts need the professional tier."),
    "independent_account_required": _l("Campaign drafts need an independent official account of this workspace; "
                                       "a shared account is refused."),
    "action_rate_limited": _l("%(count)s action attempts a minute is this workspace's limit: try again in a minute.",
                              count=LIMITS["action_attempts_per_tenant_per_minute"]),
    "invalid_binding_id": _l("Review the target again: the page named no usable address."),
    "required_field_missing": _l("Bind an address to this action first."),
}

# Why a run failed or awaits verification (run.error), for the outcome shown.
RUN_ERRORS = {
    **ADDRESS_RULES,
    "address_not_public": _l("At the time of the run the host resolved to an internal or otherwise non-public "
                             "address."),
    "dns_failed": _l("At the time of the run the host name did not resolve."),
    "binding_revoked": _l("The address was revoked before the run was sent."),
    "credentials_unreadable": _l("The stored bearer token could not be decrypted (the encryption key changed)."),
    "timeout": _l("No complete answer came within about 10 seconds."),
    "connection_failed": _l("The connection failed or was cut off."),
    "tls_error": _l("The TLS handshake or the certificate check failed."),
    "response_too_large": _l("The answer was larger than the 64 KiB read from it."),
    "interrupted": _l("The worker stopped while sending."),
}


def message(err: ApiError) -> str:
    """What a refusal means, in words (in the page's language)."""
    if err.code == "invalid_endpoint":
        return address_refusal(err.detail)
    found = MESSAGES.get(err.code)
    return _("Refused: %(code)s.", code=err.code) if found is None else str(found)


def _app(app_id: uuid.UUID):
    return apps.get_app(current_member().tenant_id, app_id)


def _bindings_page(studio_app, status: int = 200, refused: dict | None = None):
    """The actions of every version with their addresses; `refused` says which form failed and why."""
    return render_template("studio/actions.html", app=studio_app, entries=actions.entries(studio_app),
                           refused=refused or {}, endpoint_max=URL_MAX_CHARS), status


@bp.get("/extensions/<uuid:app_id>/actions")
@admin_console_required
def bindings(app_id: uuid.UUID):
    """Every version's actions and the address bound to each http action."""
    return _bindings_page(_app(app_id))


def _confirmed() -> bool:
    """Whether the form's confirmation box was ticked; the service decides what follows."""
    return request.form.get("confirm") == "yes"


def _form_target() -> tuple[int | None, str]:
    """The version and action a binding form names."""
    return form_integer(request.form.get("version")), request.form.get("action_key", "")


@bp.post("/extensions/<uuid:app_id>/actions/bind")
@admin_console_required
def bind(app_id: uuid.UUID):
    """Bind an address (and an optional bearer token) to a version's http action, confirmed."""
    found = _app(app_id)
    version, key = _form_target()
    try:
        if version is None:
            raise ApiError("invalid_version", 400)
        binding = actions.bind(found, current_user.id, version, key, request.form.get("endpoint", "").strip(),
                               request.form.get("bearer_token") or None, confirmed=_confirmed())
    except ApiError as err:
        db.session.rollback()
        return _bindings_page(found, 422, {"version": version, "key": key, "message": message(err),
                                           "endpoint": request.form.get("endpoint", "")})
    db.session.commit()
    flash(_("v%(version)s · %(key)s: bound to %(host)s.", version=version, key=key, host=binding.endpoint_host), "ok")
    return redirect(url_for("studio_actions.bindings", app_id=found.id))


@bp.post("/extensions/<uuid:app_id>/actions/revoke")
@admin_console_required
def revoke(app_id: uuid.UUID):
    """Revoke the address of a version's http action."""
    found = _app(app_id)
    version, key = _form_target()
    try:
        actions.revoke(found, current_user.id, version if version is not None else 0, key)
    except ApiError as err:
        db.session.rollback()
        return _bindings_page(found, 422, {"version": version, "key": key, "message": message(err)})
    db.session.commit()
    flash(_("v%(version)s · %(key)s: the address is revoked; nothing more is sent to it.", version=version, key=key),
          "ok")
    return redirect(url_for("studio_actions.bindings", app_id=found.id))


def _review(studio_app, record, status: int = 200, refused: dict | None = None, only: str | None = None):
    """A record's review page: each action's exact payload and target, its run or its form; `only`
    an action's card alone (HTMX), when the record has that action."""
    items = actions.preview(studio_app, record)
    context = {"app": studio_app, "record": record, "refused": refused or {}, "reasons": RUN_ERRORS,
               "describe": message}
    card = next((item for item in items if item["action"]["key"] == only), None)
    if card is not None:
        return render_template("studio/_record_action.html", item=card, **context), status
    return render_template("studio/record_actions.html", items=items,
                           version=apps.get_version(studio_app, record.version), **context), status


@bp.get("/extensions/<uuid:app_id>/records/<uuid:record_id>/actions")
@admin_console_required
def review(app_id: uuid.UUID, record_id: uuid.UUID):
    """Review what each action would send for one record, then run it."""
    found = _app(app_id)
    return _review(found, actions.get_record(found, record_id))


@bp.post("/extensions/<uuid:app_id>/records/<uuid:record_id>/actions/<action_key>/run")
@admin_console_required
def run(app_id: uuid.UUID, record_id: uuid.UUID, action_key: str):
    """Run one action on the record, once, after the administrator confirmed payload and target."""
    found = _app(app_id)
    record = actions.get_record(found, record_id)
    try:
        confirmed = _confirmed()
        actions.require_confirmation(confirmed)  # before the binding id is parsed: that refusal wins
        binding_id = request.form.get("binding_id") or None
        started, _replayed, job = actions.request_run(
            found, current_user.id, form_integer(request.form.get("version")) or 0, record.id, action_key,
            None if binding_id is None else parse_uuid(binding_id, "invalid_binding_id"), confirmed=confirmed)
    except ApiError as err:
        db.session.rollback()
        return _review(found, actions.get_record(found, record_id), 422, {"key": action_key, "message": message(err)},
                       action_key if htmx else None)
    run_id = started.id
    commit_then_enqueue(*([job] if job else []))
    if htmx:
        return _review(found, actions.get_record(found, record_id), only=action_key)
    return redirect(url_for("studio_actions.review", app_id=found.id, record_id=record_id, _anchor=f"run-{run_id}"))


@bp.get("/extensions/<uuid:app_id>/action-runs/<uuid:action_run_id>")
@admin_console_required
def run_status(app_id: uuid.UUID, action_run_id: uuid.UUID):
    """A run's progress (polled while it is pending) or its outcome."""
    found = _app(app_id)
    found_run = actions.get_run(found, action_run_id)
    if not htmx:
        return redirect(url_for("studio_actions.review", app_id=found.id, record_id=found_run.record_id))
    return render_template("studio/_action_run.html", app=found, run=found_run, reasons=RUN_ERRORS)
