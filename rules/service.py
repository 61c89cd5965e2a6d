"""Persistent automation rules: revisions, member binding, publishing grants, pause (document 2).

A save adds an immutable revision (a new rule takes one of the tenant's 20 slots; a change takes
the next revision number with one conditional UPDATE guarded by `expected_revision`). A publication
swaps the rule's live revision with one compare-and-swap UPDATE guarded by
`expected_active_revision` and the grant it saw, then stores a fresh grant and revokes every other
grant of the rule; a pause revokes them all. A revoked grant never becomes valid again.

The services take typed arguments (`RuleChange`, `Publication`); a JSON body is read into them by
`rules.bodies`, a form by the console views.
"""
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from flask import current_app
from sqlalchemy import select, update

from core import audit
from core.api import ApiError, parse_uuid
from core.clock import iso, utcnow
from core.config import AUTOMATION_SWITCHES
from core.db import db
from core.once import take_tenant_slot
from core.validation import canonical_hash
from desk.models import Member
from rules import execution, plans
from rules.catalog import LIMITS
from rules.definition import assignee_refs, validate_rule
from rules.lookup import get_revision, get_rule, possible_revision
from rules.models import (EXECUTION_MODES, AutomationGrant, AutomationRule, AutomationRuleRevision,
                          RuleTenantUsage)

# Permission strings of each execution mode, then of the filters, in document 2's order.
MODE_PERMISSIONS = {
    "plan_only": ("conversation.read_for_plan", "automation.schedule_plan"),
    "scheduled": ("conversation.read_for_plan", "automation.schedule_plan",
                  "conversation.assign_scheduled"),
    "message_event": ("conversation.read_for_plan", "automation.schedule_plan",
                      "conversation.assign_scheduled", "conversation.message_event"),
}
KEYWORD_PERMISSIONS = ("conversation.keyword_routing",)
SEMANTIC_PERMISSIONS = ("conversation.semantic_routing", "ai.points.consume")
SINGLE_RUN_PERMISSIONS = ("conversation.assign_plan",)
# The trigger a continuous mode needs.
MODE_TRIGGERS = {"scheduled": "weekly", "message_event": "message_received"}


@dataclass(frozen=True)
class RuleChange:
    """A save that changes a rule rather than creating one: the rule, and the revision the change
    was made from (`expected_revision`, refused unless it is still the rule's latest)."""

    rule_id: uuid.UUID
    expected_revision: int


@dataclass(frozen=True)
class Publication:
    """What an administrator publishes: `revision`, over the live revision they saw
    (`expected_active_revision`, None when there was none), in `execution_mode` (None: plan_only),
    with the permissions they confirmed and whether they confirmed (`confirmed`, only True counts)."""

    revision: int
    expected_active_revision: int | None
    permissions: Sequence[str]
    confirmed: bool
    execution_mode: str | None = None


def required_permissions(definition: dict, mode: str) -> list[str]:
    """The exact permissions a publication of `definition` in `mode` must confirm, in order.

    The filter permissions are added in every mode, read-only included: a read-only plan of a
    keyword or semantic rule reads messages and, when semantic, spends AI points.
    """
    permissions = list(MODE_PERMISSIONS[mode])
    if definition["keywords"]:
        permissions += KEYWORD_PERMISSIONS
    if "semantic" in definition:
        permissions += SEMANTIC_PERMISSIONS
    return permissions


def _revision_number(value: object) -> int:
    """A revision number: an integer of at least 1, not a boolean (else 400 invalid_version)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ApiError("invalid_version", 400)
    return value


def _assignees(definition: dict) -> list[tuple[str, uuid.UUID]]:
    """Each assignee's JSON path (under `definition.`) and member id; an assignee that is not a
    member UUID is 400 rule_member_binding_required with its path."""
    assignees = []
    for path, value in assignee_refs(definition):
        path = f"definition.{path}"
        try:
            assignees.append((path, parse_uuid(value, "rule_member_binding_required")))
        except ApiError:
            raise ApiError("rule_member_binding_required", 400, detail=path) from None
    return assignees


def _check_bindings(tenant_id: uuid.UUID, definition: dict) -> None:
    """Every assignee must be an active, synchronized agent of the tenant, else 409
    rule_member_unavailable with its path (another tenant's, a missing, an inactive, an
    unsynchronized member, a supervisor or an administrator alike)."""
    assignees = _assignees(definition)
    available = set(db.session.scalars(select(Member.id).where(
        Member.tenant_id == tenant_id, Member.id.in_({member_id for _, member_id in assignees}),
        Member.role == "agent", Member.active.is_(True), Member.synchronized.is_(True))))
    for path, member_id in assignees:
        if member_id not in available:
            raise ApiError("rule_member_unavailable", 409, detail=path)


def _grant_modes(rules: list[AutomationRule]) -> dict:
    """Execution mode of each rule's current grant, by grant id."""
    ids = {r.grant_id for r in rules if r.grant_id}
    if not ids:
        return {}
    return dict(db.session.execute(select(AutomationGrant.id, AutomationGrant.execution_mode)
                                   .where(AutomationGrant.id.in_(ids))).all())


def rule_json(rule: AutomationRule, modes: dict | None = None) -> dict:
    """A rule with its latest and live revisions and its current grant."""
    modes = _grant_modes([rule]) if modes is None else modes
    return {"rule_id": str(rule.id), "name": rule.name, "trigger": rule.trigger,
            "state": rule.state, "latest_revision": rule.latest_revision,
            "active_revision": rule.active_revision,
            "execution_mode": modes.get(rule.grant_id),
            "grant_id": str(rule.grant_id) if rule.grant_id else None,
            "updated_at": iso(rule.updated_at)}


def revision_json(revision: AutomationRuleRevision) -> dict:
    """One immutable revision."""
    return {"revision": revision.revision, "definition": revision.definition,
            "definition_hash": revision.definition_hash, "created_at": iso(revision.created_at),
            "created_by": str(revision.created_by) if revision.created_by else None}


def overview(tenant_id: uuid.UUID) -> dict:
    """The tenant's rules, the agents they can bind, the permissions per mode and the switches."""
    rules = list(db.session.scalars(select(AutomationRule).where(AutomationRule.tenant_id == tenant_id)
                                    .order_by(AutomationRule.updated_at.desc())
                                    .limit(LIMITS["rules_per_tenant"])))
    modes = _grant_modes(rules)
    members = db.session.execute(select(Member.id, Member.display_name).where(
        Member.tenant_id == tenant_id, Member.role == "agent", Member.active.is_(True),
        Member.synchronized.is_(True)).order_by(Member.display_name, Member.id)).all()
    permissions = {mode: list(names) for mode, names in MODE_PERMISSIONS.items()}
    permissions |= {"keyword_routing": list(KEYWORD_PERMISSIONS),
                    "semantic_routing": list(SEMANTIC_PERMISSIONS),
                    "single_run": list(SINGLE_RUN_PERMISSIONS)}
    return {"rules": [rule_json(r, modes) for r in rules],
            "bindable_members": [{"member_id": str(m.id), "display_name": m.display_name} for m in members],
            "permissions": permissions,
            "switches": {key.removeprefix("AUTOMATION_").lower(): bool(current_app.config[key])
                         for key in AUTOMATION_SWITCHES}}


def _new_rule(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, definition: dict) -> AutomationRule:
    """Create a rule at revision 1, counted against the tenant's 20 (429 rule_limit)."""
    take_tenant_slot(RuleTenantUsage, tenant_id, LIMITS["rules_per_tenant"], "rule_limit")
    found = AutomationRule(tenant_id=tenant_id, name=definition["name"], trigger=definition["trigger"],
                           latest_revision=1, created_by=actor_id)
    db.session.add(found)
    db.session.flush()
    return found


def _next_revision(rule: AutomationRule, expected: int, definition: dict) -> None:
    """Take the revision after `expected` with one conditional UPDATE: 409 version_conflict when
    the rule has moved on, 429 revision_limit at 100 revisions."""
    if not possible_revision(expected):
        raise ApiError("version_conflict", 409)  # no rule has a revision it cannot have
    taken = db.session.execute(update(AutomationRule).where(
        AutomationRule.id == rule.id, AutomationRule.tenant_id == rule.tenant_id,
        AutomationRule.latest_revision == expected,
        AutomationRule.latest_revision < LIMITS["revisions_per_rule"])
        .values(latest_revision=AutomationRule.latest_revision + 1, name=definition["name"],
                trigger=definition["trigger"], updated_at=utcnow())
        .returning(AutomationRule.latest_revision)).scalar()
    if taken is None:
        latest = db.session.scalar(select(AutomationRule.latest_revision)
                                   .where(AutomationRule.id == rule.id))
        raise ApiError("version_conflict" if latest != expected else "revision_limit",
                       409 if latest != expected else 429)
    db.session.refresh(rule)


def _bound_definition(tenant_id: uuid.UUID, raw: object) -> dict:
    """The validated definition, its assignees bound to available agents of the tenant."""
    definition = validate_rule(raw)
    _check_bindings(tenant_id, definition)
    return definition


def save_rule(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, definition: object,
              change: RuleChange | None = None) -> dict:
    """Save `definition` as a new rule, or with `change` as the next draft revision of that rule;
    the published revision stays live. Flush only.

    The first problem wins, in this order: for a change the rule (404) and its expected revision
    (400 invalid_version unless an integer of at least 1), then the definition, its bindings, and
    the limits and the revision check, which are the writes.
    """
    if change is None:
        definition = _bound_definition(tenant_id, definition)
        found = _new_rule(tenant_id, actor_id, definition)
    else:
        found = get_rule(tenant_id, change.rule_id)
        expected = _revision_number(change.expected_revision)
        definition = _bound_definition(tenant_id, definition)
        _next_revision(found, expected, definition)
    revision = AutomationRuleRevision(
        tenant_id=tenant_id, rule_id=found.id, revision=found.latest_revision, definition=definition,
        definition_hash=canonical_hash(definition), created_by=actor_id)
    db.session.add(revision)
    db.session.flush()
    audit.record(tenant_id, actor_id, "automation.rule_saved", f"automation_rule:{found.id}",
                 {"rule_id": str(found.id), "revision": revision.revision})
    return {"rule_id": str(found.id), "revision": revision.revision, "definition": definition,
            "definition_hash": revision.definition_hash, "state": found.state}


def rule_versions(tenant_id: uuid.UUID, rule_id: uuid.UUID) -> dict:
    """A rule and its most recent revisions, newest first."""
    found = get_rule(tenant_id, rule_id)
    revisions = db.session.scalars(select(AutomationRuleRevision).where(
        AutomationRuleRevision.rule_id == found.id, AutomationRuleRevision.tenant_id == tenant_id)
        .order_by(AutomationRuleRevision.revision.desc()).limit(LIMITS["versions_listed"]))
    return {"rule": rule_json(found), "versions": [revision_json(r) for r in revisions]}


def _execution_mode(value: str | None, trigger: str) -> str:
    """The publication's mode: omitted or null is plan_only; scheduled only for weekly rules and
    message_event only for message rules (else 400 invalid_execution_mode)."""
    mode = "plan_only" if value is None else value
    if mode not in EXECUTION_MODES or MODE_TRIGGERS.get(mode, trigger) != trigger:
        raise ApiError("invalid_execution_mode", 400)
    return mode


def _planning_enabled() -> None:
    """Publishing needs the planning switch on (503 planning_disabled)."""
    if not current_app.config["AUTOMATION_PLANNING_ENABLED"]:
        raise ApiError("planning_disabled", 503)


def _continuous_enabled(mode: str) -> None:
    """A continuous mode needs scheduled execution (503 schedule_execution_disabled) and atomic
    assignment (503 atomic_assignment_disabled) switched on."""
    if mode == "plan_only":
        return
    if not current_app.config["AUTOMATION_SCHEDULE_EXECUTION_ENABLED"]:
        raise ApiError("schedule_execution_disabled", 503)
    if not current_app.config["ATOMIC_ASSIGNMENT_ENABLED"]:
        raise ApiError("atomic_assignment_disabled", 503)


def _revoke_grants(rule: AutomationRule, keep: uuid.UUID | None = None) -> list[str]:
    """Revoke every live grant of the rule but `keep` (all of them without it); the ids revoked."""
    live = [AutomationGrant.rule_id == rule.id, AutomationGrant.tenant_id == rule.tenant_id,
            AutomationGrant.revoked_at.is_(None)]
    if keep is not None:
        live.append(AutomationGrant.id != keep)
    revoked = db.session.execute(update(AutomationGrant).where(*live)
                                 .values(revoked_at=utcnow()).returning(AutomationGrant.id)).scalars()
    return sorted(str(grant_id) for grant_id in revoked)


def _swap_live_revision(rule: AutomationRule, expected: int | None, number: int,
                        grant_id: uuid.UUID) -> None:
    """Point the rule at revision `number` and the new grant with one compare-and-swap UPDATE:
    it matches only while the live revision is `expected` and the grant is the one read."""
    if expected is not None and not possible_revision(expected):
        raise ApiError("version_conflict", 409)
    live = (AutomationRule.active_revision.is_(None) if expected is None
            else AutomationRule.active_revision == expected)
    seen = (AutomationRule.grant_id.is_(None) if rule.grant_id is None
            else AutomationRule.grant_id == rule.grant_id)
    swapped = db.session.execute(update(AutomationRule).where(
        AutomationRule.id == rule.id, AutomationRule.tenant_id == rule.tenant_id, live, seen)
        .values(state="published", active_revision=number, grant_id=grant_id, updated_at=utcnow()))
    if swapped.rowcount != 1:
        raise ApiError("version_conflict", 409)


def publish(tenant_id: uuid.UUID, actor_id: uuid.UUID, rule_id: uuid.UUID, publication: Publication) -> dict:
    """Publish a revision under a fresh grant for the confirmed mode; the old grant is revoked.
    Flush only.

    Nothing is published unless the administrator confirmed (`confirmed` True) exactly the
    permissions `required_permissions` lists for the revision and mode, in order (else 400
    permission_confirmation_required). The first problem wins, in this order: the rule (404), the
    planning switch, the revision numbers (integers of at least 1), the confirmation, the revision
    (404), the mode against its trigger, the continuous switches, the permissions, the bindings,
    then the swap (409 version_conflict).
    """
    found = get_rule(tenant_id, rule_id)
    _planning_enabled()
    number = _revision_number(publication.revision)
    expected = publication.expected_active_revision
    if expected is not None:
        expected = _revision_number(expected)
    if publication.confirmed is not True:
        raise ApiError("permission_confirmation_required", 400)
    revision = get_revision(found, number)
    mode = _execution_mode(publication.execution_mode, revision.definition["trigger"])
    _continuous_enabled(mode)
    permissions = required_permissions(revision.definition, mode)
    if list(publication.permissions) != permissions:
        raise ApiError("permission_confirmation_required", 400)
    _check_bindings(tenant_id, revision.definition)  # an agent may have left since the save
    grant_id = uuid.uuid4()
    _swap_live_revision(found, expected, number, grant_id)
    db.session.add(AutomationGrant(id=grant_id, tenant_id=tenant_id, rule_id=found.id, revision=number,
                                   execution_mode=mode, permissions=permissions, granted_by=actor_id))
    db.session.flush()
    revoked = _revoke_grants(found, keep=grant_id)
    db.session.refresh(found)
    audit.record(tenant_id, actor_id, "automation.rule_published", f"automation_rule:{found.id}",
                 {"rule_id": str(found.id), "revision": number, "previous_revision": expected,
                  "execution_mode": mode, "grant_id": str(grant_id), "revoked_grant_ids": revoked,
                  "permissions": permissions})
    return rule_json(found)


def pause(tenant_id: uuid.UUID, actor_id: uuid.UUID, rule_id: uuid.UUID) -> dict:
    """Pause a published rule: its grant is revoked, so commands carrying it are blocked, its
    commands not yet begun cancelled and its queued plans cancelled (404 for a foreign or missing
    rule, 409 rule_not_published for a draft or an already paused rule). Flush only."""
    found = get_rule(tenant_id, rule_id)
    paused = db.session.execute(update(AutomationRule).where(
        AutomationRule.id == found.id, AutomationRule.tenant_id == tenant_id,
        AutomationRule.state == "published")
        .values(state="paused", grant_id=None, updated_at=utcnow()))
    if paused.rowcount != 1:
        raise ApiError("rule_not_published", 409)
    revoked = _revoke_grants(found)
    plans.cancel_queued(tenant_id, found.id)  # queued plans are cancelled; a running one may finish
    cancelled = execution.cancel_pending(tenant_id, found.id, "rule_paused")  # sending ones may complete
    db.session.refresh(found)
    audit.record(tenant_id, actor_id, "automation.rule_paused", f"automation_rule:{found.id}",
                 {"rule_id": str(found.id), "active_revision": found.active_revision,
                  "revoked_grant_ids": revoked, "commands_cancelled": cancelled})
    return rule_json(found)
