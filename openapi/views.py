"""The open platform console page: create, list and revoke applications; see their deliveries.

Credentials are shown once: the POST keeps them (encrypted) in Redis under a random one-time key,
then commits, and redirects to a page that takes them out; reloading that page finds nothing.
"""
import json
import logging
import secrets
import uuid

from flask import Blueprint, abort, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _, lazy_gettext as _l
from flask_login import current_user
from redis.exceptions import RedisError

from core.api import ApiError
from core.clock import utcnow
from core.crypto import decrypt, encrypt
from core.db import db
from core.egress import address_refusal
from core.redis import get_redis
from core.web import close_when_off
from desk.sessions import admin_console_required, current_member
from openapi import apps
from openapi.webhooks import recent_deliveries

bp = Blueprint("openapi", __name__)
close_when_off(bp, "OPEN_PLATFORM_ENABLED", "open_platform_disabled")
log = logging.getLogger(__name__)

SHOWN_ONCE_SECONDS = 300
SCOPE_LABELS = {
    "customers.basic.read": _l("Customers: name and dates"),
    "customers.contact.read": _l("Customers: phone and e-mail (sensitive)"),
    "customers.notes.read": _l("Customers: internal support notes"),
    "app.records.read": _l("This application's records: read"),
    "app.records.write": _l("This application's records: create"),
}
SCOPE_CONFIRMATIONS = {
    "customers.contact.read": "confirm_contact",
    "customers.notes.read": "confirm_notes",
}
# Words for the states the pages show (the stored values stay as they are).
APP_STATUSES = {"active": _l("active"), "expired": _l("expired"), "revoked": _l("revoked")}
DELIVERY_STATUSES = {"pending": _l("pending"), "delivered": _l("delivered"), "failed": _l("failed"),
                     "cancelled": _l("cancelled")}
# An attempt's failure reason (core.delivery, core.egress) in words; any other shows as its code.
ATTEMPT_ERRORS = {
    "in_flight": _l("in flight"),
    "interrupted": _l("interrupted"),
    "no_endpoint": _l("no endpoint"),
    "internal_error": _l("internal error"),
    "timeout": _l("timeout"),
    "tls_error": _l("tls error"),
    "connection_failed": _l("connection failed"),
    "response_too_large": _l("response too large"),
    "invalid_url": _l("invalid url"),
    "https_required": _l("https required"),
    "credentials_in_url": _l("credentials in url"),
    "query_not_allowed": _l("query not allowed"),
    "port_not_allowed": _l("port not allowed"),
    "ipv6_not_supported": _l("ipv6 not supported"),
    "dns_failed": _l("dns failed"),
    "no_ipv4_address": _l("no ipv4 address"),
    "address_not_public": _l("address not public"),
}


def _render_index(status: int = 200, errors: dict | None = None, form=None):
    """The page: the creation form and the tenant's applications."""
    tenant_id = current_member().tenant_id
    return render_template("openapi/index.html", apps=apps.list_apps(tenant_id), now=utcnow(),
                           scope_labels=SCOPE_LABELS, confirmations=SCOPE_CONFIRMATIONS, statuses=APP_STATUSES,
                           errors=errors or {}, form=form or {}, limit=apps.APPS_PER_TENANT), status


@bp.get("/open-platform")
@admin_console_required
def index():
    """External applications with scoped tokens and signed webhooks."""
    return _render_index()


_CREATE_ERRORS = {
    "invalid_name": ("name", _l("Give the application a name of at most 80 characters.")),
    "invalid_scopes": ("scopes", _l("Choose at least one scope.")),
    "invalid_webhook_url": ("webhook_url", None),  # the refused rule says what to change
    "app_limit": ("form", _l("This organisation has created 100 applications (revoked ones count).")),
}


def _form_errors(form) -> dict:
    """What the form lacks (a name, a scope), shown together with the service's refusal: the service
    names only the first problem it finds (or every missing confirmation), the page names them all."""
    errors = {}
    if not form.get("name", "").strip():
        errors["name"] = _CREATE_ERRORS["invalid_name"][1]
    if not form.getlist("scopes"):
        errors["scopes"] = _CREATE_ERRORS["invalid_scopes"][1]
    return errors


def _refusal(err: ApiError) -> dict:
    """The service's refusal next to the field it concerns: each missing confirmation at its checkbox."""
    if err.code == "confirmation_required":
        errors = {}
        for item in err.extra["unconfirmed"]:
            if item == "processing":
                errors["confirm_processing"] = _("Confirm that an external server will process this data.")
            else:
                errors[SCOPE_CONFIRMATIONS[item]] = _("This scope needs its own confirmation.")
        return errors
    field, message = _CREATE_ERRORS.get(err.code, ("form", err.code))
    return {field: message or address_refusal(err.detail)}


@bp.post("/open-platform/apps")
@admin_console_required
def create():
    """Create an application, then show its credentials once."""
    form = request.form
    errors = _form_errors(form)
    try:
        made = apps.create_app(
            current_member().tenant_id, current_user.id, form.get("name"), form.getlist("scopes"),
            form.get("webhook_url"), processing_confirmed=form.get("confirm_processing") == "on",
            confirmed_scopes={scope for scope, field in SCOPE_CONFIRMATIONS.items() if form.get(field) == "on"})
    except ApiError as err:
        errors = {**errors, **_refusal(err)}
    if errors:
        db.session.rollback()
        return _render_index(422, errors, form)
    once = secrets.token_urlsafe(24)
    shown = {"app_id": str(made.app.id), "token": made.token, "signing_secret": made.signing_secret}
    try:
        # Kept before the commit: credentials that could never be shown must not create an application.
        get_redis().set(_once_key(once), encrypt(json.dumps(shown)), ex=SHOWN_ONCE_SECONDS)
    except RedisError:
        db.session.rollback()
        log.error("could not keep new credentials for display; nothing was created")
        return _render_index(503, {"form": _("The credentials could not be kept for display, so nothing "
                                             "was created. Try again in a moment.")}, form)
    db.session.commit()
    return redirect(url_for("openapi.credentials", once=once))


def _once_key(once: str) -> str:
    """Redis key of one set of credentials waiting to be shown."""
    return f"open:credentials:{current_member().tenant_id}:{once}"


@bp.get("/open-platform/created/<once>")
@admin_console_required
def credentials(once: str):
    """Show the token (and signing secret) exactly once; a reload finds nothing."""
    stored = get_redis().getdel(_once_key(once))
    shown = json.loads(decrypt(stored.decode())) if stored else None
    found = apps.get_app(current_member().tenant_id, uuid.UUID(shown["app_id"])) if shown else None
    return render_template("openapi/created.html", shown=shown, app=found, scope_labels=SCOPE_LABELS)


@bp.post("/open-platform/apps/<uuid:app_id>/revoke")
@admin_console_required
def revoke(app_id: uuid.UUID):
    """Revoke an application (after its in-flight writes); undelivered events are cancelled."""
    found = apps.revoke(current_member().tenant_id, current_user.id, app_id)
    db.session.commit()
    flash(_("“%(name)s” is revoked: its token no longer works and undelivered events are cancelled.",
            name=found.name), "ok")
    return redirect(url_for("openapi.index"))


@bp.get("/open-platform/apps/<uuid:app_id>/deliveries")
@admin_console_required
def deliveries(app_id: uuid.UUID):
    """Each event of the application with each of its attempts."""
    found = apps.get_app(current_member().tenant_id, app_id)
    if found.webhook_url is None:
        abort(404)
    return render_template("openapi/deliveries.html", app=found, events=recent_deliveries(found),
                           statuses=DELIVERY_STATUSES, attempt_errors=ATTEMPT_ERRORS)
