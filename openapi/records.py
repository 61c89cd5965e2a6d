"""What an external application reads and writes: customers cut to scopes, its own records."""
import hashlib
import json
import math
import re
import uuid
from typing import NamedTuple

from sqlalchemy import select, update

from core.api import ApiError, parse_uuid
from core.clock import iso
from core.db import db, insert_unless_present
from core.text import storable
from desk.models import Customer
from openapi.models import OpenApp, OpenRecord
from openapi.webhooks import add_record_event

PAGE_SIZE = 50
RECORDS_PER_APP = 10_000
MAX_FIELDS = 32
STRING_CHARS = 2_000
MAX_NUMBER = 1.7976931348623157e308  # a JSON number a client can parse back as a double
DATA_BYTES = 16_000
FIELD_NAME_RE = re.compile(r"[a-z][a-z0-9_]{0,31}", re.ASCII)
FORBIDDEN_NAMES = frozenset({"tenant_id", "constructor", "prototype", "__proto__"})
# Scope -> the customer fields it reveals (`id` is always returned).
CUSTOMER_FIELDS = {
    "customers.basic.read": ("name", "created_at", "updated_at"),
    "customers.contact.read": ("phone", "email"),
    "customers.notes.read": ("support_note",),
}


def parse_cursor(value: str | None) -> uuid.UUID | None:
    """The `after` query parameter: absent, or a UUID in text form (400 invalid_cursor)."""
    return None if value is None else parse_uuid(value, "invalid_cursor")


def _page(rows: list, as_json) -> dict:
    """A list page: up to 50 items and the id to continue after (null at the end)."""
    items = rows[:PAGE_SIZE]
    more = len(rows) > PAGE_SIZE
    return {"items": [as_json(row) for row in items], "next_after": str(items[-1].id) if more else None}


def customer_json(customer: Customer, scopes: list[str]) -> dict:
    """A customer cut to the application's scopes; unauthorized fields are left out."""
    shown = {"id": str(customer.id)}
    for scope, fields in CUSTOMER_FIELDS.items():
        if scope in scopes:
            for name in fields:
                value = getattr(customer, name)
                shown[name] = iso(value) if name.endswith("_at") else value
    if "support_note" in shown and shown["support_note"] is None:
        shown["support_note"] = ""
    return shown


def list_customers(app: OpenApp, after: uuid.UUID | None) -> dict:
    """One page of the tenant's customers, ordered by id (keyset)."""
    query = select(Customer).where(Customer.tenant_id == app.tenant_id)
    if after is not None:
        query = query.where(Customer.id > after)
    rows = list(db.session.scalars(query.order_by(Customer.id).limit(PAGE_SIZE + 1)))
    return _page(rows, lambda customer: customer_json(customer, app.scopes))


def get_customer(app: OpenApp, customer_id: uuid.UUID) -> dict:
    """One customer of the application's tenant (404 for any other)."""
    found = db.session.scalar(select(Customer).where(Customer.id == customer_id,
                                                     Customer.tenant_id == app.tenant_id))
    if found is None:
        raise ApiError("not_found", 404)
    return customer_json(found, app.scopes)


def record_json(record: OpenRecord) -> dict:
    """A record as the API returns it."""
    return {"record_id": str(record.id), "data": record.data, "created_at": iso(record.created_at)}


def list_records(app: OpenApp, after: uuid.UUID | None) -> dict:
    """One page of this application's own records, ordered by id (keyset)."""
    query = select(OpenRecord).where(OpenRecord.app_id == app.id, OpenRecord.tenant_id == app.tenant_id)
    if after is not None:
        query = query.where(OpenRecord.id > after)
    return _page(list(db.session.scalars(query.order_by(OpenRecord.id).limit(PAGE_SIZE + 1))), record_json)


def _valid_value(value: object) -> bool:
    """A flat value: string (≤2,000 characters, no NUL or lone surrogate), finite number, bool, null."""
    if value is None or isinstance(value, bool):
        return True
    if isinstance(value, (int, float)):
        return abs(value) <= MAX_NUMBER and math.isfinite(value)  # huge integers would overflow isfinite
    if isinstance(value, str):
        return len(value) <= STRING_CHARS and storable(value)
    return False


def validate_data(data: object) -> str:
    """Check record data; returns its compact serialization (key order kept) for the digest."""
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
    return serialized


class Created(NamedTuple):
    """A record answer: replayed for a repeated key; the event to deliver when one was written."""

    record: OpenRecord
    replayed: bool
    event_id: uuid.UUID | None


def _find(app: OpenApp, key: uuid.UUID) -> OpenRecord | None:
    """The record this application created earlier under the key, if any."""
    return db.session.scalar(select(OpenRecord).where(OpenRecord.app_id == app.id,
                                                      OpenRecord.idempotency_key == key))


def _replay(existing: OpenRecord, digest: str) -> Created:
    """The original record for the same JSON; a conflict for other JSON under the same key."""
    if existing.request_digest != digest:
        raise ApiError("idempotency_conflict", 409)
    return Created(existing, True, None)


def create_record(app: OpenApp, key: uuid.UUID, data: object) -> Created:
    """Create a record once per key; the caller holds the application's row lock.

    On `record_limit` the new row is already flushed: the caller rolls back, as after any error.
    """
    digest = hashlib.sha256(validate_data(data).encode("utf-8")).hexdigest()
    existing = _find(app, key)
    if existing is not None:
        return _replay(existing, digest)
    record = insert_unless_present(OpenRecord, ("app_id", "idempotency_key"), {
        "tenant_id": app.tenant_id, "app_id": app.id, "data": data, "idempotency_key": key,
        "request_digest": digest})
    if record is None:  # without row locks (SQLite) the unique key settles a concurrent twin
        return _replay(_find(app, key), digest)
    # Also a compare-and-swap on `revoked_at`: where the row lock taken at authentication does not
    # exist (SQLite), a revocation that committed since then still stops this write.
    counted = db.session.execute(update(OpenApp).where(
        OpenApp.id == app.id, OpenApp.revoked_at.is_(None), OpenApp.record_count < RECORDS_PER_APP)
        .values(record_count=OpenApp.record_count + 1))
    if counted.rowcount != 1:
        revoked = db.session.scalar(select(OpenApp.revoked_at).where(OpenApp.id == app.id))
        raise ApiError("unauthorized", 401) if revoked else ApiError("record_limit", 429)
    event = add_record_event(app, record) if app.webhook_url else None
    db.session.flush()
    return Created(record, False, event.id if event else None)
