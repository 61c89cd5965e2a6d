"""Record actions: an administrator runs one action of the live version on one saved record, once.

http: the action's declared fields that are filled, as one JSON object, POSTed through the SSRF-safe
client (`core.egress`, whose rules the address passed when it was bound and passes again at every
run) to the address bound to that version and action, by a job on the `webhooks` queue; at most 8
POSTs are in flight platform-wide (a Redis semaphore) and a tenant makes at most 20 attempts a
minute. campaign: a marketing draft in the desk, made in the request; nothing is sent.

Each (record, action) runs once: its run row is created once (`core.once`) and its id, derived
from the record and the action, is the `x-service-action-id` the receiver deduplicates by. A run is
never sent twice: a timeout or an interruption leaves it `awaiting_verification`. States and HTTP
statuses: docs/decisions.md, "Record actions".
"""
import json
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from datetime import timedelta

from cryptography.fernet import InvalidToken
from flask import current_app
from sqlalchemy import bindparam, exists, insert, literal, select, update

from core import audit
from core.audit import AuditEntry
from core.api import ApiError
from core.clock import utcnow
from core.config import require_shorter
from core.crypto import decrypt_cached, encrypt
from core.db import POSTGRESQL, db, prepared, step_connection, tenant_row
from core.egress import EgressFailed, EgressRefused, address_to_save, post
from core.limits import Semaphore, hit_fixed_window
from core.once import CreateOnce
from core.queue import JobSpec
from core.queue_names import WEBHOOKS
from core.redis import get_redis
from desk import marketing
from desk.models import User
from studio.apps import get_version, list_versions
from studio.catalog import LIMITS
from studio.definition import KEY_RE
from studio.models import StudioActionBinding, StudioActionRun, StudioApp, StudioRecord

ACTION_IDS = uuid.UUID("6f1d3c52-8a4e-4b7e-9a55-2f0c1e7d9b31")  # namespace of x-service-action-id
PENDING = ("queued", "sending")
SLOT_WAIT_SECONDS = 20  # a job waits this long for one of the platform's slots, then fails unsent
SLOT_LEASE_SECONDS = 30  # a slot outlives its POST (the transport deadline)
JOB_SECONDS = 60  # RQ's bound on one run's job: the slot wait and the POST
STUCK_SECONDS = 120  # a run still `sending` this long after it started was interrupted
BEARER_MAX_CHARS = 4_096
BEARER_RE = re.compile(r"[A-Za-z0-9\-._~+/]+=*", re.ASCII)  # RFC 6750 b64token: nothing a header could split on
CAMPAIGN_NAME_MAX_CHARS = 200
USER_AGENT = "CustomStudio-Actions/1"
RUNS = CreateOnce(StudioActionRun, ("id",))  # the id is derived from the record and the action: action_id


def check_timing(cfg: Mapping) -> None:
    """A POST ends within its slot's lease and its job's bound; the sweeper waits for the job."""
    timeout = cfg["ACTION_TIMEOUT_SECONDS"]
    require_shorter(("ACTION_TIMEOUT_SECONDS", timeout), ("studio.actions.SLOT_LEASE_SECONDS", SLOT_LEASE_SECONDS),
                    "a ninth POST could start while the eighth is still in flight")
    require_shorter(("the slot wait plus ACTION_TIMEOUT_SECONDS", SLOT_WAIT_SECONDS + timeout),
                    ("studio.actions.JOB_SECONDS", JOB_SECONDS), "RQ would kill a run waiting for its receiver")
    require_shorter(("studio.actions.JOB_SECONDS", JOB_SECONDS), ("studio.actions.STUCK_SECONDS", STUCK_SECONDS),
                    "the sweeper would call a run still in flight interrupted")


def action_id(record_id: uuid.UUID, action_key: str) -> uuid.UUID:
    """The stable id of an action on a record: the run's id and its `x-service-action-id`."""
    return uuid.uuid5(ACTION_IDS, f"{record_id}:{action_key}")


def actions_of(definition: dict) -> dict[str, dict]:
    """A definition's actions by key."""
    return {action["key"]: action for action in definition.get("actions", [])}


def _action(definition: dict, action_key: str, kind: str | None = None) -> dict:
    """The definition's action of that key (and kind): 404 when it has none, 400 for the wrong kind."""
    action = actions_of(definition).get(action_key)
    if action is None:
        raise ApiError("not_found", 404)
    if kind is not None and action["kind"] != kind:
        raise ApiError("invalid_action_kind", 400)
    return action


# --- bindings -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Entry:
    """One action of one version, with its latest binding (http) and who made it."""

    version: int
    live: bool
    action: dict
    binding: StudioActionBinding | None
    bound_by: str | None


def entries(studio_app: StudioApp) -> list[Entry]:
    """Every version's actions, newest version first, with the latest binding of each."""
    bindings = db.session.execute(
        select(StudioActionBinding, User.email).outerjoin(User, User.id == StudioActionBinding.bound_by)
        .where(StudioActionBinding.app_id == studio_app.id, StudioActionBinding.tenant_id == studio_app.tenant_id)
        .order_by(StudioActionBinding.bound_at.desc(), StudioActionBinding.id)).all()
    latest: dict = {}
    for binding, email in bindings:
        latest.setdefault((binding.version, binding.action_key), (binding, email))
    live = studio_app.active_version if studio_app.enabled else None
    return [Entry(v.version, v.version == live, action, *latest.get((v.version, action["key"]), (None, None)))
            for v in list_versions(studio_app) for action in v.definition.get("actions", [])]


def _checked_endpoint(endpoint: object) -> str:
    """The host of an address that passes the egress rules now: 400 invalid_endpoint naming the rule.

    The DNS lookup holds no transaction (the caller has only read so far)."""
    return address_to_save(endpoint, "invalid_endpoint").host


def _checked_token(token: object) -> str | None:
    """An optional bearer token: printable token characters only, else 400 invalid_bearer_token."""
    if token is None:
        return None
    if not isinstance(token, str) or len(token) > BEARER_MAX_CHARS or not BEARER_RE.fullmatch(token):
        raise ApiError("invalid_bearer_token", 400)
    return token


def _end_current(studio_app: StudioApp, version: int, action_key: str, actor_id: uuid.UUID) -> int:
    """Disable the enabled binding of a version's action; how many there were (0 or 1)."""
    return db.session.execute(update(StudioActionBinding).where(
        StudioActionBinding.app_id == studio_app.id, StudioActionBinding.tenant_id == studio_app.tenant_id,
        StudioActionBinding.version == version, StudioActionBinding.action_key == action_key,
        StudioActionBinding.enabled.is_(True)).values(enabled=False, revoked_at=utcnow(), revoked_by=actor_id)).rowcount


def _lock(studio_app: StudioApp) -> None:
    """Serialize the binding changes of one application (its row lock)."""
    db.session.execute(select(StudioApp.id).where(StudioApp.id == studio_app.id).with_for_update())


def require_confirmation(confirmed: bool) -> None:
    """An administrator confirms each binding and each run in the request itself: without it, 400
    action_confirmation_required and nothing is read or written. `bind` and `request_run` check it
    before anything else; an adapter that parses more of the request after the confirmation calls
    it first, so a missing confirmation wins over a malformed property as it always has."""
    if confirmed is not True:
        raise ApiError("action_confirmation_required", 400)


def bind(studio_app: StudioApp, actor_id: uuid.UUID, version_no: int, action_key: str, endpoint: object,
         token: object, *, confirmed: bool) -> StudioActionBinding:
    """Bind a public HTTPS address (and an optional bearer token) to a version's http action, only
    when `confirmed` (else 400 action_confirmation_required before any other check); a binding
    already there is replaced, so a new address always needs this confirmed call."""
    require_confirmation(confirmed)
    _action(get_version(studio_app, version_no).definition, action_key, "http")
    secret = _checked_token(token)
    host = _checked_endpoint(endpoint)
    _lock(studio_app)
    _end_current(studio_app, version_no, action_key, actor_id)
    binding = StudioActionBinding(tenant_id=studio_app.tenant_id, app_id=studio_app.id, version=version_no,
                                  action_key=action_key, endpoint=endpoint, endpoint_host=host,
                                  bearer_token=encrypt(secret) if secret else None, bound_by=actor_id)
    db.session.add(binding)
    db.session.flush()
    audit.record(studio_app.tenant_id, actor_id, "studio.action_bound", f"studio_app:{studio_app.id}",
                 {"version": version_no, "action_key": action_key, "binding_id": str(binding.id),
                  "endpoint_host": host, "bearer_token_set": secret is not None})
    return binding


def revoke(studio_app: StudioApp, actor_id: uuid.UUID, version_no: int, action_key: str) -> StudioActionBinding:
    """Disable the enabled binding of a version's http action: 404 when there is none."""
    _action(get_version(studio_app, version_no).definition, action_key, "http")
    _lock(studio_app)
    if not _end_current(studio_app, version_no, action_key, actor_id):
        raise ApiError("not_found", 404)
    binding = db.session.scalar(select(StudioActionBinding).where(
        StudioActionBinding.app_id == studio_app.id, StudioActionBinding.version == version_no,
        StudioActionBinding.action_key == action_key).order_by(StudioActionBinding.bound_at.desc()).limit(1))
    audit.record(studio_app.tenant_id, actor_id, "studio.action_revoked", f"studio_app:{studio_app.id}",
                 {"version": version_no, "action_key": action_key, "binding_id": str(binding.id)})
    return binding


def binder_email(binding: StudioActionBinding) -> str | None:
    """The e-mail of who bound it."""
    return db.session.scalar(select(User.email).where(User.id == binding.bound_by)) if binding.bound_by else None


def enabled_binding(studio_app: StudioApp, version_no: int, action_key: str) -> StudioActionBinding | None:
    """The enabled binding of a version's action, if any."""
    return db.session.scalar(select(StudioActionBinding).where(
        StudioActionBinding.app_id == studio_app.id, StudioActionBinding.tenant_id == studio_app.tenant_id,
        StudioActionBinding.version == version_no, StudioActionBinding.action_key == action_key,
        StudioActionBinding.enabled.is_(True)))


# --- what a run sends ---------------------------------------------------------------------------

def _filled(value: object) -> bool:
    return value is not None and value != ""


def http_body(action: dict, data: dict) -> str:
    """The JSON body: exactly the action's fields that the record has filled, in the action's order;
    422 action_payload_too_large above 24 KiB."""
    payload = {key: data[key] for key in action["fields"] if _filled(data.get(key))}
    body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    if len(body.encode()) > LIMITS["action_payload_bytes"]:
        raise ApiError("action_payload_too_large", 422)
    return body


def campaign_draft(action: dict, data: dict) -> dict:
    """The draft a campaign action makes of a record: name, content and audience tag (None: all
    eligible opted-in recipients); 422 campaign_field_empty naming an unfilled field."""
    draft = {}
    for part, name in (("title", "name_field"), ("body", "content_field"), ("audience_tag", "audience_tag_field")):
        if name not in action:
            draft[part] = None
            continue
        value = data.get(action[name])
        if not _filled(value):
            raise ApiError("campaign_field_empty", 422, detail=action[name])
        draft[part] = value
    if len(draft["title"]) > CAMPAIGN_NAME_MAX_CHARS:
        raise ApiError("campaign_name_too_long", 422, detail=action["name_field"])
    return draft


def preview(studio_app: StudioApp, record: StudioRecord) -> list[dict]:
    """What each action of the live version would do with the record: for the review page."""
    definition = get_version(studio_app, record.version).definition
    shown = []
    for action in definition.get("actions", []):
        item = {"action": action, "run": find_run(studio_app, record.id, action["key"]), "error": None}
        try:
            if action["kind"] == "http":
                item["body"] = json.dumps(json.loads(http_body(action, record.data)), ensure_ascii=False, indent=2)
                item["binding"] = enabled_binding(studio_app, record.version, action["key"])
            else:
                item["draft"] = campaign_draft(action, record.data)
        except ApiError as refused:
            item["error"] = refused
        shown.append(item)
    return shown


# --- runs ---------------------------------------------------------------------------------------

def find_run(studio_app: StudioApp, record_id: uuid.UUID, action_key: str) -> StudioActionRun | None:
    """The run of an action on a record, if it ran."""
    return db.session.scalar(select(StudioActionRun).where(
        StudioActionRun.id == action_id(record_id, action_key), StudioActionRun.tenant_id == studio_app.tenant_id,
        StudioActionRun.app_id == studio_app.id).execution_options(populate_existing=True))


def get_run(studio_app: StudioApp, run_id: uuid.UUID) -> StudioActionRun:
    """One run of the application, read afresh (404 for a foreign or missing one)."""
    return tenant_row(StudioActionRun, studio_app.tenant_id, run_id, StudioActionRun.app_id == studio_app.id,
                      fresh=True)


def get_record(studio_app: StudioApp, record_id: uuid.UUID) -> StudioRecord:
    """One record of the application (404 for a foreign or missing one)."""
    return tenant_row(StudioRecord, studio_app.tenant_id, record_id, StudioRecord.app_id == studio_app.id)


def count_attempt(tenant_id: uuid.UUID) -> None:
    """Count one action attempt of the tenant: 429 action_rate_limited past 20 a minute."""
    window = hit_fixed_window(get_redis(), f"studio:actions:{tenant_id}",
                              LIMITS["action_attempts_per_tenant_per_minute"])
    if not window.allowed:
        raise ApiError("action_rate_limited", 429, headers={"Retry-After": str(window.reset_after)})


def _run_binding(studio_app: StudioApp, version_no: int, action_key: str, binding_id: uuid.UUID | None):
    """The binding an http run names, which must be the enabled one of that version and action."""
    if binding_id is None:
        raise ApiError("required_field_missing", 400, detail="binding_id")
    binding = tenant_row(StudioActionBinding, studio_app.tenant_id, binding_id,
                         StudioActionBinding.app_id == studio_app.id)
    if not binding.enabled or binding.version != version_no or binding.action_key != action_key:
        raise ApiError("binding_not_active", 409)
    return binding


def request_run(studio_app: StudioApp, actor_id: uuid.UUID, version_no: int, record_id: uuid.UUID, action_key: str,
                binding_id: uuid.UUID | None, *, confirmed: bool) -> tuple[StudioActionRun, bool, JobSpec | None]:
    """Run an action of the live version on one of its records, once, only when `confirmed` (else
    400 action_confirmation_required before any other check, a repeated request's too): (run,
    replayed, the job to queue after the commit). A repeated confirmed request answers the
    existing run and executes nothing."""
    require_confirmation(confirmed)
    if not KEY_RE.fullmatch(action_key):  # no definition has such a key (nor would its action id hash)
        raise ApiError("not_found", 404)
    record = get_record(studio_app, record_id)
    existing = find_run(studio_app, record.id, action_key)
    if existing is not None:
        return existing, True, None
    if not studio_app.enabled or studio_app.active_version != version_no:
        raise ApiError("extension_not_active", 409)
    if record.version != version_no:
        raise ApiError("record_not_live", 409)
    action = _action(get_version(studio_app, version_no).definition, action_key)
    if action["kind"] == "http":
        binding = _run_binding(studio_app, version_no, action_key, binding_id)
        inserted = _insert_run(studio_app, actor_id, record, action, http_body(action, record.data), binding.id)
        job = _job(action_id(record.id, action_key)) if inserted else None
        return find_run(studio_app, record.id, action_key), not inserted, job
    if binding_id is not None:
        raise ApiError("invalid_binding_id", 400)
    run, replayed = _request_campaign(studio_app, actor_id, record, action)
    return run, replayed, None


def _request_campaign(studio_app: StudioApp, actor_id: uuid.UUID, record: StudioRecord, action: dict):
    """A campaign run: its draft made in this transaction; (run, replayed)."""
    draft = campaign_draft(action, record.data)
    account = marketing.campaign_account(studio_app.tenant_id)
    body = json.dumps(draft, ensure_ascii=False, separators=(",", ":"))
    if not _insert_run(studio_app, actor_id, record, action, body, None):
        return find_run(studio_app, record.id, action["key"]), True
    made = marketing.create_draft(account, actor_id, draft["title"], draft["body"], draft["audience_tag"],
                                  "studio_action", f"{studio_app.id}:{record.id}:{action['key']}")
    _conclude(action_id(record.id, action["key"]), ("queued",), "draft_created", campaign_id=made.id)
    return find_run(studio_app, record.id, action["key"]), False


def _insert_run(studio_app: StudioApp, actor_id: uuid.UUID, record: StudioRecord, action: dict, body: str,
                binding_id: uuid.UUID | None) -> bool:
    """Count the tenant's attempt and save the run, queued, unless a concurrent twin of this
    request saved it first; whether this call saved it."""
    count_attempt(studio_app.tenant_id)
    _, replayed = RUNS.insert({
        "id": action_id(record.id, action["key"]), "tenant_id": studio_app.tenant_id, "app_id": studio_app.id,
        "record_id": record.id, "version": record.version, "action_key": action["key"], "kind": action["kind"],
        "binding_id": binding_id, "body": body, "status": "queued", "requested_by": actor_id})
    return not replayed


def _job(run_id: uuid.UUID) -> JobSpec:
    """The job that sends an http run (its id collapses duplicates)."""
    return JobSpec("jobs.tasks.run_action", (str(run_id),), WEBHOOKS, job_id=f"action-{run_id}",
                   job_timeout=JOB_SECONDS)


RUN_AUDIT = "studio.action_run"


def _audit_details(run_id: uuid.UUID, run, status: str, http_status: int | None = None, error: str | None = None,
                   campaign_id: uuid.UUID | None = None) -> dict:
    """A run's audit summary: which application and action, the outcome; never a value or the address."""
    details = {"app_id": str(run.app_id), "action_key": run.action_key, "kind": run.kind, "outcome": status,
               "run_id": str(run_id)}
    details.update({name: value for name, value in (("http_status", http_status), ("error", error),
                                                    ("campaign_id", str(campaign_id) if campaign_id else None))
                    if value is not None})
    return details


def _conclude(run_id: uuid.UUID, from_states: tuple[str, ...], status: str, error: str | None = None,
              campaign_id: uuid.UUID | None = None) -> bool:
    """Give a run its outcome in the request's or the sweeper's transaction, once, with its audit
    entry (the caller commits); the job records its own (`_finish`)."""
    done = db.session.execute(update(StudioActionRun).where(
        StudioActionRun.id == run_id, StudioActionRun.status.in_(from_states))
        .values(status=status, error=error, campaign_id=campaign_id, finished_at=utcnow())
        .returning(StudioActionRun.tenant_id, StudioActionRun.requested_by, StudioActionRun.record_id,
                   StudioActionRun.app_id, StudioActionRun.action_key, StudioActionRun.kind)).first()
    if done is None:
        return False
    audit.record(done.tenant_id, done.requested_by, RUN_AUDIT, f"studio_record:{done.record_id}",
                 _audit_details(run_id, done, status, None, error, campaign_id))
    return True


# --- the job ------------------------------------------------------------------------------------

def platform_slots() -> Semaphore:
    """The platform's 8 slots for action POSTs in flight, shared by every worker through Redis."""
    return Semaphore(get_redis(), "studio:actions:platform", LIMITS["action_concurrency_platform"],
                     SLOT_LEASE_SECONDS)


@prepared
def _statements(dialect: str) -> SimpleNamespace:
    """Every statement of a run's job on this database (`prepared`). The claim is a compare-and-swap
    from `queued` to `sending` while the binding is enabled, so a run is sent at most once; the
    outcome moves the run only from the state it was claimed in. On PostgreSQL the outcome and its
    audit entry are one statement (a data-modifying CTE); elsewhere two in one transaction."""
    run, binding, entry = StudioActionRun.__table__, StudioActionBinding.__table__, AuditEntry.__table__
    what = (run.c.body, run.c.tenant_id, run.c.requested_by, run.c.record_id, run.c.app_id, run.c.action_key,
            run.c.kind)
    of_binding = {name: select(binding.c[name]).where(binding.c.id == run.c.binding_id).scalar_subquery().label(name)
                  for name in ("endpoint", "bearer_token")}
    read = select(run.c.status, *what).where(run.c.id == bindparam("p_run"))
    enabled = exists().where(binding.c.id == run.c.binding_id, binding.c.enabled.is_(True))
    claim = (update(run).where(run.c.id == bindparam("p_run"), run.c.status == "queued", enabled)
             .values(status="sending", started_at=bindparam("p_now")).returning(*what, *of_binding.values()))
    outcome = (update(run).where(run.c.id == bindparam("p_run"), run.c.status == bindparam("p_from"))
               .values(status=bindparam("p_status"), http_status=bindparam("p_http"), error=bindparam("p_error"),
                       finished_at=bindparam("p_now")))
    audited = insert(entry).values(
        id=bindparam("p_audit"), tenant_id=bindparam("p_tenant"), actor_id=bindparam("p_actor"), action=RUN_AUDIT,
        target=bindparam("p_target"), summary=bindparam("p_summary"), created_at=bindparam("p_now"))
    if dialect != POSTGRESQL:
        return SimpleNamespace(read=read, claim=claim, finish=(outcome, audited))
    done = outcome.returning(run.c.id).cte("done")
    columns = ("id", "tenant_id", "actor_id", "action", "target", "summary", "created_at")
    in_one = insert(entry).from_select(columns, select(
        bindparam("p_audit", type_=entry.c.id.type), bindparam("p_tenant", type_=entry.c.tenant_id.type),
        bindparam("p_actor", type_=entry.c.actor_id.type), literal(RUN_AUDIT),
        bindparam("p_target", type_=entry.c.target.type), bindparam("p_summary", type_=entry.c.summary.type),
        bindparam("p_now", type_=entry.c.created_at.type)).select_from(done)).add_cte(done)
    return SimpleNamespace(read=read, claim=claim, finish=(in_one,))


def execute(run_id: uuid.UUID) -> str:
    """Send one queued http run and record its outcome; safe to run twice (only a queued run is
    claimed, and a claimed run is never sent again). It takes a slot first, so a claimed run is
    sent at once; no connection is held while waiting for the slot or the receiver."""
    sql = _statements(db.engine.dialect.name)
    # SemaphoreBusy fails the job unsent; the sweeper queues the run again
    with platform_slots().hold(timeout=SLOT_WAIT_SECONDS):
        with step_connection() as conn:
            run = conn.execute(sql.claim, {"p_run": run_id, "p_now": utcnow()}).one_or_none()
            conn.commit()
        if run is None:
            return _not_claimed(sql, run_id)
        try:
            headers = _headers(run_id, run.bearer_token)
        except InvalidToken:  # the encryption key changed since it was bound
            return _finish(sql, run_id, run, "sending", ("failed", None, "credentials_unreadable"))
        outcome = _send(run.endpoint, run.body.encode(), headers)
    return _finish(sql, run_id, run, "sending", outcome)


def _headers(run_id: uuid.UUID, bearer_token: str | None) -> dict:
    """A run's request headers: its action id and, when one is bound, the decrypted bearer token."""
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, "x-service-action-id": str(run_id)}
    if bearer_token is not None:
        headers["Authorization"] = f"Bearer {decrypt_cached(bearer_token)}"
    return headers


def _not_claimed(sql: SimpleNamespace, run_id: uuid.UUID) -> str:
    """Why a run was not claimed: it is not queued (a twin job, or done: its status), or its
    binding was revoked while it waited (then it fails, unsent)."""
    with step_connection() as conn:
        run = conn.execute(sql.read, {"p_run": run_id}).one_or_none()
    if run is None or run.status != "queued":
        return run.status if run is not None else "missing"
    return _finish(sql, run_id, run, "queued", ("failed", None, "binding_revoked"))


def _send(endpoint: str, body: bytes, headers: dict) -> tuple[str, int | None, str | None]:
    """One POST: (status, the receiver's HTTP status, the failure). Refused before connecting:
    failed; cut off or unreadable once under way: awaiting verification (it may have arrived)."""
    try:
        response = post(endpoint, body, headers, timeout=current_app.config["ACTION_TIMEOUT_SECONDS"])
    except EgressRefused as refused:
        return "failed", None, refused.reason
    except EgressFailed as failed:
        return "awaiting_verification", None, failed.reason
    return ("accepted" if 200 <= response.status < 300 else "failed"), response.status, None


def _finish(sql: SimpleNamespace, run_id: uuid.UUID, run, from_state: str, outcome: tuple) -> str:
    """Record the outcome of a run that is still `from_state`, with its audit entry, atomically;
    the outcome's status, or `not recorded` when the run had moved on."""
    status, http_status, error = outcome
    values = {"p_run": run_id, "p_from": from_state, "p_status": status, "p_http": http_status, "p_error": error,
              "p_now": utcnow(), "p_audit": uuid.uuid4(), "p_tenant": run.tenant_id, "p_actor": run.requested_by,
              "p_target": f"studio_record:{run.record_id}",
              "p_summary": _audit_details(run_id, run, status, http_status, error)}
    with step_connection() as conn:
        changed = conn.execute(sql.finish[0], values).rowcount == 1
        if changed and len(sql.finish) > 1:
            conn.execute(sql.finish[1], values)
        conn.commit()
    return status if changed else "not recorded"


def sweep() -> int:
    """On each tick: a run `sending` past STUCK_SECONDS was interrupted (awaiting verification,
    never resent); a run still `queued` then (its job failed waiting for a slot, or was lost) is
    queued again, as nothing was sent. How many runs it touched."""
    cutoff = utcnow() - timedelta(seconds=STUCK_SECONDS)
    stuck = db.session.scalars(select(StudioActionRun.id).where(
        StudioActionRun.status == "sending", StudioActionRun.started_at < cutoff)).all()
    for run_id in stuck:
        _conclude(run_id, ("sending",), "awaiting_verification", error="interrupted")
    waiting = db.session.scalars(select(StudioActionRun.id).where(
        StudioActionRun.status == "queued", StudioActionRun.created_at < cutoff)).all()
    db.session.commit()
    for run_id in waiting:
        _job(run_id).enqueue()
    return len(stuck) + len(waiting)
