"""The desk's JSON endpoints: the signed inbound channel endpoint."""
import logging
import time
import uuid

from flask import Blueprint, request
from redis.exceptions import RedisError
from werkzeug.exceptions import HTTPException

from core.api import ApiError, ok
from core.db import db
from core.guards import parse_json_object, read_limited_body
from core.metrics import INBOUND_MESSAGES
from desk.channels import (INBOUND_BODY_LIMIT, find_channel, parse_inbound, store_inbound,
                           verify_signature)
from desk.events import emit_message_received

log = logging.getLogger(__name__)
bp = Blueprint("desk_api", __name__, url_prefix="/api/channels")


@bp.post("/<uuid:channel_id>/messages")
def inbound_message(channel_id: uuid.UUID):
    """Accept one signed customer message from a channel (counted: accepted, replayed, refused)."""
    try:
        stored = _store(channel_id)
    except (ApiError, HTTPException):
        INBOUND_MESSAGES.labels("refused").inc()
        raise
    INBOUND_MESSAGES.labels("replayed" if stored.duplicate else "accepted").inc()
    return ok({"message_id": str(stored.message_id), "conversation_id": str(stored.conversation_id),
               "duplicate": stored.duplicate}, 200 if stored.duplicate else 201)


def _store(channel_id: uuid.UUID):
    """Verify and store the message; a replay changes nothing."""
    channel = find_channel(channel_id)
    if channel is None:
        raise ApiError("not_found", 404)
    raw = read_limited_body(INBOUND_BODY_LIMIT)
    verify_signature(channel, request.headers.get("X-Channel-Timestamp"),
                     request.headers.get("X-Channel-Signature"), raw, time.time())
    stored = store_inbound(channel, parse_inbound(parse_json_object(raw, repeated="invalid_message")))
    if stored.duplicate:
        db.session.rollback()
    else:
        db.session.commit()
        _emit(stored)
    return stored


def _emit(stored) -> None:
    """Queue the message_received event; the message is stored either way, so Redis failing
    here still answers 201 (a retry would be a duplicate and change nothing)."""
    try:
        emit_message_received(stored.tenant_id, stored.conversation_id, stored.message_id)
    except RedisError as error:
        log.error("message_received for message %s not queued (%s)", stored.message_id,
                  type(error).__name__)
