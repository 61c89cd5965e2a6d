"""Records: saving submissions of the live version, exactly once per idempotency key."""
import time
import uuid

from sqlalchemy import select, update

from core.api import ApiError
from core.db import db, insert_unless_present
from core.redis import get_redis
from studio.apps import get_version
from studio.catalog import LIMITS
from studio.engine import input_digest, run_rules
from studio.scripts import run_code, script_error
from studio.models import StudioApp, StudioRecord

LEDGER_LIMIT = 100
RESERVATION_SECONDS = 10  # longer than a script task (2 s) plus the write
RESERVATION_POLL_SECONDS = 0.05


def latest_records(found: StudioApp) -> list[StudioRecord]:
    """The latest 100 records across all versions, newest first."""
    return list(db.session.scalars(select(StudioRecord).where(
        StudioRecord.app_id == found.id, StudioRecord.tenant_id == found.tenant_id)
        .order_by(StudioRecord.created_at.desc(), StudioRecord.id).limit(LEDGER_LIMIT)))


def _find_by_key(found: StudioApp, key: uuid.UUID) -> StudioRecord | None:
    """The record saved earlier under this idempotency key, if any."""
    return db.session.scalar(select(StudioRecord).where(
        StudioRecord.app_id == found.id, StudioRecord.idempotency_key == key))


def _replay(existing: StudioRecord, digest: str) -> tuple[StudioRecord, bool]:
    """Return the original record for an identical retry; refuse a key reused for other input."""
    if existing.input_digest != digest:
        raise ApiError("idempotency_conflict", 409)
    return existing, True


def _run_script_once(found: StudioApp, key: uuid.UUID, digest: str, definition: dict,
                     result: dict) -> tuple[StudioRecord, bool] | None:
    """Run the script on `result` unless a twin with this key did; the twin's replay, else None.

    The key is reserved in Redis before the script runs, so parallel retries of one submission
    run it once: the others wait, then replay the record the first one saved. The reservation is
    released early only when the script fails (nothing was saved, so a retry may run it again);
    after a success it lapses by itself, by when the record is committed or never will be.
    """
    reservation = get_redis().lock(f"studio:submission:{found.id}:{key}", timeout=RESERVATION_SECONDS)
    deadline = time.monotonic() + RESERVATION_SECONDS
    while not reservation.acquire(blocking=False):
        if time.monotonic() > deadline:
            raise script_error("code_runner_busy", headers={"Retry-After": "1"})
        time.sleep(RESERVATION_POLL_SECONDS)
        existing = _find_by_key(found, key)
        if existing is not None:
            return _replay(existing, digest)
    existing = _find_by_key(found, key)
    if existing is not None:
        return _replay(existing, digest)
    try:
        result["data"] = run_code(found.tenant_id, definition, result["data"])
    except BaseException:
        reservation.release()
        raise
    return None


def create_record(found: StudioApp, actor_id: uuid.UUID | None, version_no: int, raw_input: object,
                  key: uuid.UUID) -> tuple[StudioRecord, bool]:
    """Save a submission of the live version; returns (record, replayed).

    On `record_limit` the new row is already flushed: the caller rolls back, as after any error.
    """
    if not found.enabled or found.active_version != version_no:
        raise ApiError("extension_not_active", 409)
    digest = input_digest(raw_input)
    existing = _find_by_key(found, key)
    if existing is not None:
        return _replay(existing, digest)
    definition = get_version(found, version_no).definition
    result = run_rules(definition, raw_input)
    if definition.get("code") is not None:
        twin = _run_script_once(found, key, digest, definition, result)
        if twin is not None:
            return twin
    record = insert_unless_present(StudioRecord, ("app_id", "idempotency_key"), {
        "tenant_id": found.tenant_id, "app_id": found.id, "version": version_no, "data": result["data"],
        "trace": result["trace"], "idempotency_key": key, "input_digest": digest, "created_by": actor_id})
    if record is None:  # a concurrent retry saved this key first
        return _replay(_find_by_key(found, key), digest)
    # A compare-and-swap on the live state too: a disable or a publish that committed while the
    # rules (or a script) ran must not let this submission of the old state through.
    counted = db.session.execute(update(StudioApp).where(
        StudioApp.id == found.id, StudioApp.enabled.is_(True), StudioApp.active_version == version_no,
        StudioApp.record_count < LIMITS["records_per_app"])
        .values(record_count=StudioApp.record_count + 1))
    if counted.rowcount != 1:
        live = db.session.execute(select(StudioApp.enabled, StudioApp.active_version)
                                  .where(StudioApp.id == found.id)).one()
        if tuple(live) != (True, version_no):
            raise ApiError("extension_not_active", 409)
        raise ApiError("record_limit", 429)
    return record, False
