"""Console JSON API of the Studio app builder under /api/extensions."""
import re
import uuid

from flask import Blueprint, current_app, request
from flask_login import current_user

from core.api import ApiError, ok, parse_uuid
from core.db import db
from core.guards import console_json_body, only_properties
from core.web import answer_unreachable_stores, close_when_off
from desk.sessions import admin_console_required, current_member
from core.queue import commit_then_enqueue
from studio import actions, apps, generation, knowledge_ref, records
from core.capabilities import CAPABILITY_VERSION, CATALOG
from studio.catalog import LIMITS, PUBLISH_PERMISSIONS, console_overview
from studio.charts import chart_summaries
from studio.compare import compare
from studio.serialize import app_json, binding_json, entry_json, record_json, run_json, version_json

bp = Blueprint("studio_api", __name__, url_prefix="/api/extensions")
answer_unreachable_stores(bp, "extensions_unavailable")
close_when_off(bp, "EXTENSIONS_ENABLED", "extensions_disabled")


def _body(allowed: tuple[str, ...], required: tuple[str, ...] = ()) -> dict:
    """The guarded JSON body with only `allowed` properties and every `required` one."""
    return only_properties(console_json_body(LIMITS["body_bytes"]), allowed, required)


def _version_number(value: object) -> int:
    """An application version: an integer of at least 1 (not a boolean)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ApiError("invalid_version", 400)
    return value


def _version_created(version) -> tuple:
    """201 with the saved version's identifiers, validated definition and hash."""
    return ok({"extension_id": str(version.app_id), "version": version.version,
               "definition": version.definition, "definition_hash": version.definition_hash}, 201)


def _tenant_app(app_id: uuid.UUID):
    """The session tenant's application."""
    return apps.get_app(current_member().tenant_id, app_id)


@bp.get("/", strict_slashes=False)
@admin_console_required
def index():
    """Applications and everything the console needs to start."""
    member = current_member()
    return ok({"apps": [app_json(a) for a in apps.list_apps(member.tenant_id)], **console_overview()})


@bp.get("/capabilities")
@admin_console_required
def capabilities():
    """The capability catalog."""
    return ok({"capability_version": CAPABILITY_VERSION, "capabilities": CATALOG})


@bp.get("/knowledge-options")
@admin_console_required
def knowledge_options():
    """Metadata of the tenant's knowledge documents for the generation selector, 20 per page;
    never a body."""
    return ok(knowledge_ref.options_page(current_member().tenant_id, request.args.get("cursor")))


@bp.post("/generate")
@admin_console_required
def generate():
    """Draft a definition with the model: 201 with the saved draft version when it finished within
    the wait, else 202 with the generation to poll; 422 for an unsupported requirement."""
    body = _body(("prompt", "extension_id", "knowledge_document_ids", "knowledge_confirmed"), ("prompt",))
    tenant_id = current_member().tenant_id
    started = generation.submit(tenant_id, current_user.id, body)
    return _generation_answer(tenant_id, started.id, current_app.config["GENERATION_WAIT_SECONDS"])


@bp.get("/generate/<uuid:generation_id>")
@admin_console_required
def generation_status(generation_id: uuid.UUID):
    """A generation's outcome as POST /generate answers it (202 while it runs)."""
    return _generation_answer(current_member().tenant_id, generation_id, 0)


def _generation_answer(tenant_id: uuid.UUID, generation_id: uuid.UUID, wait: float):
    """The generation's answer once finished or after `wait` seconds."""
    data, status = generation.answer(generation.wait_for(tenant_id, generation_id, wait))
    return ok(data, status)


@bp.post("/", strict_slashes=False)
@admin_console_required
def create():
    """Create an application from a definition (version 1, unpublished)."""
    body = _body(("definition",), ("definition",))
    version = apps.create_app(current_member().tenant_id, current_user.id, body["definition"])
    db.session.commit()
    return _version_created(version)


@bp.get("/<uuid:app_id>")
@admin_console_required
def detail(app_id: uuid.UUID):
    """One application with its versions, latest records and chart summaries."""
    found = _tenant_app(app_id)
    versions = apps.list_versions(found)
    data = {"app": app_json(found), "versions": [version_json(v) for v in versions],
            "records": [record_json(r) for r in records.latest_records(found)],
            "permissions": PUBLISH_PERMISSIONS}
    summaries = chart_summaries(found.tenant_id, found.id, {v.version: v.definition for v in versions})
    if summaries:
        data["chart_summaries"] = summaries
    return ok(data)


def _query_version(text: str | None) -> int:
    """A version number from the query string: an integer, else 400 invalid_version (one that no
    version has is the lookup's 404)."""
    if text is None or not re.fullmatch(r"-?[0-9]{1,12}", text):
        raise ApiError("invalid_version", 400)
    return int(text)


@bp.get("/<uuid:app_id>/versions/compare")
@admin_console_required
def compare_versions(app_id: uuid.UUID):
    """What changed from version `from` to version `to`, change by change (issue 38)."""
    numbers = [_query_version(request.args.get(name)) for name in ("from", "to")]
    found = _tenant_app(app_id)
    earlier, later = (apps.get_version(found, number) for number in numbers)
    return ok({"from": earlier.version, "to": later.version, "from_hash": earlier.definition_hash,
               "to_hash": later.definition_hash,
               "changes": [change.as_json() for change in compare(earlier.definition, later.definition)]})


@bp.post("/<uuid:app_id>/versions")
@admin_console_required
def new_version(app_id: uuid.UUID):
    """Save a changed definition as a new draft version."""
    found = _tenant_app(app_id)
    body = _body(("definition",), ("definition",))
    version = apps.add_version(found, current_user.id, body["definition"])
    db.session.commit()
    return _version_created(version)


@bp.post("/<uuid:app_id>/simulate")
@admin_console_required
def simulate(app_id: uuid.UUID):
    """Run a version's rules on sample input; nothing is saved but the passing mark."""
    found = _tenant_app(app_id)
    body = _body(("version", "input"), ("version", "input"))
    result = apps.simulate(found, current_user.id, _version_number(body["version"]), body["input"])
    db.session.commit()
    return ok(result)


@bp.post("/<uuid:app_id>/publish")
@admin_console_required
def publish(app_id: uuid.UUID):
    """Publish, re-enable or roll back to a simulated version."""
    found = _tenant_app(app_id)
    body = _body(("version", "expected_active_version", "permissions", "code_confirmed"),
                 ("version", "expected_active_version"))
    expected = body["expected_active_version"]
    if expected is not None:
        expected = _version_number(expected)
    if not isinstance(body.get("code_confirmed", False), bool):
        raise ApiError("invalid_json", 400, detail="code_confirmed")
    published = apps.publish(found, current_user.id, _version_number(body["version"]), expected,
                             body.get("permissions"), body.get("code_confirmed", False))
    db.session.commit()
    return ok({"enabled": published.enabled, "active_version": published.active_version})


@bp.post("/<uuid:app_id>/disable")
@admin_console_required
def disable(app_id: uuid.UUID):
    """Stop new submissions."""
    found = _tenant_app(app_id)
    _body(())
    apps.disable(found, current_user.id)
    db.session.commit()
    return ok({"enabled": False, "active_version": found.active_version})


@bp.post("/<uuid:app_id>/records")
@admin_console_required
def create_record(app_id: uuid.UUID):
    """Save a submission of the live version; a retried key returns the original record."""
    found = _tenant_app(app_id)
    body = _body(("version", "input", "idempotency_key"), ("version", "input", "idempotency_key"))
    version = _version_number(body["version"])
    record, replayed = records.create_record(found, current_user.id, version, body["input"],
                                             parse_uuid(body["idempotency_key"], "invalid_idempotency_key"))
    if replayed:
        answer = {"record_id": str(record.id), "replayed": True}
    else:
        answer = {"record_id": str(record.id), "data": record.data, "trace": record.trace,
                  "external_effects": False}
    db.session.commit()
    return ok(answer)


@bp.get("/<uuid:app_id>/actions")
@admin_console_required
def action_bindings(app_id: uuid.UUID):
    """Every version's actions with their latest binding; a bearer token is never returned."""
    return ok({"actions": [entry_json(entry) for entry in actions.entries(_tenant_app(app_id))]})


@bp.post("/<uuid:app_id>/actions")
@admin_console_required
def action_operation(app_id: uuid.UUID):
    """Bind or revoke a version's address, or run an action on a record of the live version."""
    found = _tenant_app(app_id)
    body = console_json_body(LIMITS["body_bytes"])
    operation = body.get("operation")
    if operation == "run":
        return _run_action(found, body)
    if operation != "bind":
        raise ApiError("invalid_operation", 400, detail="operation")
    if "enabled" in body:
        only_properties(body, ("operation", "version", "action_key", "enabled"), ("version", "action_key"))
        if body["enabled"] is not False:
            raise ApiError("invalid_json", 400, detail="enabled")
        binding = actions.revoke(found, current_user.id, _version_number(body["version"]), _action_key(body))
        db.session.commit()
        return ok(binding_json(binding, actions.binder_email(binding)))
    only_properties(body, ("operation", "version", "action_key", "endpoint", "bearer_token", "confirm"),
                    ("version", "action_key", "endpoint", "confirm"))
    confirmed = _confirmation(body)
    binding = actions.bind(found, current_user.id, _version_number(body["version"]), _action_key(body),
                           body["endpoint"], body.get("bearer_token"), confirmed=confirmed)
    db.session.commit()
    return ok(binding_json(binding, current_user.email), 201)


def _run_action(studio_app, body: dict):
    """Run an action once on a record: 200 with the outcome, 202 while the POST is pending (repeat
    the request to read it; it never runs twice)."""
    only_properties(body, ("operation", "version", "record_id", "action_key", "binding_id", "confirm"),
                    ("version", "record_id", "action_key", "confirm"))
    confirmed = _confirmation(body)
    binding_id = parse_uuid(body["binding_id"], "invalid_binding_id") if "binding_id" in body else None
    run, replayed, job = actions.request_run(
        studio_app, current_user.id, _version_number(body["version"]),
        parse_uuid(body["record_id"], "invalid_record_id"), _action_key(body), binding_id, confirmed=confirmed)
    answer = {**run_json(run), "replayed": replayed}
    commit_then_enqueue(*([job] if job else []))
    return ok(answer, 202 if answer["status"] in actions.PENDING else 200)


def _action_key(body: dict) -> str:
    """The action key of a request: a string, else 400 invalid_action_key."""
    if not isinstance(body["action_key"], str):
        raise ApiError("invalid_action_key", 400)
    return body["action_key"]


def _confirmation(body: dict) -> bool:
    """Whether the request confirms (`confirm` is JSON true; any other value does not). The service
    decides what an unconfirmed request gets; it is asked here, before the other properties are
    parsed, so a missing confirmation keeps winning over a malformed property."""
    confirmed = body["confirm"] is True
    actions.require_confirmation(confirmed)
    return confirmed
