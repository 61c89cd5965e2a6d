"""An external application's own records: validated, created once per key, listed by keyset."""
import json
import math
import re
import uuid
from typing import NamedTuple

from sqlalchemy import select, update

from core.api import ApiError
from core.clock import iso
from core.db import db
from core.once import CreateOnce, digest, take_slot
from core.text import storable
from openapi.keyset import PAGE_SIZE, page
from openapi.models import OpenApp, OpenRecord
from openapi.webhooks import add_record_event

RECORDS_PER_APP = 10_000
RECORDS = CreateOnce(OpenRecord, ("app_id", "idempotency_key"), "request_digest")
MAX_FIELDS = 32
STRING_CHARS = 2_000
MAX_NUMBER = 1.7976931348623157e308  # a JSON number a client can parse back as a double
DATA_BYTES = 16_000
FIELD_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,31}", re.ASCII)
FORBIDDEN_NAMES = frozenset({"tenant_id", "constructor", "prototype", "__proto__"})


def record_json(record: OpenRecord) -> dict:
    """A record as the API returns it."""
    return {"record_id": str(record.id), "data": record.data, "created_at": iso(record.created_at)}


def list_records(app: OpenApp, after: uuid.UUID | None) -> dict:
    """One page of this application's own records, ordered by id (keyset)."""
    query = select(OpenRecord).where(OpenRecord.app_id == app.id, OpenRecord.tenant_id == app.tenant_id)
    if after is not None:
        query = query.where(OpenRecord.id > after)
    return page(list(db.session.scalars(query.order_by(OpenRecord.id).limit(PAGE_SIZE + 1))), record_json)


def _valid_value(value: object) -> bool:
    """A flat value: string (≤2,000 characters, no NUL or lone surrogate), finite number, bool, null."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        return abs(value) <= MAX_NUMBER and math.isfinite(value)  # huge integers would overflow isfinite
    if isinstance(value, str):
        return len(value) <= STRING_CHARS and storable(value)
    return False


def validate_data(data: object) -> None:
    """Check record data: flat values, known shapes, at most 16,000 bytes serialized."""
    if not isinstance(data, dict) or len(data) > MAX_FIELDS:
        raise ApiError("invalid_record", 400)
    for name, value in data.items():
        if not FIELD_NAME_RE.fullmatch(name) or name in FORBIDDEN_NAMES:
            raise ApiError("invalid_record", 400, detail=f"data.{name}"[:80])
        if not _valid_value(value):
            raise ApiError("invalid_record", 400, detail=f"data.{name}")
    serialized = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if len(serialized.encode("utf-8")) > DATA_BYTES:
        raise ApiError("record_too_large", 413)


class Created(NamedTuple):
    """A record answer: replayed for a repeated key; the event to deliver when one was written."""

    record: OpenRecord
    replayed: bool
    event_id: uuid.UUID | None


def _not_counted(app_id: uuid.UUID) -> ApiError:
    """Why a record could not be counted: the application was revoked meanwhile, or the limit."""
    revoked = db.session.scalar(select(OpenApp.revoked_at).where(OpenApp.id == app_id))
    return ApiError("unauthorized", 401) if revoked else ApiError("record_limit", 429)


def create_record(app: OpenApp, key: uuid.UUID, data: object) -> Created:
    """Create a record once per key; the caller holds the application's row lock.

    On `record_limit` the new row is already flushed: the caller rolls back, as after any error.
    """
    validate_data(data)
    request_digest = digest(data)
    existing = RECORDS.existing({"app_id": app.id, "idempotency_key": key}, request_digest)
    if existing is not None:
        return Created(existing, True, None)
    record, replayed = RECORDS.insert({"tenant_id": app.tenant_id, "app_id": app.id, "data": data,
                                       "idempotency_key": key}, request_digest)
    if replayed:  # without row locks (SQLite) the unique key settles a concurrent twin
        return Created(record, True, None)
    # Also a compare-and-swap on `revoked_at`: where the row lock taken at authentication does not
    # exist (SQLite), a revocation that committed since then still stops this write.
    take_slot(update(OpenApp).where(
        OpenApp.id == app.id, OpenApp.revoked_at.is_(None), OpenApp.record_count < RECORDS_PER_APP)
        .values(record_count=OpenApp.record_count + 1), lambda: _not_counted(app.id))
    event = add_record_event(app, record) if app.webhook_url else None
    db.session.flush()
    return Created(record, False, event.id if event else None)
