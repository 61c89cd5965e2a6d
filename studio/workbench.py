"""Studio in the agents' workbench: the applications an administrator added to it, their run
entries, agents' per-item customer-data grants, and submissions and intent analyses from the panel.

A run entry is open while the application is in the tenant's workbench list, enabled, and its live
version carries `workbench` settings; anything else ends it at once, and the panel's next request
is refused (`workbench_entry_closed`). Grants only decide what the panel shows beside the
form: profile data is never put into a submission, a script, a prompt or an outside request.
"""
import uuid
from dataclasses import dataclass, replace
from datetime import timedelta

from flask import current_app, g
from sqlalchemy import and_, delete, func, select, update

from core import audit
from core.api import ApiError
from core.clock import utcnow
from core.db import db
from core.limits import hit_fixed_window
from core.redis import get_redis
from desk.models import Conversation, Customer, Member, Tenant
from studio import intent, records
from studio.apps import live_version
from studio.models import GRANT_ITEMS, StudioApp, StudioDataGrant, StudioVersion, StudioWorkbenchEntry

MAX_APPS = 10  # applications in one tenant's workbench
GRANT_DAYS = 90
INTENT_PER_MEMBER_PER_MINUTE = 10
RUN_ENTRIES = "studio_run_entries"  # flask.g: a member's run entries, kept for the request


@dataclass(frozen=True)
class RunEntry:
    """An application agents can use now: its live version's number and definition, and the
    customer-data items the member shares with that version."""

    app_id: uuid.UUID
    version_id: uuid.UUID
    version: int
    definition: dict
    granted: frozenset[str] = frozenset()
    app: StudioApp | None = None  # loaded for a request that uses this one entry

    @property
    def settings(self) -> dict:
        return self.definition["workbench"]

    @property
    def title(self) -> str:
        return self.settings.get("title") or self.definition["name"]


# --- The administrator's list ---------------------------------------------------------------------

def entry_of(studio_app: StudioApp) -> StudioWorkbenchEntry | None:
    """The application's place in the tenant's workbench, if it has one."""
    return db.session.scalar(select(StudioWorkbenchEntry).where(
        StudioWorkbenchEntry.tenant_id == studio_app.tenant_id, StudioWorkbenchEntry.app_id == studio_app.id))


def workbench_list(tenant_id: uuid.UUID) -> list[StudioApp]:
    """The applications in the tenant's workbench, in order, whether agents can use them now or not."""
    return list(db.session.scalars(select(StudioApp).join(StudioWorkbenchEntry, and_(
        StudioWorkbenchEntry.app_id == StudioApp.id, StudioWorkbenchEntry.tenant_id == StudioApp.tenant_id))
        .where(StudioWorkbenchEntry.tenant_id == tenant_id).order_by(StudioWorkbenchEntry.position)))


def add_to_workbench(studio_app: StudioApp, actor_id: uuid.UUID | None) -> StudioWorkbenchEntry:
    """Put a published application with workbench settings last in the tenant's workbench.

    409 extension_not_active (disabled or unpublished), 409 workbench_not_configured (the live
    version has no `workbench` settings), 409 workbench_limit (10 already). Adding it twice keeps
    its place. Counted under the tenant row's lock, so two additions cannot both take the last
    place. Flushes only."""
    if "workbench" not in live_version(studio_app).definition:
        raise ApiError("workbench_not_configured", 409)
    db.session.execute(select(Tenant.id).where(Tenant.id == studio_app.tenant_id).with_for_update())
    present = entry_of(studio_app)
    if present is not None:
        return present
    count, last = db.session.execute(select(func.count(), func.max(StudioWorkbenchEntry.position)).where(
        StudioWorkbenchEntry.tenant_id == studio_app.tenant_id)).one()
    if count >= MAX_APPS:
        raise ApiError("workbench_limit", 409)
    entry = StudioWorkbenchEntry(tenant_id=studio_app.tenant_id, app_id=studio_app.id, position=(last or 0) + 1,
                                 added_by=actor_id)
    db.session.add(entry)
    db.session.flush()
    g.pop(RUN_ENTRIES, None)
    audit.record(studio_app.tenant_id, actor_id, "studio.workbench_added", f"studio_app:{studio_app.id}",
                 {"version": studio_app.active_version})
    return entry


def remove_from_workbench(studio_app: StudioApp, actor_id: uuid.UUID | None) -> None:
    """Take the application out of the workbench (its records and grants stay). Flushes only."""
    removed = db.session.execute(delete(StudioWorkbenchEntry).where(
        StudioWorkbenchEntry.tenant_id == studio_app.tenant_id, StudioWorkbenchEntry.app_id == studio_app.id))
    g.pop(RUN_ENTRIES, None)
    if removed.rowcount:
        audit.record(studio_app.tenant_id, actor_id, "studio.workbench_removed", f"studio_app:{studio_app.id}", {})


# --- Run entries ------------------------------------------------------------------------------------

def _active(member: Member):
    """The conditions of the member's grants in force now."""
    return (StudioDataGrant.tenant_id == member.tenant_id, StudioDataGrant.member_id == member.id,
            StudioDataGrant.revoked_at.is_(None), StudioDataGrant.expires_at > utcnow())


def _open(member: Member, *columns):
    """The member's open run entries as `columns`, their live version's id and definition, and
    the items the member shares with that version (comma-separated, or NULL)."""
    granted = select(func.aggregate_strings(StudioDataGrant.item, ",")).where(
        *_active(member), StudioDataGrant.app_id == StudioApp.id,
        StudioDataGrant.version == StudioVersion.version).scalar_subquery()
    return (select(*columns, StudioVersion.id, StudioVersion.version, StudioVersion.definition, granted)
            .join(StudioWorkbenchEntry, and_(StudioWorkbenchEntry.app_id == StudioApp.id,
                                             StudioWorkbenchEntry.tenant_id == StudioApp.tenant_id))
            .join(StudioVersion, and_(StudioVersion.app_id == StudioApp.id,
                                      StudioVersion.version == StudioApp.active_version))
            .where(StudioWorkbenchEntry.tenant_id == member.tenant_id, StudioApp.enabled.is_(True)))


def _items(text: str | None) -> frozenset[str]:
    return frozenset(text.split(",")) if text else frozenset()


def run_entries(member: Member) -> list[RunEntry]:
    """The open run entries of the member's tenant in workbench order, with the member's grants:
    one statement of plain columns, kept for the request."""
    cache = g.setdefault(RUN_ENTRIES, {})
    if member.id not in cache:
        rows = db.session.execute(_open(member, StudioApp.id).order_by(StudioWorkbenchEntry.position))
        cache[member.id] = [RunEntry(app_id, version_id, version, definition, _items(granted))
                            for app_id, version_id, version, definition, granted in rows if "workbench" in definition]
    return cache[member.id]


def open_entry(member: Member, app_id: uuid.UUID, version: int) -> RunEntry:
    """The run entry the panel was rendered for, with its application, while it is still open at
    that version (one statement); else 409 workbench_entry_closed (removed, disabled, or another
    live version)."""
    row = db.session.execute(_open(member, StudioApp).where(StudioApp.id == app_id,
                                                           StudioApp.active_version == version)).first()
    if row is None or "workbench" not in row.definition:
        raise ApiError("workbench_entry_closed", 409)
    found, version_id, _, definition, granted = row
    return RunEntry(found.id, version_id, version, definition, _items(granted), found)


# --- Customer-data grants --------------------------------------------------------------------------

def _own_consent(restricted: bool) -> None:
    """Data sharing is the member's own consent: a restricted session (impersonation, assistant)
    neither gives nor withdraws it (403 session_scope_forbidden)."""
    if restricted:
        raise ApiError("session_scope_forbidden", 403)


def set_grants(member: Member, entry: RunEntry, items: set[str], *, restricted: bool) -> RunEntry:
    """Share exactly `items` of the selected customer's profile with this version's form: new items
    are granted for 90 days, items left out are revoked; both are audited. Flushes only; returns
    the entry as it now stands."""
    _own_consent(restricted)
    if not items <= set(GRANT_ITEMS):
        raise ApiError("invalid_form", 400)
    app_id, version, current = entry.app_id, entry.version, entry.granted
    now = utcnow()
    for item in sorted(items - current):
        db.session.add(StudioDataGrant(tenant_id=member.tenant_id, app_id=app_id, version=version,
                                       member_id=member.id, item=item, granted_at=now,
                                       expires_at=now + timedelta(days=GRANT_DAYS)))
    dropped = current - items
    if dropped:
        db.session.execute(update(StudioDataGrant).where(
            *_active(member), StudioDataGrant.app_id == app_id, StudioDataGrant.version == version,
            StudioDataGrant.item.in_(dropped)).values(revoked_at=now))
    db.session.flush()
    if items - current:
        audit.record(member.tenant_id, member.user_id, "studio.data_granted", f"studio_app:{app_id}",
                     {"version": version, "member_id": str(member.id), "items": sorted(items - current),
                      "days": GRANT_DAYS})
    if dropped:
        _audit_revoked(member, app_id, sorted(dropped), version)
    g.pop(RUN_ENTRIES, None)
    return replace(entry, granted=frozenset(items))


def revoke_all(member: Member, app_id: uuid.UUID, *, restricted: bool) -> None:
    """End every grant of the member for the application, whatever the version; submitted records
    stay. Flushes only."""
    _own_consent(restricted)
    ended = db.session.execute(update(StudioDataGrant).where(*_active(member), StudioDataGrant.app_id == app_id)
                               .values(revoked_at=utcnow()))
    if ended.rowcount:
        _audit_revoked(member, app_id, "all")
    g.pop(RUN_ENTRIES, None)


def _audit_revoked(member: Member, app_id: uuid.UUID, items, version: int | None = None) -> None:
    """One audit entry for revoked grants."""
    summary = {"member_id": str(member.id), "items": items}
    if version is not None:
        summary["version"] = version
    audit.record(member.tenant_id, member.user_id, "studio.data_revoked", f"studio_app:{app_id}", summary)


def shared_profile(customer: Customer, items: set[str]) -> list[tuple[str, str]]:
    """The granted items of the selected conversation's customer, as (item, text), in fixed order;
    the panel only displays them."""
    values = {"name": customer.name,
              "contact": " · ".join(part for part in (customer.phone, customer.email) if part),
              "note": customer.support_note}
    return [(item, values[item]) for item in GRANT_ITEMS if item in items and values[item]]


# --- Using the form and the intent tool -------------------------------------------------------------

def _within_panel_limits(member: Member) -> None:
    """Count one panel submission of the member and of the tenant; 429 record_rate_limited with
    Retry-After past either limit (the member's is counted first: a refused agent spends nothing
    of the tenant's). The limits are the app's PANEL_RECORDS_PER_*_PER_MINUTE: no person fills a form
    every 3 s for a minute, and a busy tenant's agents together stay far below 200; at 20 and 200
    one agent needs 50 minutes, and the whole tenant 5, to reach an application's 1,000 records."""
    cfg = current_app.config
    for key, limit in ((f"studio:panel-records:member:{member.id}", cfg["PANEL_RECORDS_PER_MEMBER_PER_MINUTE"]),
                       (f"studio:panel-records:tenant:{member.tenant_id}", cfg["PANEL_RECORDS_PER_TENANT_PER_MINUTE"])):
        window = hit_fixed_window(get_redis(), key, limit)
        if not window.allowed:
            raise ApiError("record_rate_limited", 429, headers={"Retry-After": str(max(1, window.reset_after))})


def submit(member: Member, entry: RunEntry, conversation: Conversation, raw_input: object, key: uuid.UUID):
    """Save the panel's submission (`entry` from `open_entry`) through the console's record
    service, with the submitting agent and the conversation recorded; returns (record, replayed).
    429 record_rate_limited past the panel's limits. Flushes only."""
    _within_panel_limits(member)
    return records.create_record(entry.app, member.user_id, entry.version, raw_input, key,
                                 conversation_id=conversation.id, live_definition=entry.definition)


def analyze_intent(member: Member, app_id: uuid.UUID, version: int, conversation: Conversation, *,
                   confirmed: bool):
    """Label the conversation with the version's intent labels, only when the agent confirmed this
    analysis (else 400 intent_confirmation_required before any other check: nothing is read, sent,
    counted or written); writes only the AI points ledger and the audit log. 409
    intent_not_configured; 429 intent_rate_limited (10 per agent per minute); the model's own
    errors pass through."""
    if confirmed is not True:
        raise ApiError("intent_confirmation_required", 400)
    entry = open_entry(member, app_id, version)
    if "intent" not in entry.definition:
        raise ApiError("intent_not_configured", 409)
    window = hit_fixed_window(get_redis(), f"studio:intent:{member.id}", INTENT_PER_MEMBER_PER_MINUTE)
    if not window.allowed:
        raise ApiError("intent_rate_limited", 429, headers={"Retry-After": str(max(1, window.reset_after))})
    return intent.classify(member.tenant_id, app_id, version, conversation.id, member.user_id)
