"""Console page for channels: each channel's inbound address and its outbound endpoint, where the
workbench's replies are delivered (HTTPS, its own signing secret shown once, encrypted at rest)."""
import uuid

from flask import Blueprint, flash, redirect, render_template, request, url_for
from flask_babel import gettext as _
from sqlalchemy import select

from core.api import ApiError
from core.db import db
from core.egress import URL_MAX_CHARS, address_refusal
from core.text import storable
from desk import outbound
from desk.channels import create_channel
from desk.models import Channel
from desk.sessions import admin_console_required, current_member

bp = Blueprint("channels", __name__)

NAME_LIMIT = 80


def _page(status: int = 200, **shown):
    """The tenant's channels, with a secret shown once or an error next to its form."""
    channels = list(db.session.scalars(select(Channel).where(Channel.tenant_id == current_member().tenant_id)
                                       .order_by(Channel.created_at)))
    return (render_template("desk/channels.html", channels=channels, name_max=NAME_LIMIT,
                            url_max=URL_MAX_CHARS, **shown), status)


@bp.get("/channels")
@admin_console_required
def index():
    """The channels and their endpoints."""
    return _page()


@bp.post("/channels")
@admin_console_required
def create():
    """A new channel; its inbound signing secret is shown once."""
    name = request.form.get("name", "").strip()
    if not name or len(name) > NAME_LIMIT or not storable(name):
        return _page(422, name_error=_("Name the channel: 1 to %(max)d characters.", max=NAME_LIMIT), form=request.form)
    channel, secret = create_channel(current_member().tenant_id, name)
    db.session.commit()
    return _page(201, shown_secret={"channel_id": channel.id, "kind": "inbound", "secret": secret})


@bp.post("/channels/<uuid:channel_id>/outbound")
@admin_console_required
def set_outbound(channel_id: uuid.UUID):
    """Deliver the channel's replies to an HTTPS URL with a new signing secret, shown once."""
    try:
        secret = outbound.set_endpoint(current_member().tenant_id, channel_id, request.form.get("url", ""))
    except ApiError as err:
        if err.code != "invalid_outbound_url":
            raise
        db.session.rollback()
        return _page(422, url_error={"channel_id": channel_id, "text": address_refusal(err.detail),
                                     "value": request.form.get("url", "")})
    db.session.commit()
    return _page(200, shown_secret={"channel_id": channel_id, "kind": "outbound", "secret": secret})


@bp.post("/channels/<uuid:channel_id>/outbound/delete")
@admin_console_required
def remove_outbound(channel_id: uuid.UUID):
    """Store the channel's replies only, from now on."""
    outbound.remove_endpoint(current_member().tenant_id, channel_id)
    db.session.commit()
    flash(_("Replies on this channel are stored only from now on."), "ok")
    return redirect(url_for("channels.index"))
