"""The Studio console JSON API: every endpoint, status and error code."""
import json
import uuid

import pytest
from sqlalchemy import func, select, update

from core.audit import AuditEntry
from core.db import db
from desk.handoff import issue_link_token
from desk.sessions import ASSISTANT, IMPERSONATION
from core.capabilities import CAPABILITY_VERSION
from studio.catalog import PUBLISH_PERMISSIONS, STARTER_DEFINITION
from studio.models import StudioApp, StudioRecord, StudioVersion
from tests.conftest import login, seat
from tests.support.studio import ORIGIN, ConsoleApi, sample_definition


def code(response) -> str:
    return response.get_json()["error"]["code"]


def record_body(version=1, data=None, key=None) -> dict:
    return {"version": version, "input": data or {"title": "Broken phone", "amount": 250},
            "idempotency_key": key or str(uuid.uuid4())}


# --- GET / and /capabilities -------------------------------------------------------------

def test_index_returns_console_metadata(api):
    data = api.get("/").get_json()["data"]
    assert data["apps"] == []
    assert data["permissions"] == PUBLISH_PERMISSIONS
    assert data["starter_definition"] == STARTER_DEFINITION
    assert data["capabilities"]["capability_version"] == CAPABILITY_VERSION
    assert data["ai_configured"] is False
    assert data["limits"]["apps_per_tenant"] == 20
    assert data["automation_preview_example"]["timezone"] == "Asia/Shanghai"
    assert "audience" in data
    assert api.get("").status_code == 200


def test_index_lists_apps_by_last_change_with_latest_version(api):
    first = api.create(sample_definition(name="First"))
    second = api.create(sample_definition(name="Second"))
    api.post(f"/{first}/versions", {"definition": sample_definition(name="First v2")})
    apps = api.get("/").get_json()["data"]["apps"]
    assert [a["extension_id"] for a in apps] == [first, second]
    assert apps[0]["latest_version"] == 2 and apps[0]["name"] == "First v2"
    assert apps[0]["enabled"] is False and apps[0]["active_version"] is None


def test_index_lists_at_most_twenty_apps(api, tenant):
    for n in range(20):
        api.create(sample_definition(name=f"App {n}"))
    assert len(api.get("/").get_json()["data"]["apps"]) == 20


def test_capabilities_lists_the_catalog(api):
    data = api.get("/capabilities").get_json()["data"]
    ids = {c["id"]: c["status"] for c in data["capabilities"]}
    assert data["capability_version"] == "2026-10-09.1"
    assert ids["payment.refund"] == "unavailable" and ids["sql.execute"] == "unavailable"
    assert "rule.starts_with" in ids and "field.checkbox" in ids


# --- POST / -------------------------------------------------------------------------------

def test_create_returns_version_one_draft(api):
    response = api.post("/", {"definition": sample_definition()})
    assert response.status_code == 201
    data = response.get_json()["data"]
    assert data["version"] == 1 and len(data["definition_hash"]) == 64
    assert data["definition"]["name"] == "Service request"
    found = db.session.get(StudioApp, uuid.UUID(data["extension_id"]))
    assert (found.enabled, found.active_version) == (False, None)


def test_create_refuses_an_invalid_definition_naming_the_path(api):
    bad = sample_definition()
    bad["fields"][2]["options"] = []
    response = api.post("/", {"definition": bad})
    assert response.status_code == 400
    assert response.get_json()["error"] == {"code": "invalid_definition", "detail": "fields[2].options"}
    assert db.session.scalar(select(func.count()).select_from(StudioApp)) == 0


def test_create_refuses_unknown_definition_properties(api):
    response = api.post("/", {"definition": sample_definition(script="alert(1)")})
    assert response.status_code == 400 and code(response) == "invalid_definition"


def test_create_without_definition_is_required_field_missing(api):
    response = api.post("/", {})
    assert response.status_code == 400 and code(response) == "required_field_missing"


def test_create_refuses_extra_request_properties(api):
    response = api.post("/", {"definition": sample_definition(), "tenant_id": str(uuid.uuid4())})
    assert response.status_code == 400 and code(response) == "invalid_json"


def test_twenty_first_app_is_refused_even_when_some_are_disabled(api):
    ids = [api.create(sample_definition(name=f"App {n}")) for n in range(20)]
    api.simulate(ids[0])
    api.publish(ids[0])
    api.post(f"/{ids[0]}/disable", {})
    response = api.post("/", {"definition": sample_definition()})
    assert response.status_code == 429 and code(response) == "extension_limit"


def test_app_limit_is_per_tenant(api, other_tenant, app):
    for n in range(20):
        api.create(sample_definition(name=f"App {n}"))
    other_admin = seat(other_tenant, "admin")
    browser = app.test_client()
    login(browser, other_admin.user.email)
    assert ConsoleApi(browser).post("/", {"definition": sample_definition()}).status_code == 201


# --- GET /{id} ----------------------------------------------------------------------------

def test_detail_returns_app_versions_records_and_permissions(api, live_app):
    api.post(f"/{live_app}/records", record_body())
    api.post(f"/{live_app}/versions", {"definition": sample_definition(name="v2")})
    data = api.get(f"/{live_app}").get_json()["data"]
    assert data["app"]["extension_id"] == live_app and data["app"]["active_version"] == 1
    assert [v["version"] for v in data["versions"]] == [2, 1]
    assert data["versions"][1]["simulated"] is True and data["versions"][0]["simulated"] is False
    assert data["records"][0]["data"] == {"title": "Broken phone", "amount": 250, "priority": "high"}
    assert data["permissions"] == PUBLISH_PERMISSIONS
    assert "chart_summaries" not in data  # no version has charts


def test_detail_returns_at_most_100_latest_records(api, live_app, tenant):
    found = db.session.get(StudioApp, uuid.UUID(live_app))
    db.session.add_all(StudioRecord(tenant_id=tenant.id, app_id=found.id, version=1, data={"title": str(n)},
                                    trace=[], idempotency_key=uuid.uuid4(), input_digest="x")
                       for n in range(105))
    db.session.commit()
    assert len(api.get(f"/{live_app}").get_json()["data"]["records"]) == 100


def test_detail_includes_chart_summaries_for_versions_with_charts(api):
    charts = [{"key": "by_priority", "title": "By priority", "type": "bar", "group_by": "priority",
               "metric": "count"}]
    app_id = api.create(sample_definition(charts=charts))
    api.simulate(app_id)
    api.publish(app_id)
    for amount in (10, 500, 700):
        api.post(f"/{app_id}/records", record_body(data={"title": "t", "amount": amount, "priority": "low"}))
    summary = api.get(f"/{app_id}").get_json()["data"]["chart_summaries"]["1"][0]
    assert summary["key"] == "by_priority" and summary["record_count"] == 3
    assert {p["label"]: p["value"] for p in summary["points"]} == {"high": 2, "low": 1}


# --- POST /{id}/versions --------------------------------------------------------------------

def test_new_version_leaves_earlier_versions_unchanged(api, draft_app):
    response = api.post(f"/{draft_app}/versions", {"definition": sample_definition(name="Renamed")})
    assert response.status_code == 201 and response.get_json()["data"]["version"] == 2
    v1 = db.session.scalar(select(StudioVersion).where(StudioVersion.version == 1))
    assert v1.definition["name"] == "Service request"


def test_version_101_is_refused(api, draft_app):
    db.session.execute(update(StudioApp).values(latest_version=100))
    db.session.commit()
    response = api.post(f"/{draft_app}/versions", {"definition": sample_definition()})
    assert response.status_code == 429 and code(response) == "version_limit"


def test_invalid_new_version_is_refused(api, draft_app):
    response = api.post(f"/{draft_app}/versions", {"definition": {"schema_version": 1}})
    assert response.status_code == 400 and code(response) == "required_field_missing"
    assert db.session.scalar(select(func.count()).select_from(StudioVersion)) == 1


# --- POST /{id}/simulate --------------------------------------------------------------------

def test_simulate_returns_rule_result_and_marks_the_version(api, draft_app):
    response = api.simulate(draft_app, data={"title": "Refund", "amount": 120})
    assert response.status_code == 200
    data = response.get_json()["data"]
    assert data["data"] == {"title": "Refund", "amount": 120, "priority": "high"}
    assert data["trace"] == [{"rule": "Big orders are high priority", "matched": True, "field": "priority"}]
    assert data["external_effects"] is False
    assert db.session.scalar(select(StudioVersion.simulated)) is True
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 0


def test_simulation_audit_entry_holds_no_sample_input(api, draft_app):
    api.simulate(draft_app, data={"title": "Very private sample text", "amount": 3})
    entry = db.session.scalar(select(AuditEntry).where(AuditEntry.action == "studio.simulated"))
    assert entry.summary["version"] == 1
    assert "Very private" not in str(entry.summary)


def test_simulate_with_invalid_input_marks_nothing(api, draft_app):
    response = api.simulate(draft_app, data={"amount": "12"})
    assert response.status_code == 400
    assert db.session.scalar(select(StudioVersion.simulated)) is False


def test_simulate_refuses_unknown_input_keys(api, draft_app):
    response = api.simulate(draft_app, data={"title": "x", "hack": 1})
    assert response.status_code == 400 and response.get_json()["error"]["detail"] == "input.hack"


@pytest.mark.parametrize("version", [0, -1, "1", 1.5, True, None])
def test_simulate_refuses_a_bad_version_number(api, draft_app, version):
    response = api.post(f"/{draft_app}/simulate", {"version": version, "input": {"title": "x"}})
    assert response.status_code == 400 and code(response) == "invalid_version"


@pytest.mark.parametrize("version", [7, 101, 2**31, 10**20])
def test_simulate_of_a_missing_version_is_not_found(api, draft_app, version):
    assert api.simulate(draft_app, version=version).status_code == 404


# --- POST /{id}/publish ---------------------------------------------------------------------

def test_publish_requires_a_simulated_version(api, draft_app):
    response = api.publish(draft_app)
    assert response.status_code == 409 and code(response) == "simulation_required"


@pytest.mark.parametrize("permissions", [None, [], list(reversed(PUBLISH_PERMISSIONS)),
                                         PUBLISH_PERMISSIONS[:2], PUBLISH_PERMISSIONS + ["x"]])
def test_publish_requires_the_exact_permission_array(api, draft_app, permissions):
    api.simulate(draft_app)
    response = api.post(f"/{draft_app}/publish", {"version": 1, "expected_active_version": None,
                                                  "permissions": permissions})
    assert response.status_code == 400 and code(response) == "permission_confirmation_required"
    assert db.session.scalar(select(StudioApp.enabled)) is False


def test_first_publish_makes_the_version_live(api, draft_app):
    api.simulate(draft_app)
    response = api.publish(draft_app)
    assert response.status_code == 200
    assert response.get_json()["data"] == {"enabled": True, "active_version": 1}


def test_publish_with_a_stale_expected_version_is_a_conflict(api, live_app):
    api.post(f"/{live_app}/versions", {"definition": sample_definition(name="v2")})
    api.simulate(live_app, version=2)
    response = api.publish(live_app, version=2, expected=None)
    assert response.status_code == 409 and code(response) == "version_conflict"
    assert api.publish(live_app, version=2, expected=1).status_code == 200


@pytest.mark.parametrize("field", ["version", "expected_active_version"])
@pytest.mark.parametrize("value", [0, -1, "1", 1.5, True])
def test_publish_refuses_a_bad_version_number(api, live_app, field, value):
    body = {"version": 1, "expected_active_version": 1, "permissions": PUBLISH_PERMISSIONS, field: value}
    response = api.post(f"/{live_app}/publish", body)
    assert response.status_code == 400 and code(response) == "invalid_version"


@pytest.mark.parametrize("missing", ["version", "expected_active_version"])
def test_publish_needs_the_version_and_the_expected_live_version(api, live_app, missing):
    body = {"version": 1, "expected_active_version": 1, "permissions": PUBLISH_PERMISSIONS}
    del body[missing]
    response = api.post(f"/{live_app}/publish", body)
    assert response.status_code == 400 and code(response) == "required_field_missing"
    assert response.get_json()["error"]["detail"] == missing


@pytest.mark.parametrize("version", [2, 101, 10**20])
def test_publish_of_a_missing_version_is_not_found(api, live_app, version):
    response = api.publish(live_app, version=version, expected=1)
    assert response.status_code == 404 and code(response) == "not_found"


@pytest.mark.parametrize("expected", [2, 10**20])
def test_publish_expecting_a_live_version_the_app_cannot_have_is_a_conflict(api, live_app, expected):
    response = api.publish(live_app, version=1, expected=expected)
    assert response.status_code == 409 and code(response) == "version_conflict"


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_code_confirmed_must_be_a_boolean(api, live_app, value):
    response = api.publish(live_app, version=1, expected=1, code_confirmed=value)
    assert response.status_code == 400 and code(response) == "invalid_json"
    assert response.get_json()["error"]["detail"] == "code_confirmed"


def test_publish_of_a_version_with_code_needs_code_confirmation(api, runner):
    app_id = api.create(sample_definition(code={"language": "javascript", "source": "return {};"}))
    assert api.simulate(app_id).status_code == 200
    response = api.publish(app_id)
    assert response.status_code == 400 and code(response) == "code_confirmation_required"
    assert api.publish(app_id, code_confirmed=True).status_code == 200


def test_each_new_version_with_code_needs_its_own_code_confirmation(api, runner):
    app_id = api.create(sample_definition(code={"language": "javascript", "source": "return {};"}))
    api.simulate(app_id)
    assert api.publish(app_id, code_confirmed=True).status_code == 200
    api.post(f"/{app_id}/versions", {"definition": sample_definition(
        code={"language": "javascript", "source": "return {amount: 1};"})})
    assert api.simulate(app_id, version=2).status_code == 200
    response = api.publish(app_id, version=2, expected=1)
    assert response.status_code == 400 and code(response) == "code_confirmation_required"


def test_rollback_to_an_older_version_keeps_saved_records(api, live_app):
    api.post(f"/{live_app}/records", record_body())
    api.post(f"/{live_app}/versions", {"definition": sample_definition(name="v2")})
    api.simulate(live_app, version=2)
    api.publish(live_app, version=2, expected=1)
    api.post(f"/{live_app}/records", record_body(version=2))
    assert api.publish(live_app, version=1, expected=2).get_json()["data"]["active_version"] == 1
    assert sorted(db.session.scalars(select(StudioRecord.version))) == [1, 2]


# --- POST /{id}/disable and re-enable ---------------------------------------------------------

def test_disable_keeps_the_version_and_blocks_submissions(api, live_app):
    response = api.post(f"/{live_app}/disable", {})
    assert response.get_json()["data"] == {"enabled": False, "active_version": 1}
    refused = api.post(f"/{live_app}/records", record_body())
    assert refused.status_code == 409 and code(refused) == "extension_not_active"


def test_reenable_uses_publish_with_the_retained_version(api, live_app):
    api.post(f"/{live_app}/disable", {})
    assert api.publish(live_app, expected=None).status_code == 409
    assert api.publish(live_app, expected=1).get_json()["data"] == {"enabled": True, "active_version": 1}
    assert api.post(f"/{live_app}/records", record_body()).status_code == 200


def test_disable_refuses_a_body_with_properties(api, live_app):
    assert code(api.post(f"/{live_app}/disable", {"force": True})) == "invalid_json"


# --- POST /{id}/records ----------------------------------------------------------------------

def test_record_of_the_live_version_is_saved_after_rules(api, live_app):
    response = api.post(f"/{live_app}/records", record_body())
    assert response.status_code == 200
    data = response.get_json()["data"]
    assert data["data"] == {"title": "Broken phone", "amount": 250, "priority": "high"}
    assert data["external_effects"] is False and data["trace"][0]["matched"] is True
    stored = db.session.get(StudioRecord, uuid.UUID(data["record_id"]))
    assert stored.data == data["data"] and stored.version == 1


@pytest.mark.parametrize("data", [{"title": "nul \x00 byte"}, {"title": "T", "priority": "low", "amount": 1,
                                                              "due": "2026-01-01", "urgent": False, "title2": 1}])
def test_record_with_a_nul_byte_or_unknown_key_is_refused_not_a_server_error(api, live_app, data):
    response = api.post(f"/{live_app}/records", record_body(data=data))
    assert response.status_code == 400 and code(response) == "invalid_json"
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 0


def test_unknown_request_properties_are_named_in_the_order_sent(api, live_app):
    raw = json.dumps({**record_body(), "zeta": 1, "alpha": 2})  # the test client's json= sorts keys
    response = api.client.post(f"/api/extensions/{live_app}/records", data=raw,
                               content_type="application/json", headers=ORIGIN)
    assert response.get_json()["error"]["detail"] == "zeta"


def test_origin_is_checked_before_the_application_is_looked_up(api):
    response = api.client.post(f"/api/extensions/{uuid.uuid4()}/records", json=record_body())
    assert response.status_code == 403 and code(response) == "forbidden"


def test_record_of_a_draft_app_is_refused(api, draft_app):
    response = api.post(f"/{draft_app}/records", record_body())
    assert response.status_code == 409 and code(response) == "extension_not_active"


def test_record_of_another_version_than_the_live_one_is_refused(api, live_app):
    api.post(f"/{live_app}/versions", {"definition": sample_definition()})
    response = api.post(f"/{live_app}/records", record_body(version=2))
    assert response.status_code == 409 and code(response) == "extension_not_active"


def test_replayed_key_returns_the_original_record(api, live_app):
    body = record_body()
    first = api.post(f"/{live_app}/records", body).get_json()["data"]
    again = api.post(f"/{live_app}/records", body)
    assert again.status_code == 200
    assert again.get_json()["data"] == {"record_id": first["record_id"], "replayed": True}
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 1


def test_same_key_with_different_input_is_a_conflict(api, live_app):
    body = record_body(data={"title": "A", "amount": 1})
    api.post(f"/{live_app}/records", body)
    changed = {**body, "input": {"title": "B", "amount": 1}}
    response = api.post(f"/{live_app}/records", changed)
    assert response.status_code == 409 and code(response) == "idempotency_conflict"


def test_same_key_with_reordered_input_keys_is_a_conflict(api, live_app):
    key = str(uuid.uuid4())

    def send(raw_input: str):
        raw = f'{{"version": 1, "idempotency_key": "{key}", "input": {raw_input}}}'
        return api.client.post(f"/api/extensions/{live_app}/records", data=raw,
                               content_type="application/json", headers=ORIGIN)

    assert send('{"title": "A", "amount": 1}').status_code == 200
    assert send('{"title": "A", "amount": 1}').get_json()["data"]["replayed"] is True
    response = send('{"amount": 1, "title": "A"}')
    assert response.status_code == 409 and code(response) == "idempotency_conflict"


@pytest.mark.parametrize("key", ["", "not-a-uuid", 12, None, "0" * 32])
def test_record_needs_a_uuid_idempotency_key(api, live_app, key):
    response = api.post(f"/{live_app}/records", {**record_body(), "idempotency_key": key})
    assert response.status_code == 400 and code(response) == "invalid_idempotency_key"


def test_invalid_record_input_saves_nothing(api, live_app):
    response = api.post(f"/{live_app}/records", record_body(data={"amount": 5}))
    assert response.status_code == 400 and code(response) == "required_field_missing"
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 0


def test_thousand_and_first_record_is_refused(api, live_app):
    db.session.execute(update(StudioApp).values(record_count=999))
    db.session.commit()
    assert api.post(f"/{live_app}/records", record_body()).status_code == 200
    response = api.post(f"/{live_app}/records", record_body())
    assert response.status_code == 429 and code(response) == "record_limit"
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 1


@pytest.mark.parametrize("version", [0, -1, "1", 1.5, True, None])
def test_record_refuses_a_bad_version_number(api, live_app, version):
    response = api.post(f"/{live_app}/records", record_body(version=version))
    assert response.status_code == 400 and code(response) == "invalid_version"


def test_a_huge_record_version_is_not_the_live_one(api, live_app):
    response = api.post(f"/{live_app}/records", record_body(version=10**20))
    assert response.status_code == 409 and code(response) == "extension_not_active"


@pytest.mark.parametrize("missing", ["version", "input", "idempotency_key"])
def test_record_needs_version_input_and_key(api, live_app, missing):
    body = record_body()
    del body[missing]
    response = api.post(f"/{live_app}/records", body)
    assert response.status_code == 400 and code(response) == "required_field_missing"
    assert response.get_json()["error"]["detail"] == missing


def test_detail_lists_the_latest_records_of_every_version(api, live_app):
    first = api.post(f"/{live_app}/records", record_body()).get_json()["data"]["record_id"]
    api.post(f"/{live_app}/versions", {"definition": sample_definition(name="v2")})
    api.simulate(live_app, version=2)
    api.publish(live_app, version=2, expected=1)
    second = api.post(f"/{live_app}/records", record_body(version=2)).get_json()["data"]["record_id"]
    listed = api.get(f"/{live_app}").get_json()["data"]["records"]
    assert [(r["record_id"], r["version"]) for r in listed] == [(second, 2), (first, 1)]


def test_record_count_spans_all_versions(api, live_app):
    api.post(f"/{live_app}/records", record_body())
    api.post(f"/{live_app}/versions", {"definition": sample_definition()})
    api.simulate(live_app, version=2)
    api.publish(live_app, version=2, expected=1)
    api.post(f"/{live_app}/records", record_body(version=2))
    assert db.session.scalar(select(StudioApp.record_count)) == 2


# --- isolation, methods, sessions, switches ----------------------------------------------------

@pytest.mark.parametrize("method,suffix,body", [
    ("get", "", None), ("post", "/versions", {"definition": {}}), ("post", "/simulate", {}),
    ("post", "/publish", {}), ("post", "/disable", {}), ("post", "/records", {})])
def test_another_tenants_app_is_not_found(app, live_app, other_tenant, method, suffix, body):
    other_admin = seat(other_tenant, "admin")
    browser = app.test_client()
    login(browser, other_admin.user.email)
    other = ConsoleApi(browser)
    response = other.get(f"/{live_app}") if method == "get" else other.post(f"/{live_app}{suffix}", body)
    assert response.status_code == 404 and code(response) == "not_found"


@pytest.mark.parametrize("method", ["patch", "delete", "put", "options"])
def test_no_patch_put_delete_or_options(api, draft_app, method):
    response = getattr(api.client, method)(f"/api/extensions/{draft_app}", json={}, headers=ORIGIN)
    assert response.status_code == 404 and code(response) == "not_found" and "Allow" not in response.headers


@pytest.mark.parametrize("path", ["/nope", f"/{uuid.uuid4()}", "/not-a-uuid/simulate", "/capabilities/x"])
def test_unsupported_or_missing_paths_are_not_found(api, path):
    response = api.get(path)
    assert response.status_code == 404 and code(response) == "not_found"


def test_posts_need_the_same_origin(api, draft_app):
    response = api.client.post(f"/api/extensions/{draft_app}/disable", json={})
    assert response.status_code == 403 and code(response) == "forbidden"


def test_anonymous_agent_and_restricted_sessions_are_refused(app, admin, agent_client):
    assert app.test_client().get("/api/extensions/").status_code == 401
    assert code(agent_client.get("/api/extensions/")) == "forbidden"
    for kind, route in ((IMPERSONATION, "staff/impersonate"), (ASSISTANT, "assistant/login")):
        browser = app.test_client()
        browser.get(f"/{route}/{issue_link_token(kind, admin)}")
        response = browser.get("/api/extensions/")
        assert response.status_code == 403 and code(response) == "session_scope_forbidden"


def test_extensions_switch_turns_the_api_off(api, app):
    app.config["EXTENSIONS_ENABLED"] = False
    try:
        response = api.get("/")
        assert response.status_code == 503 and code(response) == "extensions_disabled"
    finally:
        app.config["EXTENSIONS_ENABLED"] = True


@pytest.mark.parametrize("store", ["SQLALCHEMY_DATABASE_URI", "REDIS_URL"])
def test_an_unreachable_store_is_extensions_unavailable(api, app_config, live_app, store):
    from tests.conftest import build_app

    unreachable = {"SQLALCHEMY_DATABASE_URI": "postgresql+psycopg://studio@127.0.0.1:1/none",
                   "REDIS_URL": "redis://127.0.0.1:1/0"}  # nothing listens on port 1
    broken = build_app({**app_config, store: unreachable[store]}).test_client()
    broken.set_cookie("session", api.client.get_cookie("session").value)  # the same signed session
    if store == "REDIS_URL":  # the database works: reach the script rate limit, kept in Redis
        version = api.post(f"/{live_app}/versions", {"definition": sample_definition(
            code={"language": "javascript", "source": "return {};"})}).get_json()["data"]["version"]
        response = broken.post(f"/api/extensions/{live_app}/simulate", json={"version": version,
                               "input": {"title": "x"}}, headers=ORIGIN)
    else:
        response = broken.get("/api/extensions/")
    assert response.status_code == 503 and code(response) == "extensions_unavailable"
    assert "Traceback" not in response.get_data(as_text=True)


def test_bearer_tokens_are_not_accepted_by_the_console_api(app, live_app):
    browser = app.test_client()
    headers = {"Authorization": "Bearer some-open-api-token", **ORIGIN}
    assert code(browser.get("/api/extensions/", headers=headers)) == "unauthorized"
    response = browser.post(f"/api/extensions/{live_app}/records", json=record_body(), headers=headers)
    assert response.status_code == 401


def test_the_console_reads_its_list_and_body_limits_from_the_catalog(api, monkeypatch):
    from studio.catalog import LIMITS

    live = [api.create() for _ in range(3)]
    for _ in range(3):
        api.post(f"/{live[0]}/versions", {"definition": sample_definition()})
    monkeypatch.setitem(LIMITS, "list_apps", 2)
    monkeypatch.setitem(LIMITS, "list_versions", 2)
    monkeypatch.setitem(LIMITS, "body_bytes", 300)
    assert len(api.get("/").get_json()["data"]["apps"]) == 2
    assert len(api.get(f"/{live[0]}").get_json()["data"]["versions"]) == 2
    response = api.post("/", {"definition": sample_definition()})
    assert response.status_code == 413 and code(response) == "request_too_large"
