"""Persistent automation rules through the console API: save, bind, publish with grants, pause."""
import copy
import json
import uuid

import pytest
from sqlalchemy import func, select

from core.audit import AuditEntry
from core.db import db
from desk.models import Member
from rules import lookup, service
from rules.catalog import AUTOMATION_PREVIEW_EXAMPLE
from rules.models import AutomationGrant, AutomationRule, AutomationRuleRevision
from tests.conftest import login, seat
from tests.support.rules import (KEYWORD, MESSAGE_EVENT, READ_ONLY, SCHEDULED, SEMANTIC, RulesApi, error, message_rule,
                                 semantic_rule, weekly_rule)


def grants(rule_id: str) -> list[AutomationGrant]:
    """The rule's grants as stored, oldest first."""
    db.session.expire_all()
    return list(db.session.scalars(select(AutomationGrant).where(AutomationGrant.rule_id == uuid.UUID(rule_id))
                                   .order_by(AutomationGrant.created_at)))


def count(model) -> int:
    return db.session.scalar(select(func.count()).select_from(model))


@pytest.fixture(autouse=True)
def planning(app, monkeypatch):
    """Planning on (its default is off); continuous execution on, so every mode can be published."""
    monkeypatch.setitem(app.config, "AUTOMATION_PLANNING_ENABLED", True)
    monkeypatch.setitem(app.config, "AUTOMATION_SCHEDULE_EXECUTION_ENABLED", True)
    monkeypatch.setitem(app.config, "ATOMIC_ASSIGNMENT_ENABLED", True)


@pytest.fixture
def foreign(app, other_tenant) -> tuple[RulesApi, Member]:
    """Another tenant's administrator on the rules API, and an agent of that tenant."""
    browser = app.test_client()
    login(browser, seat(other_tenant, "admin").user.email)
    return RulesApi(browser), seat(other_tenant, "agent")


@pytest.fixture
def weekly(rules, agent) -> str:
    """A saved weekly rule (revision 1, draft) bound to the agent."""
    return rules.create(weekly_rule(agent))


# --- GET /automation-rules ---------------------------------------------------------------------

def test_overview_lists_rules_bindable_agents_permissions_and_switches(app, rules, tenant, other_tenant,
                                                                       agent, weekly):
    for role in ("admin", "supervisor"):
        seat(tenant, role)
    inactive, unsynchronized = seat(tenant, "agent"), seat(tenant, "agent")
    inactive.active = False
    unsynchronized.synchronized = False
    seat(other_tenant, "agent")
    db.session.commit()
    data = rules.get("/automation-rules").get_json()["data"]
    assert [r["rule_id"] for r in data["rules"]] == [weekly]
    assert data["rules"][0] == {**data["rules"][0], "name": "Weekday rotation", "trigger": "weekly",
                                "state": "draft", "latest_revision": 1, "active_revision": None,
                                "execution_mode": None, "grant_id": None}
    assert data["bindable_members"] == [{"member_id": str(agent.id), "display_name": agent.display_name}]
    assert data["permissions"] == {"plan_only": READ_ONLY, "scheduled": SCHEDULED,
                                   "message_event": MESSAGE_EVENT, "keyword_routing": KEYWORD,
                                   "semantic_routing": SEMANTIC, "single_run": ["conversation.assign_plan"]}
    assert data["switches"] == {"planning_enabled": True, "schedule_execution_enabled": True,
                                "execution_enabled": False, "atomic_assignment_enabled": True}


def test_overview_lists_the_tenants_rules_by_last_change(rules, agent):
    first = rules.create(weekly_rule(agent, name="First"))
    second = rules.create(weekly_rule(agent, name="Second"))
    assert rules.save(weekly_rule(agent, name="First again"), rule_id=first, expected_revision=1).status_code == 201
    listed = rules.get("/automation-rules").get_json()["data"]["rules"]
    assert [(r["rule_id"], r["name"]) for r in listed] == [(first, "First again"), (second, "Second")]


def test_another_tenants_rules_are_not_listed(rules, foreign):
    foreign_rules, foreign_agent = foreign
    foreign_rules.create(weekly_rule(foreign_agent))
    assert rules.get("/automation-rules").get_json()["data"]["rules"] == []


# --- POST /automation-rules --------------------------------------------------------------------

def test_a_new_rule_is_saved_as_a_draft_at_revision_1(rules, agent):
    response = rules.save(weekly_rule(agent))
    assert response.status_code == 201
    data = response.get_json()["data"]
    assert data["revision"] == 1 and data["state"] == "draft"
    assert data["definition"] == weekly_rule(agent) and len(data["definition_hash"]) == 64
    versions = rules.get(f"/{data['rule_id']}/rule-versions").get_json()["data"]
    assert versions["rule"]["latest_revision"] == 1 and versions["rule"]["active_revision"] is None
    assert [v["revision"] for v in versions["versions"]] == [1]
    assert versions["versions"][0]["definition_hash"] == data["definition_hash"]


@pytest.mark.parametrize("body, expected", [
    ({"definition": {}, "extra": 1}, (400, "invalid_json", "extra")),
    ({}, (400, "required_field_missing", "definition")),
    ({"definition": {}, "rule_id": str(uuid.uuid4())}, (400, "required_field_missing", "expected_revision")),
    ({"definition": {}, "expected_revision": 1}, (400, "required_field_missing", "rule_id")),
])
def test_save_refuses_unknown_and_missing_properties(rules, body, expected):
    assert error(rules.post("/automation-rules", body)) == expected


@pytest.mark.parametrize("rule_id", ["nope", 5, None, "0F8FAD5BD9CB469FA16570867728950E"])
def test_a_malformed_rule_id_is_invalid_rule_id(rules, agent, weekly, rule_id):
    response = rules.save(weekly_rule(agent), rule_id=rule_id, expected_revision=1)
    assert error(response) == (400, "invalid_rule_id", None)


@pytest.mark.parametrize("expected", [0, -1, True, "1", 1.5, None])
def test_expected_revision_must_be_a_positive_integer(rules, agent, weekly, expected):
    response = rules.save(weekly_rule(agent), rule_id=weekly, expected_revision=expected)
    assert error(response) == (400, "invalid_version", None)


def test_an_invalid_definition_is_refused_with_its_path(rules, agent):
    response = rules.save(weekly_rule(agent, max_actions=0))
    assert error(response) == (400, "invalid_definition", "max_actions")
    assert count(AutomationRule) == 0


def with_slot_assignee(definition: dict, index: int, value: str) -> dict:
    """The definition with one slot's assignee replaced."""
    definition["slots"][index]["assignee_ref"] = value
    return definition


@pytest.mark.parametrize("make, path", [
    (lambda agent: copy.deepcopy(AUTOMATION_PREVIEW_EXAMPLE), "definition.slots[0].assignee_ref"),
    (lambda agent: with_slot_assignee(weekly_rule(agent), 1, "Agent B"), "definition.slots[1].assignee_ref"),
    (lambda agent: message_rule(agent, assignee_ref="Agent A"), "definition.assignee_ref"),
    (lambda agent: message_rule(agent, assignee_ref=str(agent.id).replace("-", "")), "definition.assignee_ref"),
    (lambda agent: message_rule(agent, assignee_ref="{" + str(agent.id) + "}"), "definition.assignee_ref"),
])
def test_an_unbound_placeholder_is_rule_member_binding_required(rules, agent, make, path):
    assert error(rules.save(make(agent))) == (400, "rule_member_binding_required", path)
    assert count(AutomationRule) == 0


def _unavailable(tenant, other_tenant, kind: str) -> uuid.UUID:
    """A member id that no rule of `tenant` may bind."""
    if kind == "missing":
        return uuid.uuid4()
    if kind == "other tenant's agent":
        return seat(other_tenant, "agent").id
    if kind in ("supervisor", "admin"):
        return seat(tenant, kind).id
    member = seat(tenant, "agent")
    setattr(member, "active" if kind == "inactive agent" else "synchronized", False)
    db.session.commit()
    return member.id


@pytest.mark.parametrize("kind", ["other tenant's agent", "inactive agent", "unsynchronized agent",
                                  "supervisor", "admin", "missing"])
def test_a_member_that_is_not_an_available_agent_of_the_tenant_cannot_be_bound(rules, tenant, other_tenant,
                                                                                agent, kind):
    member_id = _unavailable(tenant, other_tenant, kind)
    response = rules.save(message_rule(agent, assignee_ref=str(member_id)))
    assert error(response) == (409, "rule_member_unavailable", "definition.assignee_ref")
    definition = with_slot_assignee(weekly_rule(agent), 1, str(member_id))
    assert error(rules.save(definition)) == (409, "rule_member_unavailable", "definition.slots[1].assignee_ref")
    assert count(AutomationRule) == 0


def test_an_uppercase_member_id_binds(rules, agent):
    assert rules.save(message_rule(agent, assignee_ref=str(agent.id).upper())).status_code == 201


def test_a_change_saves_the_next_revision_and_mirrors_name_and_trigger(rules, agent, weekly):
    response = rules.save(message_rule(agent, name="Now by message"), rule_id=weekly, expected_revision=1)
    assert response.status_code == 201
    assert response.get_json()["data"]["revision"] == 2
    rule = rules.rule(weekly)
    assert (rule["name"], rule["trigger"], rule["latest_revision"]) == ("Now by message", "message_received", 2)
    versions = rules.get(f"/{weekly}/rule-versions").get_json()["data"]["versions"]
    assert [(v["revision"], v["definition"]["trigger"]) for v in versions] == \
        [(2, "message_received"), (1, "weekly")]


@pytest.mark.parametrize("expected", [2, 100, 101, 10 ** 30])
def test_a_change_from_a_stale_revision_is_a_version_conflict(rules, agent, weekly, expected):
    response = rules.save(weekly_rule(agent, name="Late"), rule_id=weekly, expected_revision=expected)
    assert error(response) == (409, "version_conflict", None)
    assert rules.rule(weekly)["latest_revision"] == 1 and count(AutomationRuleRevision) == 1


def test_a_draft_never_replaces_the_published_revision(rules, agent, weekly):
    assert rules.publish(weekly, READ_ONLY).status_code == 200
    granted = lookup.current_grant(agent.tenant_id, uuid.UUID(weekly))
    response = rules.save(weekly_rule(agent, name="Draft"), rule_id=weekly, expected_revision=1)
    assert response.status_code == 201 and response.get_json()["data"]["state"] == "published"
    rule = rules.rule(weekly)
    assert (rule["state"], rule["active_revision"], rule["latest_revision"]) == ("published", 1, 2)
    assert rule["grant_id"] == str(granted.id)
    db.session.expire_all()
    assert lookup.current_grant(agent.tenant_id, uuid.UUID(weekly)).revision == 1


def test_a_tenant_has_at_most_20_rules(rules, agent, foreign):
    for n in range(20):
        rules.create(weekly_rule(agent, name=f"Rule {n}"))
    assert error(rules.save(weekly_rule(agent))) == (429, "rule_limit", None)
    assert count(AutomationRule) == 20
    assert len(rules.get("/automation-rules").get_json()["data"]["rules"]) == 20
    foreign_rules, foreign_agent = foreign
    assert foreign_rules.save(weekly_rule(foreign_agent)).status_code == 201  # the limit is per tenant


def test_a_rule_has_at_most_100_revisions(rules, agent, weekly):
    for revision in range(1, 100):
        response = rules.save(weekly_rule(agent, name=f"R{revision + 1}"), rule_id=weekly, expected_revision=revision)
        assert response.status_code == 201
    response = rules.save(weekly_rule(agent, name="Too many"), rule_id=weekly, expected_revision=100)
    assert error(response) == (429, "revision_limit", None)
    assert rules.rule(weekly)["latest_revision"] == 100 and count(AutomationRuleRevision) == 100


def test_rule_versions_lists_the_20_newest_revisions_first(rules, agent, weekly):
    for revision in range(1, 22):
        rules.save(weekly_rule(agent, name=f"R{revision + 1}"), rule_id=weekly, expected_revision=revision)
    versions = rules.get(f"/{weekly}/rule-versions").get_json()["data"]["versions"]
    assert [v["revision"] for v in versions] == list(range(22, 2, -1))
    assert set(versions[0]) == {"revision", "definition", "definition_hash", "created_at", "created_by"}
    assert versions[0]["definition"]["name"] == "R22" and versions[0]["created_by"] is not None


def test_a_save_names_the_first_problem_in_the_documented_order(rules, agent, weekly):
    invalid = weekly_rule(agent, max_actions=0)
    unavailable = message_rule(agent, assignee_ref=str(uuid.uuid4()))
    missing = str(uuid.uuid4())
    assert error(rules.save(invalid, rule_id="nope", expected_revision="x", extra=1)) == (400, "invalid_json", "extra")
    assert error(rules.save(invalid, rule_id="nope", expected_revision="x")) == (400, "invalid_rule_id", None)
    assert error(rules.save(invalid, rule_id=missing, expected_revision="x")) == (404, "not_found", None)
    assert error(rules.save(invalid, rule_id=weekly, expected_revision="x")) == (400, "invalid_version", None)
    assert error(rules.save(invalid, rule_id=weekly, expected_revision=7)) == (400, "invalid_definition", "max_actions")
    assert error(rules.save(unavailable, rule_id=weekly, expected_revision=7)) == \
        (409, "rule_member_unavailable", "definition.assignee_ref")
    assert count(AutomationRuleRevision) == 1


# --- another tenant's rule, roles ----------------------------------------------------------------

def test_another_tenants_rule_is_not_found(rules, agent, foreign):
    foreign_rules, foreign_agent = foreign
    foreign_id = foreign_rules.create(weekly_rule(foreign_agent))
    foreign_rules.publish(foreign_id, READ_ONLY)
    for rule_id in (foreign_id, str(uuid.uuid4())):
        assert error(rules.get(f"/{rule_id}/rule-versions")) == (404, "not_found", None)
        assert error(rules.save(weekly_rule(agent), rule_id=rule_id, expected_revision=1)) == (404, "not_found", None)
        assert error(rules.publish(rule_id, READ_ONLY)) == (404, "not_found", None)
        assert error(rules.pause(rule_id)) == (404, "not_found", None)
    assert lookup.current_grant(agent.tenant_id, uuid.UUID(foreign_id)) is None
    assert lookup.current_grant(foreign_agent.tenant_id, uuid.UUID(foreign_id)) is not None


def test_agents_and_anonymous_visitors_are_refused(app, admin, agent_client, weekly):
    anonymous = RulesApi(app.test_client())
    as_agent = RulesApi(agent_client)
    assert anonymous.get("/automation-rules").status_code == 401
    assert anonymous.save({}).status_code == 401
    assert error(as_agent.get("/automation-rules"))[:2] == (403, "forbidden")
    assert error(as_agent.save({}))[:2] == (403, "forbidden")
    assert error(as_agent.publish(weekly, READ_ONLY))[:2] == (403, "forbidden")
    assert error(as_agent.pause(weekly))[:2] == (403, "forbidden")
    assert error(as_agent.get(f"/{weekly}/rule-versions"))[:2] == (403, "forbidden")
    assert count(AutomationGrant) == 0


# --- POST /{rule_id}/rule-publish: body, permissions, modes ---------------------------------------

@pytest.mark.parametrize("change", [{"confirm": False}, {"confirm": "true"}, {"confirm": 1}, {"confirm": None}])
def test_publishing_needs_confirm_exactly_true(rules, weekly, change):
    assert error(rules.publish(weekly, READ_ONLY, **change)) == (400, "permission_confirmation_required", None)
    assert count(AutomationGrant) == 0


def test_publishing_without_confirm_or_permissions_is_refused(rules, weekly):
    body = {"revision": 1, "expected_active_revision": None, "permissions": READ_ONLY}
    assert error(rules.post(f"/{weekly}/rule-publish", body)) == (400, "permission_confirmation_required", None)
    body = {"revision": 1, "expected_active_revision": None, "confirm": True}
    assert error(rules.post(f"/{weekly}/rule-publish", body)) == (400, "permission_confirmation_required", None)


@pytest.mark.parametrize("body, expected", [
    ({"revision": 1, "expected_active_revision": None, "confirm": True, "permissions": READ_ONLY, "why": 1},
     (400, "invalid_json", "why")),
    ({"expected_active_revision": None, "confirm": True, "permissions": READ_ONLY},
     (400, "required_field_missing", "revision")),
    ({"revision": 1, "confirm": True, "permissions": READ_ONLY},
     (400, "required_field_missing", "expected_active_revision")),
])
def test_publish_refuses_unknown_and_missing_properties(rules, weekly, body, expected):
    assert error(rules.post(f"/{weekly}/rule-publish", body)) == expected


@pytest.mark.parametrize("change", [{"revision": 0}, {"revision": "1"}, {"revision": True}, {"revision": None},
                                    {"expected": 0}, {"expected": "1"}, {"expected": False}])
def test_revision_numbers_of_a_publication_must_be_positive_integers(rules, weekly, change):
    response = rules.publish(weekly, READ_ONLY, revision=change.get("revision", 1), expected=change.get("expected"))
    assert error(response) == (400, "invalid_version", None)


@pytest.mark.parametrize("revision", [2, 100, 101, 10 ** 30])
def test_publishing_a_revision_that_does_not_exist_is_not_found(rules, weekly, revision):
    assert error(rules.publish(weekly, READ_ONLY, revision=revision)) == (404, "not_found", None)


PERMISSION_CASES = [  # (rule, mode, exact permissions)
    ("weekly", None, READ_ONLY),
    ("weekly", "plan_only", READ_ONLY),
    ("weekly", "scheduled", SCHEDULED),
    ("weekly keywords", "plan_only", READ_ONLY + KEYWORD),
    ("weekly keywords", "scheduled", SCHEDULED + KEYWORD),
    ("weekly semantic", "scheduled", SCHEDULED + SEMANTIC),
    ("message keywords", "plan_only", READ_ONLY + KEYWORD),
    ("message keywords", "message_event", MESSAGE_EVENT + KEYWORD),
    ("message semantic", "plan_only", READ_ONLY + SEMANTIC),
    ("message semantic", "message_event", MESSAGE_EVENT + SEMANTIC),
    ("manual keywords", "plan_only", READ_ONLY + KEYWORD),
    ("manual semantic", None, READ_ONLY + SEMANTIC),
]


def _definition(kind: str, agent: Member) -> dict:
    """A rule of the kind a permission case names."""
    return {"weekly": weekly_rule(agent),
            "weekly keywords": weekly_rule(agent, keywords=["vip"]),
            "weekly semantic": weekly_rule(agent, semantic={"labels": ["vip"], "min_confidence": 0.8}),
            "message keywords": message_rule(agent),
            "message semantic": semantic_rule(agent),
            "manual keywords": message_rule(agent, trigger="manual_sample"),
            "manual semantic": semantic_rule(agent, trigger="manual_sample")}[kind]


@pytest.mark.parametrize("kind, mode, permissions", PERMISSION_CASES)
def test_each_mode_requires_its_exact_permissions_in_order(rules, agent, kind, mode, permissions):
    rule_id = rules.create(_definition(kind, agent))
    mode_field = {} if mode is None else {"execution_mode": mode}
    another_mode = SCHEDULED if permissions == READ_ONLY else READ_ONLY
    refused = [permissions[::-1], permissions[:-1], permissions + ["conversation.assign_plan"],
               permissions + permissions[-1:], another_mode]
    for wrong in refused:
        assert error(rules.publish(rule_id, wrong, **mode_field)) == (400, "permission_confirmation_required", None)
    assert count(AutomationGrant) == 0
    response = rules.publish(rule_id, permissions, **mode_field)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["data"]["execution_mode"] == (mode or "plan_only")
    (grant,) = grants(rule_id)
    assert (grant.execution_mode, grant.permissions) == (mode or "plan_only", permissions)
    assert service.required_permissions(_definition(kind, agent), mode or "plan_only") == permissions


@pytest.mark.parametrize("kind", ["message keywords", "manual keywords", "manual semantic"])
def test_scheduled_publishing_is_only_for_weekly_rules(rules, agent, kind):
    rule_id = rules.create(_definition(kind, agent))
    response = rules.publish(rule_id, SCHEDULED + KEYWORD, execution_mode="scheduled")
    assert error(response) == (400, "invalid_execution_mode", None)


@pytest.mark.parametrize("kind", ["weekly", "weekly keywords", "manual keywords"])
def test_message_event_publishing_is_only_for_message_rules(rules, agent, kind):
    rule_id = rules.create(_definition(kind, agent))
    response = rules.publish(rule_id, MESSAGE_EVENT, execution_mode="message_event")
    assert error(response) == (400, "invalid_execution_mode", None)


@pytest.mark.parametrize("mode", ["continuous", "", 1, ["plan_only"], "PLAN_ONLY"])
def test_an_unknown_execution_mode_is_refused(rules, weekly, mode):
    assert error(rules.publish(weekly, READ_ONLY, execution_mode=mode)) == (400, "invalid_execution_mode", None)


def test_a_null_execution_mode_publishes_read_only(rules, weekly):
    assert rules.publish(weekly, READ_ONLY, execution_mode=None).get_json()["data"]["execution_mode"] == "plan_only"


def test_a_publication_names_the_first_problem_in_the_documented_order(app, rules, agent, weekly, monkeypatch):
    junk = {"confirm": "yes", "execution_mode": 1}
    assert error(rules.publish(str(uuid.uuid4()), "x", revision="1", **junk)) == (404, "not_found", None)
    assert error(rules.publish(weekly, "x", revision="1", expected="x", **junk)) == (400, "invalid_version", None)
    assert error(rules.publish(weekly, "x", expected="x", **junk)) == (400, "invalid_version", None)
    assert error(rules.publish(weekly, "x", revision=5, **junk)) == (400, "permission_confirmation_required", None)
    assert error(rules.publish(weekly, "x", revision=5, execution_mode=1)) == (404, "not_found", None)
    for mode in (1, ["plan_only"], {"mode": "plan_only"}):
        assert error(rules.publish(weekly, "x", execution_mode=mode)) == (400, "invalid_execution_mode", None)
    for permissions in ("x", [1, 2], None, {"0": "conversation.read_for_plan"}):
        assert error(rules.publish(weekly, permissions)) == (400, "permission_confirmation_required", None)
    agent.active = False
    db.session.commit()
    assert error(rules.publish(weekly, [1])) == (400, "permission_confirmation_required", None)
    assert error(rules.publish(weekly, READ_ONLY, expected=3)) == \
        (409, "rule_member_unavailable", "definition.slots[0].assignee_ref")
    monkeypatch.setitem(app.config, "AUTOMATION_SCHEDULE_EXECUTION_ENABLED", False)
    assert error(rules.publish(weekly, "x", execution_mode="scheduled")) == (503, "schedule_execution_disabled", None)
    monkeypatch.setitem(app.config, "AUTOMATION_PLANNING_ENABLED", False)
    assert error(rules.publish(weekly, "x", revision="1", **junk)) == (503, "planning_disabled", None)
    assert count(AutomationGrant) == 0


# --- compare-and-swap, bindings at publish, grants ------------------------------------------------

def test_first_publication_returns_the_published_rule(rules, admin, agent, weekly):
    data = rules.publish(weekly, READ_ONLY).get_json()["data"]
    (grant,) = grants(weekly)
    assert data == {**data, "rule_id": weekly, "state": "published", "active_revision": 1,
                    "latest_revision": 1, "execution_mode": "plan_only", "grant_id": str(grant.id)}
    assert grant.revision == 1 and grant.granted_by == admin.user_id and grant.revoked_at is None
    assert lookup.current_grant(agent.tenant_id, uuid.UUID(weekly)).id == grant.id


@pytest.mark.parametrize("expected", [1, 5, 100, 101, 10 ** 30])
def test_a_first_publication_must_expect_no_active_revision(rules, weekly, expected):
    assert error(rules.publish(weekly, READ_ONLY, expected=expected)) == (409, "version_conflict", None)
    assert rules.rule(weekly)["state"] == "draft" and count(AutomationGrant) == 0


def test_a_republication_must_expect_the_active_revision(rules, agent, weekly):
    rules.publish(weekly, READ_ONLY)
    rules.save(weekly_rule(agent, name="Second"), rule_id=weekly, expected_revision=1)
    for stale in (None, 2):
        assert error(rules.publish(weekly, READ_ONLY, revision=2, expected=stale)) == (409, "version_conflict", None)
    assert rules.rule(weekly)["active_revision"] == 1 and len(grants(weekly)) == 1
    assert rules.publish(weekly, READ_ONLY, revision=2, expected=1).status_code == 200
    assert rules.rule(weekly)["active_revision"] == 2


def test_an_agent_deactivated_since_the_save_blocks_publishing(rules, agent, tenant):
    second = seat(tenant, "agent")
    rule_id = rules.create(weekly_rule(agent, second))
    second.active = False
    db.session.commit()
    response = rules.publish(rule_id, READ_ONLY)
    assert error(response) == (409, "rule_member_unavailable", "definition.slots[1].assignee_ref")
    assert rules.rule(rule_id)["state"] == "draft" and count(AutomationGrant) == 0


def test_an_agent_demoted_since_the_save_blocks_publishing(rules, agent):
    rule_id = rules.create(message_rule(agent))
    agent.role = "supervisor"
    db.session.commit()
    assert error(rules.publish(rule_id, READ_ONLY + KEYWORD)) == (
        409, "rule_member_unavailable", "definition.assignee_ref")


def test_every_publication_gets_a_fresh_grant_and_an_old_read_only_grant_never_widens(rules, agent, weekly):
    first_id = rules.publish(weekly, READ_ONLY).get_json()["data"]["grant_id"]
    data = rules.publish(weekly, SCHEDULED, expected=1, execution_mode="scheduled").get_json()["data"]
    first, second = grants(weekly)
    assert str(first.id) == first_id and data["grant_id"] == str(second.id) != first_id
    assert (first.execution_mode, first.permissions) == ("plan_only", READ_ONLY)
    assert first.revoked_at is not None and second.revoked_at is None
    assert (second.execution_mode, second.permissions) == ("scheduled", SCHEDULED)
    assert lookup.current_grant(agent.tenant_id, uuid.UUID(weekly)).id == second.id
    third_id = rules.publish(weekly, READ_ONLY, expected=1).get_json()["data"]["grant_id"]
    assert third_id not in (first_id, data["grant_id"])  # the same mode again is a fresh grant too
    assert [g.revoked_at is None for g in grants(weekly)] == [False, False, True]


def test_publishing_is_audited_without_the_definition(rules, admin, agent, weekly):
    grant_id = rules.publish(weekly, READ_ONLY).get_json()["data"]["grant_id"]
    entry = db.session.scalar(select(AuditEntry).where(AuditEntry.action == "automation.rule_published"))
    assert entry.target == f"automation_rule:{weekly}" and entry.actor_id == admin.user_id
    named = {key: entry.summary[key] for key in ("rule_id", "revision", "execution_mode", "grant_id")}
    assert named == {"rule_id": weekly, "revision": 1, "execution_mode": "plan_only", "grant_id": grant_id}
    assert "Weekday rotation" not in json.dumps(entry.summary) and str(agent.id) not in json.dumps(entry.summary)


# --- POST /{rule_id}/rule-pause --------------------------------------------------------------------

def test_pausing_revokes_the_grant_so_commands_are_blocked(rules, agent, weekly):
    rules.publish(weekly, READ_ONLY)
    response = rules.pause(weekly)
    assert response.status_code == 200
    data = response.get_json()["data"]
    assert (data["state"], data["grant_id"], data["execution_mode"], data["active_revision"]) == \
        ("paused", None, None, 1)
    (grant,) = grants(weekly)
    assert grant.revoked_at is not None
    assert lookup.current_grant(agent.tenant_id, uuid.UUID(weekly)) is None


def test_pausing_is_audited(rules, weekly):
    grant_id = rules.publish(weekly, READ_ONLY).get_json()["data"]["grant_id"]
    rules.pause(weekly)
    entry = db.session.scalar(select(AuditEntry).where(AuditEntry.action == "automation.rule_paused"))
    assert entry.target == f"automation_rule:{weekly}"
    assert entry.summary == {"rule_id": weekly, "active_revision": 1, "revoked_grant_ids": [grant_id],
                             "commands_cancelled": 0}


def test_only_a_published_rule_can_be_paused(rules, weekly):
    assert error(rules.pause(weekly)) == (409, "rule_not_published", None)
    rules.publish(weekly, READ_ONLY)
    assert rules.pause(weekly).status_code == 200
    assert error(rules.pause(weekly)) == (409, "rule_not_published", None)


def test_the_pause_body_must_be_empty(rules, weekly):
    rules.publish(weekly, READ_ONLY)
    assert error(rules.pause(weekly, {"confirm": True})) == (400, "invalid_json", "confirm")
    assert rules.rule(weekly)["state"] == "published"


def test_a_pause_body_is_checked_before_the_rule(rules):
    assert error(rules.pause(str(uuid.uuid4()), {"confirm": True})) == (400, "invalid_json", "confirm")


def test_republishing_after_a_pause_creates_a_fresh_grant(rules, agent, weekly):
    rules.publish(weekly, READ_ONLY)
    rules.pause(weekly)
    assert error(rules.publish(weekly, READ_ONLY)) == (409, "version_conflict", None)  # revision 1 is kept
    data = rules.publish(weekly, READ_ONLY, expected=1).get_json()["data"]
    old, new = grants(weekly)
    assert old.revoked_at is not None and new.revoked_at is None and data["grant_id"] == str(new.id)
    assert data["state"] == "published"
    assert lookup.current_grant(agent.tenant_id, uuid.UUID(weekly)).id == new.id


# --- platform switches ------------------------------------------------------------------------------

def test_with_planning_off_publishing_is_refused_but_saving_and_pausing_work(app, rules, agent, weekly, monkeypatch):
    rules.publish(weekly, READ_ONLY)
    monkeypatch.setitem(app.config, "AUTOMATION_PLANNING_ENABLED", False)
    assert rules.get("/automation-rules").get_json()["data"]["switches"]["planning_enabled"] is False
    assert rules.save(weekly_rule(agent, name="Second"), rule_id=weekly, expected_revision=1).status_code == 201
    assert error(rules.publish(weekly, READ_ONLY, revision=2, expected=1)) == (503, "planning_disabled", None)
    assert rules.pause(weekly).status_code == 200
    assert error(rules.publish(weekly, READ_ONLY, expected=1)) == (503, "planning_disabled", None)
    rules.create(weekly_rule(agent))
    assert len(grants(weekly)) == 1


@pytest.mark.parametrize("switch, code", [("AUTOMATION_SCHEDULE_EXECUTION_ENABLED", "schedule_execution_disabled"),
                                          ("ATOMIC_ASSIGNMENT_ENABLED", "atomic_assignment_disabled")])
def test_continuous_publishing_needs_its_switches(app, rules, agent, weekly, monkeypatch, switch, code):
    monkeypatch.setitem(app.config, switch, False)
    message = rules.create(message_rule(agent))
    assert error(rules.publish(weekly, SCHEDULED, execution_mode="scheduled")) == (503, code, None)
    assert error(rules.publish(message, MESSAGE_EVENT + KEYWORD, execution_mode="message_event")) == (503, code, None)
    assert count(AutomationGrant) == 0
    assert rules.publish(weekly, READ_ONLY).status_code == 200  # read-only publishing still works
