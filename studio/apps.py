"""Applications and their immutable versions: create, version, simulate, publish, disable."""
import uuid

from sqlalchemy import select, update

from core import audit
from core.api import ApiError
from core.clock import utcnow
from core.db import db, tenant_row
from core.once import take_tenant_slot
from core.validation import canonical_hash, check_text
from desk.models import User
from studio.catalog import LIMITS, PUBLISH_PERMISSIONS
from studio.definition import validate_definition
from studio.engine import run_rules
from studio.scripting.client import run_code
from studio.models import StudioApp, StudioTenantUsage, StudioVersion

PUBLISH_NOTE_CHARS = 400  # a publish note, from the console page only (issue 38)


def list_apps(tenant_id: uuid.UUID) -> list[StudioApp]:
    """The tenant's applications, most recently changed first (at most 20)."""
    return list(db.session.scalars(select(StudioApp).where(StudioApp.tenant_id == tenant_id)
                                   .order_by(StudioApp.updated_at.desc()).limit(LIMITS["list_apps"])))


def get_app(tenant_id: uuid.UUID, app_id: uuid.UUID) -> StudioApp:
    """One application of the tenant; foreign and missing ids are both 404."""
    return tenant_row(StudioApp, tenant_id, app_id)


def _possible_version(number: int) -> bool:
    """Whether an application could have this version number (also keeps huge numbers out of SQL)."""
    return 1 <= number <= LIMITS["versions_per_app"]


def get_version(studio_app: StudioApp, version: int) -> StudioVersion:
    """One version of an application (404 when it does not exist)."""
    if not _possible_version(version):
        raise ApiError("not_found", 404)
    row = db.session.scalar(select(StudioVersion).where(
        StudioVersion.app_id == studio_app.id, StudioVersion.tenant_id == studio_app.tenant_id,
        StudioVersion.version == version))
    if row is None:
        raise ApiError("not_found", 404)
    return row


def live_version(studio_app: StudioApp) -> StudioVersion:
    """The version that takes submissions (409 extension_not_active when disabled or unpublished)."""
    if not studio_app.enabled or studio_app.active_version is None:
        raise ApiError("extension_not_active", 409)
    return get_version(studio_app, studio_app.active_version)


def list_versions(studio_app: StudioApp) -> list[StudioVersion]:
    """The application's versions, newest first (at most 100)."""
    return list(db.session.scalars(select(StudioVersion).where(
        StudioVersion.app_id == studio_app.id, StudioVersion.tenant_id == studio_app.tenant_id)
        .order_by(StudioVersion.version.desc()).limit(LIMITS["list_versions"])))


def author_emails(versions: list[StudioVersion]) -> dict:
    """E-mail of each version's author, for display."""
    ids = {v.created_by for v in versions if v.created_by}
    if not ids:
        return {}
    return dict(db.session.execute(select(User.id, User.email).where(User.id.in_(ids))).all())


def _next_version_number(studio_app: StudioApp) -> int:
    """Take the next version number with one conditional UPDATE (100 per application)."""
    taken = db.session.execute(update(StudioApp).where(
        StudioApp.id == studio_app.id, StudioApp.latest_version < LIMITS["versions_per_app"])
        .values(latest_version=StudioApp.latest_version + 1, updated_at=utcnow())
        .returning(StudioApp.latest_version))
    number = taken.scalar()
    if number is None:
        raise ApiError("version_limit", 429)
    db.session.refresh(studio_app)
    return number


def _save_version(studio_app: StudioApp, definition: dict, actor_id: uuid.UUID | None) -> StudioVersion:
    """Store a validated definition as the application's next immutable version."""
    number = _next_version_number(studio_app)
    studio_app.name = definition["name"]
    version = StudioVersion(tenant_id=studio_app.tenant_id, app_id=studio_app.id, version=number,
                            definition=definition, definition_hash=canonical_hash(definition),
                            created_by=actor_id)
    db.session.add(version)
    db.session.flush()
    return version


def create_app(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, raw_definition: object,
               origin: str | None = None, license: str | None = None) -> StudioVersion:
    """Create an application with its version-1 draft (never published)."""
    definition = validate_definition(raw_definition)
    take_tenant_slot(StudioTenantUsage, tenant_id, LIMITS["apps_per_tenant"], "extension_limit")
    found = StudioApp(tenant_id=tenant_id, name=definition["name"], created_by=actor_id,
                      origin=origin, license=license)
    db.session.add(found)
    db.session.flush()
    version = _save_version(found, definition, actor_id)
    audit.record(tenant_id, actor_id, "studio.app_created", f"studio_app:{found.id}",
                 {"version": version.version, "origin": origin})
    return version


def add_version(studio_app: StudioApp, actor_id: uuid.UUID | None, raw_definition: object) -> StudioVersion:
    """Save a changed definition as a new draft version; earlier versions stay as they were."""
    version = _save_version(studio_app, validate_definition(raw_definition), actor_id)
    audit.record(studio_app.tenant_id, actor_id, "studio.version_created", f"studio_app:{studio_app.id}",
                 {"version": version.version})
    return version


def simulate(studio_app: StudioApp, actor_id: uuid.UUID | None, version_no: int, raw_input: object) -> dict:
    """Run the rules of a version on sample input; mark it simulated; store no record or input."""
    version = get_version(studio_app, version_no)
    result = run_rules(version.definition, raw_input)
    result["data"] = run_code(studio_app.tenant_id, version.definition, result["data"])
    version.simulated = True
    audit.record(studio_app.tenant_id, actor_id, "studio.simulated", f"studio_app:{studio_app.id}",
                 {"version": version_no, "matched_rules": sum(t["matched"] for t in result["trace"])})
    return result


def publish_note(text: str) -> str | None:
    """A publish note as typed: trimmed, at most 400 characters, no control characters but line
    breaks and tabs (`400 invalid_note`); None when empty."""
    try:
        return check_text(text, "note", PUBLISH_NOTE_CHARS, multiline=True, allow_empty=True) or None
    except ApiError:
        raise ApiError("invalid_note", 400, detail="note") from None


def publish(studio_app: StudioApp, actor_id: uuid.UUID | None, version_no: int,
            expected_active: int | None, permissions: object, code_confirmed: bool,
            note: str | None = None) -> StudioApp:
    """Make a simulated version live (also re-enables and rolls back), guarded by a revision check;
    a `note` (from `publish_note`) is kept on the version and in the audit entry."""
    version = get_version(studio_app, version_no)
    if not version.simulated:
        raise ApiError("simulation_required", 409)
    if permissions != PUBLISH_PERMISSIONS:
        raise ApiError("permission_confirmation_required", 400)
    if "code" in version.definition and code_confirmed is not True:
        raise ApiError("code_confirmation_required", 400)
    if expected_active is not None and not _possible_version(expected_active):
        raise ApiError("version_conflict", 409)  # no application is live at a version it cannot have
    expected = (StudioApp.active_version.is_(None) if expected_active is None
                else StudioApp.active_version == expected_active)
    swapped = db.session.execute(update(StudioApp).where(StudioApp.id == studio_app.id, expected)
                                 .values(enabled=True, active_version=version_no, updated_at=utcnow()))
    if swapped.rowcount != 1:
        raise ApiError("version_conflict", 409)
    db.session.refresh(studio_app)
    summary = {"version": version_no, "previous_version": expected_active, "permissions": PUBLISH_PERMISSIONS}
    if note:
        version.publish_note = note
        summary["note"] = note
    audit.record(studio_app.tenant_id, actor_id, "studio.published", f"studio_app:{studio_app.id}", summary)
    return studio_app


def disable(studio_app: StudioApp, actor_id: uuid.UUID | None) -> StudioApp:
    """Stop new submissions; the live version number and the records are kept."""
    studio_app.enabled = False
    studio_app.updated_at = utcnow()
    db.session.flush()
    audit.record(studio_app.tenant_id, actor_id, "studio.disabled", f"studio_app:{studio_app.id}",
                 {"active_version": studio_app.active_version})
    return studio_app
