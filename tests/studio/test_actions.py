"""Record actions through the console API: bindings that pass the egress rules at bind time and at
every run, runs sent once by real RQ workers to a real HTTPS receiver on loopback, the platform's
8 POSTs in flight and the tenant's 20 attempts a minute across processes, and campaign drafts."""
import json
import logging
import subprocess
import sys
import uuid
from datetime import timedelta

import pytest
from cryptography.fernet import Fernet
from rq import Queue
from sqlalchemy import func, select, update

from core.clock import utcnow
from core.config import PROJECT_ROOT
from core.db import db
from core.queue_names import WEBHOOKS
from studio import actions
from studio.models import StudioActionBinding, StudioActionRun
from studio.templates_market import TEMPLATES
from tests.conftest import (FLASK, LONG_WINDOW, csrf_from, customer_conversation, egress_env, login, process_env, seat,
                            worker_killed_once)
from studio.apps import get_app
from studio.workbench import add_to_workbench, open_entry, set_grants, submit
from tests.support.studio import ORIGIN, sample_definition
from tests.support.actions import (CAMPAIGN_ACTION, FIELDS, TOKEN, action_definition, audit_of, bind, bound, drafts,
                                   professional, publish_new_version, run_action, run_count, save, send_actions,
                                   the_run)
from tests.support.generation import app_answer, generate
from tests.support.workbench_tools import PROFILE, WORKBENCH


def ran(api, redis_conn, app_id: str, record_id: str, binding_id: str) -> dict:
    """Run the http action and its job; the outcome a repeated request reads."""
    started = run_action(api, app_id, record_id, binding_id)
    assert started.status_code == 202 and started.get_json()["data"]["status"] == "queued", started.get_json()
    send_actions(redis_conn)
    again = run_action(api, app_id, record_id, binding_id)
    assert again.status_code == 200
    return again.get_json()["data"]


# --- bindings --------------------------------------------------------------------------------------

def test_the_summary_lists_every_versions_actions_and_never_the_token_or_path(api, acting, receiver, admin):
    binding_id = bound(api, acting, receiver.url("localhost", "/secret-path/hook"), bearer_token=TOKEN)
    publish_new_version(api, acting, action_definition(name="Second"), 2)
    answer = api.get(f"/{acting}/actions")
    assert answer.status_code == 200
    entries = answer.get_json()["data"]["actions"]
    assert [(e["version"], e["action_key"], e["kind"], e["live"]) for e in entries] == [
        (2, "crm", "http", True), (2, "promo", "campaign", True),
        (1, "crm", "http", False), (1, "promo", "campaign", False)]
    assert entries[0]["binding"] is None and entries[1]["binding"] is None  # a new version needs a new binding
    binding = entries[2]["binding"]
    assert binding["binding_id"] == binding_id and binding["endpoint_host"] == "localhost"
    assert binding["enabled"] is True and binding["bearer_token_set"] is True
    assert binding["bound_by"] == admin.user.email and binding["bound_at"].endswith("Z")
    text = answer.get_data(as_text=True)
    assert TOKEN not in text and "secret-path" not in text


@pytest.mark.parametrize("body, status, code", [
    ({"confirm": False}, 400, "action_confirmation_required"),
    ({"confirm": "yes"}, 400, "action_confirmation_required"),
    ({"action_key": "promo"}, 400, "invalid_action_kind"),
    ({"action_key": "nope"}, 404, "not_found"),
    ({"action_key": 7}, 400, "invalid_action_key"),
    ({"version": 9}, 404, "not_found"),
    ({"version": "1"}, 400, "invalid_version"),
    ({"bearer_token": "two words"}, 400, "invalid_bearer_token"),
    ({"bearer_token": "x\r\nX-Injected: 1"}, 400, "invalid_bearer_token"),
    ({"bearer_token": 12}, 400, "invalid_bearer_token"),
    ({"tenant_id": str(uuid.uuid4())}, 400, "invalid_json"),
])
def test_binding_needs_confirmation_and_an_http_action_of_a_version_of_this_app(api, acting, receiver, body, status,
                                                                                 code):
    request = {"operation": "bind", "version": 1, "action_key": "crm", "endpoint": receiver.url("localhost"),
               "confirm": True, **body}
    answer = api.post(f"/{acting}/actions", request)
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (status, code)
    assert db.session.scalar(select(func.count()).select_from(StudioActionBinding)) == 0


def test_another_tenants_app_cannot_be_bound(api, acting, receiver, other_tenant, app):
    other_admin = seat(other_tenant, "admin", "other-admin@test.example")
    db.session.commit()
    client = app.test_client()
    login(client, other_admin.user.email)
    answer = client.post(f"/api/extensions/{acting}/actions", headers=ORIGIN, json={
        "operation": "bind", "version": 1, "action_key": "crm", "endpoint": receiver.url("localhost"), "confirm": True})
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (404, "not_found")
    assert client.get(f"/api/extensions/{acting}/actions").status_code == 404


@pytest.mark.parametrize("endpoint, rule", [
    ("http://crm.example.com/hook", "https_required"),
    ("https://crm.example.com:8443/hook", "port_not_allowed"),
    ("https://crm.example.com/hook?token=1", "query_not_allowed"),
    ("https://crm.example.com/hook#frag", "query_not_allowed"),
    ("https://user:pw@crm.example.com/hook", "credentials_in_url"),
    ("https://[::1]/hook", "ipv6_not_supported"),
    ("https://internal.test/hook", "address_not_public"),
    ("https://metadata.test/latest", "address_not_public"),
    ("https://mixed.test/hook", "address_not_public"),
    ("https://nowhere.test/hook", "dns_failed"),
    ("crm.example.com/hook", "https_required"),
    ("https://127.0.0.1:8444/a\r\nX: 1", "invalid_characters"),
    (" https://crm.example.com/hook", "invalid_characters"),
    ("https://crm.example.com/hook\x00", "invalid_characters"),
    ("https://crm.example.com/my hook", "invalid_characters"),
    ("https://crm.example.com/hook\u2028", "invalid_characters"),
    ("https://CRM.example.com/hook", "not_normalized"),
    ("HTTPS://crm.example.com/hook", "not_normalized"),
    ("https://crm.example.com./hook", "not_normalized"),
    ("https://crm.example.com:443/hook", "not_normalized"),
    ("https://0x7f.0.0.1/hook", "not_normalized"),
    ("https://2130706433/hook", "not_normalized"),
    ("https://010.0.0.1/hook", "not_normalized"),
    ("https://crm.example.com/a/../hook", "not_normalized"),
    ("https://crm.example.com/a/%2E%2E/hook", "not_normalized"),
    ("https://crm.example.com/hook%zz", "not_normalized"),
    ("https://crm.example.com/ü", "not_normalized"),
])
def test_an_address_must_pass_the_egress_rules_at_bind_time(api, acting, dns, endpoint, rule):
    dns.update({"internal.test": [["10.0.0.7"]], "metadata.test": [["169.254.169.254"]],
                "mixed.test": [["93.184.216.34", "192.168.1.20"]], "crm.example.com": [["93.184.216.34"]]})
    answer = bind(api, acting, endpoint)
    assert answer.status_code == 400
    assert answer.get_json()["error"] == {"code": "invalid_endpoint", "detail": rule}
    assert db.session.scalar(select(func.count()).select_from(StudioActionBinding)) == 0


def test_a_public_address_binds_without_a_token(api, acting, dns):
    dns["crm.example.com"] = [["93.184.216.34"]]
    answer = bind(api, acting, "https://crm.example.com/hooks/orders")
    assert answer.status_code == 201
    data = answer.get_json()["data"]
    assert (data["endpoint_host"], data["bearer_token_set"], data["enabled"]) == ("crm.example.com", False, True)


def test_the_bearer_token_is_stored_encrypted_and_never_echoed_or_logged(api, acting, receiver, redis_conn, caplog):
    caplog.set_level(logging.DEBUG)
    answer = bind(api, acting, receiver.url("localhost"), bearer_token=TOKEN)
    assert answer.status_code == 201 and TOKEN not in answer.get_data(as_text=True)
    stored = db.session.scalar(select(StudioActionBinding.bearer_token))
    assert stored and TOKEN not in stored
    record_id = save(api, acting, {"title": "Order 7"})
    outcome = ran(api, redis_conn, acting, record_id, answer.get_json()["data"]["binding_id"])
    assert outcome["status"] == "accepted"
    assert receiver.received[0].headers["Authorization"] == f"Bearer {TOKEN}"
    assert TOKEN not in caplog.text
    assert all(TOKEN not in json.dumps(entry.summary) for entry in audit_of("studio.action_bound"))
    assert TOKEN not in api.get(f"/{acting}/actions").get_data(as_text=True)


def test_a_new_address_replaces_the_binding_and_revoke_disables_it(api, acting, receiver):
    first = bound(api, acting, receiver.url("localhost", "/one"))
    second = bound(api, acting, receiver.url("localhost", "/two"))
    db.session.rollback()
    states = dict(db.session.execute(select(StudioActionBinding.id, StudioActionBinding.enabled)).all())
    assert states == {uuid.UUID(first): False, uuid.UUID(second): True}
    record_id = save(api, acting, {"title": "Order 1"})
    assert run_action(api, acting, record_id, first).get_json()["error"]["code"] == "binding_not_active"
    revoked = api.post(f"/{acting}/actions", {"operation": "bind", "version": 1, "action_key": "crm", "enabled": False})
    assert revoked.status_code == 200
    assert (revoked.get_json()["data"]["binding_id"], revoked.get_json()["data"]["enabled"]) == (second, False)
    assert run_action(api, acting, record_id, second).get_json()["error"]["code"] == "binding_not_active"
    again = api.post(f"/{acting}/actions", {"operation": "bind", "version": 1, "action_key": "crm", "enabled": False})
    assert (again.status_code, again.get_json()["error"]["code"]) == (404, "not_found")
    assert run_count() == 0 and receiver.received == []


def test_revoking_takes_enabled_false_and_nothing_else(api, acting, receiver):
    bound(api, acting, receiver.url("localhost"))
    for extra, code in (({"enabled": True}, "invalid_json"), ({"enabled": False, "endpoint": "x"}, "invalid_json")):
        answer = api.post(f"/{acting}/actions", {"operation": "bind", "version": 1, "action_key": "crm", **extra})
        assert (answer.status_code, answer.get_json()["error"]["code"]) == (400, code)
    assert api.post(f"/{acting}/actions", {"operation": "unbind"}).get_json()["error"]["code"] == "invalid_operation"


def test_bind_revoke_and_every_run_are_audited_with_who_which_record_action_and_outcome(api, acting, receiver,
                                                                                          redis_conn, admin):
    binding_id = bound(api, acting, receiver.url("localhost"), bearer_token=TOKEN)
    record_id = save(api, acting, {"title": "Order 1", "notes": "call back"})
    ran(api, redis_conn, acting, record_id, binding_id)
    api.post(f"/{acting}/actions", {"operation": "bind", "version": 1, "action_key": "crm", "enabled": False})
    (bound_entry,) = audit_of("studio.action_bound")
    assert bound_entry.actor_id == admin.user_id and bound_entry.summary == {
        "version": 1, "action_key": "crm", "binding_id": binding_id, "endpoint_host": "localhost",
        "bearer_token_set": True}
    (revoked_entry,) = audit_of("studio.action_revoked")
    assert revoked_entry.summary["binding_id"] == binding_id and revoked_entry.actor_id == admin.user_id
    (run_entry,) = audit_of("studio.action_run")
    assert run_entry.actor_id == admin.user_id and run_entry.target == f"studio_record:{record_id}"
    assert run_entry.summary == {"app_id": acting, "action_key": "crm", "kind": "http", "outcome": "accepted",
                                 "http_status": 200, "run_id": str(actions.action_id(uuid.UUID(record_id), "crm"))}
    assert "call back" not in json.dumps(run_entry.summary)  # the record's values stay out of the audit log


# --- runs ------------------------------------------------------------------------------------------

def test_a_run_posts_exactly_the_filled_declared_fields_with_the_action_id(api, acting, receiver, redis_conn):
    binding_id = bound(api, acting, receiver.url("localhost", "/hooks/orders"))
    record_id = save(api, acting, {"title": "Order 7", "amount": 120, "notes": "", "tag": "vip", "urgent": False})
    outcome = ran(api, redis_conn, acting, record_id, binding_id)
    (seen,) = receiver.received
    # notes unfilled, tag not declared by the action
    assert json.loads(seen.body) == {"title": "Order 7", "amount": 120, "urgent": False}
    assert list(json.loads(seen.body)) == ["title", "amount", "urgent"]  # the action's order
    assert seen.path == "/hooks/orders" and seen.server_name == "localhost"
    assert seen.headers["Content-Type"] == "application/json" and "Authorization" not in seen.headers
    action_id = str(uuid.uuid5(actions.ACTION_IDS, f"{record_id}:crm"))
    assert seen.headers["x-service-action-id"] == action_id == outcome["run_id"]
    assert outcome["record_id"] == record_id and outcome["replayed"] is True


def test_the_action_id_is_stable_per_record_and_action():
    first, second = uuid.uuid4(), uuid.uuid4()
    assert actions.action_id(first, "crm") == actions.action_id(first, "crm")
    ids = {actions.action_id(first, "crm"), actions.action_id(first, "promo"), actions.action_id(second, "crm")}
    assert len(ids) == 3


@pytest.mark.parametrize("status, outcome", [(200, "accepted"), (201, "accepted"), (204, "accepted"),
                                             (299, "accepted"), (400, "failed"), (404, "failed"), (409, "failed"),
                                             (500, "failed"), (503, "failed")])
def test_a_2xx_answer_is_accepted_not_completed_and_any_other_fails_and_neither_is_resent(
        api, acting, receiver, redis_conn, status, outcome):
    receiver.answers.append((status, {}, b"answer"))
    binding_id = bound(api, acting, receiver.url("localhost"))
    data = ran(api, redis_conn, acting, save(api, acting, {"title": "A"}), binding_id)
    assert (data["status"], data["http_status"]) == (outcome, status)
    send_actions(redis_conn)
    actions.sweep()
    assert len(receiver.received) == 1


def test_a_redirect_is_not_followed(api, acting, receiver, redis_conn):
    receiver.answers.append((302, {"Location": receiver.url("localhost", "/elsewhere")}, b""))
    binding_id = bound(api, acting, receiver.url("localhost"))
    outcome = ran(api, redis_conn, acting, save(api, acting, {"title": "A"}), binding_id)
    assert (outcome["status"], outcome["http_status"]) == ("failed", 302)
    assert [seen.path for seen in receiver.received] == ["/hook"]


def test_each_action_runs_once_per_record(api, acting, receiver, redis_conn):
    binding_id = bound(api, acting, receiver.url("localhost"))
    record_id = save(api, acting, {"title": "A"})
    first = run_action(api, acting, record_id, binding_id)
    twin = run_action(api, acting, record_id, binding_id)
    assert first.get_json()["data"]["replayed"] is False and twin.get_json()["data"]["replayed"] is True
    assert twin.get_json()["data"]["run_id"] == first.get_json()["data"]["run_id"]
    send_actions(redis_conn)
    assert actions.execute(uuid.UUID(first.get_json()["data"]["run_id"])) == "accepted"  # a duplicate job sends nothing
    repeated = run_action(api, acting, record_id, binding_id)
    assert repeated.status_code == 200 and repeated.get_json()["data"]["status"] == "accepted"
    assert len(receiver.received) == 1 and run_count() == 1
    assert len(audit_of("studio.action_run")) == 1
    other = save(api, acting, {"title": "B"})
    assert ran(api, redis_conn, acting, other, binding_id)["status"] == "accepted"
    assert len(receiver.received) == 2


def test_a_timeout_awaits_verification_and_is_never_resent(api, acting, receiver, redis_conn, app, monkeypatch):
    monkeypatch.setitem(app.config, "ACTION_TIMEOUT_SECONDS", 1.0)
    receiver.answers.append((200, {}, b"late", 3))
    binding_id = bound(api, acting, receiver.url("localhost"))
    record_id = save(api, acting, {"title": "A"})
    outcome = ran(api, redis_conn, acting, record_id, binding_id)
    assert (outcome["status"], outcome["error"]) == ("awaiting_verification", "timeout")
    assert "http_status" not in outcome
    run_id = uuid.UUID(outcome["run_id"])
    assert actions.execute(run_id) == "awaiting_verification"
    db.session.execute(update(StudioActionRun).values(created_at=utcnow() - timedelta(hours=1)))
    db.session.commit()
    actions.sweep()
    send_actions(redis_conn)
    assert len(receiver.received) == 1 and the_run(str(run_id)).status == "awaiting_verification"


def test_an_interrupted_send_awaits_verification_and_is_never_resent(api, acting, receiver, redis_conn):
    binding_id = bound(api, acting, receiver.url("localhost"))
    record_id = save(api, acting, {"title": "A"})
    run_id = run_action(api, acting, record_id, binding_id).get_json()["data"]["run_id"]
    Queue(WEBHOOKS, connection=redis_conn).empty()  # the worker died after claiming it
    db.session.execute(update(StudioActionRun).values(status="sending", started_at=utcnow() - timedelta(seconds=30)))
    db.session.commit()
    assert actions.sweep() == 0  # still within the job's bound: maybe in flight
    found = _swept_past_its_bound(run_id, redis_conn)
    assert (found.status, found.error) == ("awaiting_verification", "interrupted")
    assert receiver.received == [] and audit_of("studio.action_run")[0].summary["outcome"] == "awaiting_verification"


def test_a_worker_killed_mid_send_awaits_verification_and_is_never_resent(app, app_config, api, acting, receiver,
                                                                           redis_conn):
    binding_id = bound(api, acting, receiver.url("localhost"))
    record_id = save(api, acting, {"title": "A"})
    receiver.answers.append((200, {}, b"too late", 30))  # the POST stalls: the worker dies in it
    run_id = run_action(api, acting, record_id, binding_id).get_json()["data"]["run_id"]
    worker_killed_once(app_config, lambda: receiver.received, **egress_env(app))
    assert the_run(run_id).status == "sending"
    found = _swept_past_its_bound(run_id, redis_conn)
    assert (found.status, found.error) == ("awaiting_verification", "interrupted")
    assert len(receiver.received) == 1  # sent once, never again


def _swept_past_its_bound(run_id: str, redis_conn) -> StudioActionRun:
    """The run after time passed beyond the job's bound, the tick's sweep found it and a worker ran
    what the sweep queued."""
    long_ago = utcnow() - timedelta(seconds=actions.STUCK_SECONDS + 1)
    db.session.execute(update(StudioActionRun).values(started_at=long_ago))
    db.session.commit()
    assert actions.sweep() == 1
    send_actions(redis_conn)
    return the_run(run_id)


def test_a_queued_run_whose_job_was_lost_is_queued_again_and_sent_once(api, acting, receiver, redis_conn):
    binding_id = bound(api, acting, receiver.url("localhost"))
    run_id = run_action(api, acting, save(api, acting, {"title": "A"}), binding_id).get_json()["data"]["run_id"]
    Queue(WEBHOOKS, connection=redis_conn).empty()
    db.session.execute(update(StudioActionRun).values(created_at=utcnow() - timedelta(hours=1)))
    db.session.commit()
    assert actions.sweep() == 1
    actions.sweep()  # the same job id: queued once
    send_actions(redis_conn)
    assert the_run(run_id).status == "accepted" and len(receiver.received) == 1


def test_an_address_that_turns_internal_after_binding_is_refused_at_the_run(api, acting, receiver, redis_conn, dns):
    dns["receiver.test"] = [["127.0.0.1"], ["10.1.2.3"]]  # public (for the test) when bound, internal at the run
    binding_id = bound(api, acting, receiver.url("receiver.test"))
    outcome = ran(api, redis_conn, acting, save(api, acting, {"title": "A"}), binding_id)
    assert (outcome["status"], outcome["error"]) == ("failed", "address_not_public")
    assert receiver.received == []


def test_a_token_that_no_longer_decrypts_fails_the_run_unsent(api, acting, receiver, redis_conn, app, monkeypatch):
    binding_id = bound(api, acting, receiver.url("localhost"), bearer_token=TOKEN)
    record_id = save(api, acting, {"title": "A"})
    assert run_action(api, acting, record_id, binding_id).status_code == 202
    monkeypatch.setitem(app.config, "ENCRYPTION_KEY", Fernet.generate_key().decode())  # the key ring lost its key
    send_actions(redis_conn)
    outcome = run_action(api, acting, record_id, binding_id).get_json()["data"]
    assert (outcome["status"], outcome["error"]) == ("failed", "credentials_unreadable") and receiver.received == []


def test_a_binding_revoked_before_the_job_stops_the_run(api, acting, receiver, redis_conn):
    binding_id = bound(api, acting, receiver.url("localhost"))
    record_id = save(api, acting, {"title": "A"})
    assert run_action(api, acting, record_id, binding_id).status_code == 202
    api.post(f"/{acting}/actions", {"operation": "bind", "version": 1, "action_key": "crm", "enabled": False})
    send_actions(redis_conn)
    outcome = run_action(api, acting, record_id, binding_id).get_json()["data"]
    assert (outcome["status"], outcome["error"]) == ("failed", "binding_revoked") and receiver.received == []


def test_only_records_of_the_live_version_run(api, acting, receiver):
    binding_id = bound(api, acting, receiver.url("localhost"))
    old_record = save(api, acting, {"title": "Old"})
    publish_new_version(api, acting, action_definition(name="Second"), 2)
    new_binding = bound(api, acting, receiver.url("localhost"), version=2)
    assert run_action(api, acting, old_record, binding_id).get_json()["error"]["code"] == "extension_not_active"
    answer = run_action(api, acting, old_record, new_binding, version=2)
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (409, "record_not_live")
    new_record = save(api, acting, {"title": "New"}, version=2)
    answer = run_action(api, acting, new_record, binding_id, version=2)
    assert answer.get_json()["error"]["code"] == "binding_not_active"
    assert api.post(f"/{acting}/disable", {}).status_code == 200
    answer = run_action(api, acting, new_record, new_binding, version=2)
    assert answer.get_json()["error"]["code"] == "extension_not_active"
    assert run_count() == 0 and receiver.received == []


@pytest.mark.parametrize("change, status, code", [
    ({"confirm": False}, 400, "action_confirmation_required"),
    ({"record_id": "not-a-uuid"}, 400, "invalid_record_id"),
    ({"record_id": str(uuid.uuid4())}, 404, "not_found"),
    ({"binding_id": None}, 400, "invalid_binding_id"),
    ({"binding_id": str(uuid.uuid4())}, 404, "not_found"),
    ({"action_key": "nope"}, 404, "not_found"),
    ({"secret": 1}, 400, "invalid_json"),
])
def test_a_run_request_is_checked_before_anything_runs(api, acting, receiver, change, status, code):
    binding_id = bound(api, acting, receiver.url("localhost"))
    body = {"operation": "run", "version": 1, "record_id": save(api, acting, {"title": "A"}), "action_key": "crm",
            "binding_id": binding_id, "confirm": True, **change}
    answer = api.post(f"/{acting}/actions", body)
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (status, code)
    assert run_count() == 0


def test_an_http_run_needs_its_binding(api, acting, receiver):
    bound(api, acting, receiver.url("localhost"))
    answer = run_action(api, acting, save(api, acting, {"title": "A"}))
    assert answer.get_json()["error"] == {"code": "required_field_missing", "detail": "binding_id"}


def test_a_payload_over_24_kib_is_refused_before_anything_runs(api, receiver):
    fields = [{"key": f"n{i}", "label": f"Note {i}", "type": "textarea", "required": False} for i in range(5)]
    definition = sample_definition(fields=[FIELDS[0], *fields], table_columns=["title"], workflow={
        "trigger": "form.submitted", "rules": []},
        actions=[{"key": "crm", "title": "Send", "kind": "http", "fields": ["title", *(f["key"] for f in fields)]}])
    app_id = api.create(definition)
    api.simulate(app_id)
    api.publish(app_id)
    binding_id = bound(api, app_id, receiver.url("localhost"))
    record_id = save(api, app_id, {"title": "Big", **{f["key"]: "汉" * 2000 for f in fields}})  # 30,000 bytes
    answer = run_action(api, app_id, record_id, binding_id)
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (422, "action_payload_too_large")
    small = save(api, app_id, {"title": "Small", "n0": "汉" * 2000})
    assert run_action(api, app_id, small, binding_id).status_code == 202
    assert run_count() == 1


def test_agents_cannot_bind_read_or_run_actions(api, acting, receiver, agent_client):
    binding_id = bound(api, acting, receiver.url("localhost"))
    record_id = save(api, acting, {"title": "A"})
    assert agent_client.get(f"/api/extensions/{acting}/actions").status_code == 403
    for body in ({"operation": "run", "version": 1, "record_id": record_id, "action_key": "crm",
                  "binding_id": binding_id, "confirm": True},
                 {"operation": "bind", "version": 1, "action_key": "crm", "endpoint": receiver.url("localhost"),
                  "confirm": True}):
        assert agent_client.post(f"/api/extensions/{acting}/actions", json=body, headers=ORIGIN).status_code == 403
    assert agent_client.get(f"/extensions/{acting}/records/{record_id}/actions").status_code == 403
    assert run_count() == 0 and receiver.received == []


def test_attempts_are_limited_to_20_per_tenant_per_minute_across_processes(api, acting, receiver, app_config, tenant,
                                                                           rate_window, other_tenant):
    rate_window(LONG_WINDOW)
    binding_id = bound(api, acting, receiver.url("localhost"))
    records = [save(api, acting, {"title": f"R{i}"}) for i in range(12)]
    script = ("import uuid; from app import create_app; from studio.actions import count_attempt\n"
              f"app = create_app({{'RATE_WINDOW_SECONDS': {LONG_WINDOW}}})\n"
              "with app.app_context():\n"
              f"    [count_attempt(uuid.UUID('{tenant.id}')) for _ in range(10)]\n"
              f"    [count_attempt(uuid.UUID('{other_tenant.id}')) for _ in range(20)]\n")
    subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, env=process_env(app_config), check=True,
                   timeout=60)
    answers = [run_action(api, acting, record_id, binding_id) for record_id in records]
    assert [a.status_code for a in answers] == [202] * 10 + [429] * 2
    assert answers[-1].get_json()["error"]["code"] == "action_rate_limited"
    assert int(answers[-1].headers["Retry-After"]) > 0
    assert run_count() == 10
    assert run_action(api, acting, records[0], binding_id).status_code == 202  # reading an existing run is no attempt


def test_at_most_eight_posts_are_in_flight_platform_wide_across_processes(api, acting, receiver, app, app_config,
                                                                          redis_conn):
    receiver.default = (200, {}, b"ok", 2)
    binding_id = bound(api, acting, receiver.url("localhost"))
    run_ids = [run_action(api, acting, save(api, acting, {"title": f"R{i}"}), binding_id).get_json()["data"]["run_id"]
               for i in range(4)]
    slots = actions.platform_slots()
    held = [slots.acquire() for _ in range(6)]  # other processes' POSTs: two slots are left
    assert all(held)
    env = {**process_env(app_config), "EGRESS_ALLOW_CIDRS": "127.0.0.0/8", "EGRESS_PORT": str(receiver.port),
           "EGRESS_CA_BUNDLE": app.config["EGRESS_CA_BUNDLE"]}
    workers = [subprocess.Popen([*FLASK, "jobs", "worker", "--burst"], cwd=PROJECT_ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(4)]
    try:
        assert all(worker.wait(timeout=90) == 0 for worker in workers)
    finally:
        for token in held:
            slots.release(token)
    assert [the_run(run_id).status for run_id in run_ids] == ["accepted"] * 4
    assert len(receiver.received) == 4 and receiver.most_in_flight <= 2


# --- campaigns -------------------------------------------------------------------------------------

def test_a_campaign_creates_a_marketing_draft_and_sends_nothing(api, acting, receiver, redis_conn, tenant, admin):
    professional(tenant)
    record_id = save(api, acting, {"title": "Spring sale", "notes": "20% off\nthis week", "tag": "vip"})
    answer = run_action(api, acting, record_id, key="promo")
    assert answer.status_code == 200
    data = answer.get_json()["data"]
    assert (data["status"], data["kind"], data["replayed"]) == ("draft_created", "campaign", False)
    (draft,) = drafts()
    assert str(draft.id) == data["campaign_id"]
    assert (draft.title, draft.body, draft.audience_tag, draft.status) == ("Spring sale", "20% off\nthis week", "vip",
                                                                           "draft")
    assert draft.created_by == admin.user_id and draft.tenant_id == tenant.id
    again = run_action(api, acting, record_id, key="promo").get_json()["data"]
    assert (again["campaign_id"], again["replayed"]) == (data["campaign_id"], True)
    send_actions(redis_conn)
    assert len(drafts()) == 1 and receiver.received == []
    assert audit_of("studio.action_run")[0].summary["campaign_id"] == data["campaign_id"]


def test_a_campaign_without_an_audience_field_targets_all_opted_in_recipients(api, tenant):
    professional(tenant)
    campaign = {key: value for key, value in CAMPAIGN_ACTION.items() if key != "audience_tag_field"}
    app_id = api.create(sample_definition(fields=FIELDS, actions=[campaign]))
    api.simulate(app_id)
    api.publish(app_id)
    answer = run_action(api, app_id, save(api, app_id, {"title": "News", "notes": "Hello"}), key="promo")
    assert answer.get_json()["data"]["status"] == "draft_created"
    assert drafts()[0].audience_tag is None


@pytest.mark.parametrize("tier, account, code", [
    ("standard", "independent", "campaign_tier_required"),
    ("standard", None, "campaign_tier_required"),
    ("professional", "shared", "independent_account_required"),
    ("professional", None, "independent_account_required"),
])
def test_a_campaign_needs_the_professional_tier_and_an_independent_account(api, acting, tenant, tier, account, code):
    professional(tenant, account)
    tenant.tier = tier
    db.session.commit()
    answer = run_action(api, acting, save(api, acting, {"title": "Sale", "notes": "Hi", "tag": "vip"}), key="promo")
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (403, code)
    assert drafts() == [] and run_count() == 0


@pytest.mark.parametrize("data, code, detail", [
    ({"title": "Sale", "tag": "vip"}, "campaign_field_empty", "notes"),
    ({"title": "Sale", "notes": "Hi"}, "campaign_field_empty", "tag"),
])
def test_a_campaign_needs_its_fields_filled(api, acting, tenant, data, code, detail):
    professional(tenant)
    answer = run_action(api, acting, save(api, acting, data), key="promo")
    assert (answer.status_code, answer.get_json()["error"]) == (422, {"code": code, "detail": detail})
    assert drafts() == [] and run_count() == 0


def test_a_campaign_name_longer_than_a_draft_title_is_refused(api, tenant):
    professional(tenant)
    campaign = {**CAMPAIGN_ACTION, "name_field": "notes"}
    app_id = api.create(sample_definition(fields=FIELDS, actions=[campaign]))
    api.simulate(app_id)
    api.publish(app_id)
    long_name = save(api, app_id, {"title": "T", "notes": "n" * 201, "tag": "vip"})
    answer = run_action(api, app_id, long_name, key="promo")
    assert (answer.status_code, answer.get_json()["error"]) == (422, {"code": "campaign_name_too_long",
                                                                      "detail": "notes"})
    fitting = save(api, app_id, {"title": "T", "notes": "n" * 200, "tag": "vip"})
    assert run_action(api, app_id, fitting, key="promo").get_json()["data"]["status"] == "draft_created"
    assert len(drafts()) == 1


def test_a_campaign_names_no_binding(api, acting, tenant):
    professional(tenant)
    record_id = save(api, acting, {"title": "S", "notes": "x", "tag": "t"})
    answer = run_action(api, acting, record_id, str(uuid.uuid4()), key="promo")
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (400, "invalid_binding_id")


def test_customer_profile_data_never_reaches_an_action_payload(api, receiver, redis_conn, tenant, agent):
    """A record submitted from the workbench by an agent who shared every profile item carries only
    what was typed into the form: the action sends the record's fields, nothing of the customer."""
    app_id = api.create(action_definition(workbench=WORKBENCH))
    api.simulate(app_id)
    api.publish(app_id)
    found = get_app(tenant.id, uuid.UUID(app_id))
    add_to_workbench(found, None)
    db.session.commit()
    conversation = customer_conversation(tenant, "About my order", **PROFILE)
    entry = set_grants(agent, open_entry(agent, found.id, 1), {"name", "contact", "note"}, restricted=False)
    record, _ = submit(agent, entry, conversation, {"title": "Callback", "notes": "typed by the agent"}, uuid.uuid4())
    db.session.commit()
    binding_id = bound(api, app_id, receiver.url("localhost"))
    assert ran(api, redis_conn, app_id, str(record.id), binding_id)["status"] == "accepted"
    sent = receiver.received[0].body.decode() + the_run(str(actions.action_id(record.id, "crm"))).body
    assert json.loads(receiver.received[0].body) == {"notes": "typed by the agent", "title": "Callback"}
    assert not [value for value in PROFILE.values() if value in sent]


def test_a_bound_address_and_token_never_reach_the_model(app, api, acting, receiver, gen, redis_conn):
    bound(api, acting, receiver.url("localhost", "/private-path/hook"), bearer_token=TOKEN)
    gen.answer_json(app_answer(action_definition()))
    answer = generate(api, app, redis_conn, extension_id=acting)
    assert answer.get_json()["error"]["code"] == "model_invalid_definition"  # a draft may not carry actions
    (request,) = gen.received
    sent = json.dumps(request.body)
    assert TOKEN not in sent and "private-path" not in sent and "localhost" not in sent
    assert run_count() == 0 and receiver.received == []


# --- nothing else runs an action ---------------------------------------------------------------------

def test_simulation_import_publication_and_records_never_run_actions(api, admin_client, receiver, redis_conn, tenant):
    professional(tenant)
    app_id = api.create(action_definition())
    bound(api, app_id, receiver.url("localhost"))
    assert api.simulate(app_id, data={"title": "Sample", "notes": "n", "tag": "t"}).get_json()["data"][
        "external_effects"] is False
    assert api.publish(app_id).status_code == 200
    assert api.post(f"/{app_id}/records", {"version": 1, "input": {"title": "A", "notes": "n", "tag": "t"},
                                           "idempotency_key": str(uuid.uuid4())}).get_json()["data"][
        "external_effects"] is False
    token = csrf_from(admin_client.get("/template-market/studio").get_data(as_text=True))
    for template in TEMPLATES:
        imported = admin_client.post(f"/template-market/studio/{template['slug']}/import", data={"csrf_token": token})
        assert imported.status_code == 302
    send_actions(redis_conn)
    assert run_count() == 0 and drafts() == [] and receiver.received == []
