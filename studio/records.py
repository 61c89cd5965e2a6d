"""Records: saving submissions of the live version, exactly once per idempotency key."""
import time
import uuid

from sqlalchemy import select, update

from core.api import ApiError
from core.config import require_shorter
from core.db import db, end_reads
from core.once import CreateOnce, digest, take_slot
from core.redis import get_redis
from desk.models import Conversation, Customer, Member
from studio.apps import get_version
from studio.catalog import LIMITS
from studio.engine import run_rules
from studio.scripting.client import TASK_SECONDS, run_code, script_error
from studio.models import StudioApp, StudioRecord

RESERVATION_SECONDS = 10  # longer than a script task plus the write: check_timing
RESERVATION_POLL_SECONDS = 0.05
RECORDS = CreateOnce(StudioRecord, ("app_id", "idempotency_key"), "input_digest")


def check_timing() -> None:
    """A submission's key reservation outlasts the script task it covers (and the write after it)."""
    require_shorter(("a script task (studio.scripting.client.TASK_SECONDS)", TASK_SECONDS),
                    ("studio.records.RESERVATION_SECONDS", RESERVATION_SECONDS),
                    "a retried submission could run its script twice")


def latest_records(studio_app: StudioApp) -> list[StudioRecord]:
    """The latest 100 records across all versions, newest first."""
    return list(db.session.scalars(select(StudioRecord).where(
        StudioRecord.app_id == studio_app.id, StudioRecord.tenant_id == studio_app.tenant_id)
        .order_by(StudioRecord.created_at.desc(), StudioRecord.id).limit(LIMITS["list_records"])))


def submitters(records: list[StudioRecord]) -> dict:
    """For the ledger, who submitted each record and from which conversation: {record id:
    (member name, conversation id, customer name)}, in two statements at most."""
    if not records:
        return {}
    tenant_id = records[0].tenant_id
    user_ids = {r.created_by for r in records if r.created_by}
    conversation_ids = {r.conversation_id for r in records if r.conversation_id}
    names = dict(db.session.execute(select(Member.user_id, Member.display_name).where(
        Member.tenant_id == tenant_id, Member.user_id.in_(user_ids))).all()) if user_ids else {}
    customers = dict(db.session.execute(
        select(Conversation.id, Customer.name).join(Customer, Customer.id == Conversation.customer_id)
        .where(Conversation.tenant_id == tenant_id, Conversation.id.in_(conversation_ids))).all()
    ) if conversation_ids else {}
    return {r.id: (names.get(r.created_by), r.conversation_id, customers.get(r.conversation_id)) for r in records}


def _app_key(app_id: uuid.UUID, key: uuid.UUID) -> dict:
    """The unique key of a record: its application and idempotency key."""
    return {"app_id": app_id, "idempotency_key": key}


def _run_script_once(app_id: uuid.UUID, tenant_id: uuid.UUID, key: uuid.UUID, digest: str,
                     definition: dict, result: dict) -> StudioRecord | None:
    """Run the script on `result` unless a twin with this key did; the twin's record, else None.

    The key is reserved in Redis before the script runs, so parallel retries of one submission
    run it once: the others wait, then replay the record the first one saved. The reservation is
    released early only when the script fails (nothing was saved, so a retry may run it again);
    after a success it lapses by itself, by when the record is committed or never will be.
    No transaction is held while waiting for the twin or the runner.
    """
    reservation = get_redis().lock(f"studio:submission:{app_id}:{key}", timeout=RESERVATION_SECONDS)
    deadline = time.monotonic() + RESERVATION_SECONDS
    while not reservation.acquire(blocking=False):
        if time.monotonic() > deadline:
            raise script_error("code_runner_busy", headers={"Retry-After": "1"})
        time.sleep(RESERVATION_POLL_SECONDS)
        twin = RECORDS.existing(_app_key(app_id, key), digest)
        end_reads()
        if twin is not None:
            return twin
    twin = RECORDS.existing(_app_key(app_id, key), digest)
    end_reads()
    if twin is not None:
        return twin
    try:
        result["data"] = run_code(tenant_id, definition, result["data"])
    except BaseException:
        reservation.release()
        raise
    return None


def _not_counted(app_id: uuid.UUID, version_no: int) -> ApiError:
    """Why a record could not be counted: the live state changed meanwhile, or the limit."""
    live = db.session.execute(select(StudioApp.enabled, StudioApp.active_version)
                              .where(StudioApp.id == app_id)).one()
    if tuple(live) != (True, version_no):
        return ApiError("extension_not_active", 409)
    return ApiError("record_limit", 429)


def create_record(studio_app: StudioApp, actor_id: uuid.UUID | None, version_no: int, raw_input: object,
                  key: uuid.UUID, conversation_id: uuid.UUID | None = None,
                  live_definition: dict | None = None) -> tuple[StudioRecord, bool]:
    """Save a submission of the live version once per key; returns (record, replayed). A
    submission from the workbench names its conversation and hands over the definition of
    `version_no` it already loaded.

    Rules and a script run before anything is written; a script's wait holds no transaction.
    On `record_limit` the new row is already flushed: the caller rolls back, as after any error.
    """
    if not studio_app.enabled or studio_app.active_version != version_no:
        raise ApiError("extension_not_active", 409)
    app_id, tenant_id, request_digest = studio_app.id, studio_app.tenant_id, digest(raw_input)
    existing = RECORDS.existing(_app_key(app_id, key), request_digest)
    if existing is not None:
        return existing, True
    definition = live_definition if live_definition is not None else get_version(studio_app, version_no).definition
    result = run_rules(definition, raw_input)
    if definition.get("code") is not None:
        twin = _run_script_once(app_id, tenant_id, key, request_digest, definition, result)
        if twin is not None:
            return twin, True
    record, replayed = RECORDS.insert({
        **_app_key(app_id, key), "tenant_id": tenant_id, "version": version_no, "data": result["data"],
        "trace": result["trace"], "created_by": actor_id,
        "conversation_id": conversation_id}, request_digest)
    if replayed:
        return record, True
    # A compare-and-swap on the live state too: a disable or a publish that committed while the
    # rules (or a script) ran must not let this submission of the old state through.
    take_slot(update(StudioApp).where(
        StudioApp.id == app_id, StudioApp.enabled.is_(True), StudioApp.active_version == version_no,
        StudioApp.record_count < LIMITS["records_per_app"])
        .values(record_count=StudioApp.record_count + 1), lambda: _not_counted(app_id, version_no))
    return record, False
