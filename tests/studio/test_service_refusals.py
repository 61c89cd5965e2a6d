"""The services decide their own confirmations: `studio.actions.bind`, `studio.actions.request_run`
and `studio.workbench.analyze_intent` called directly, without a view, refuse an unconfirmed call
with the spec's error before any other check and proceed once confirmed; the console's page and
JSON API still answer a missing confirmation before a malformed property."""
import uuid

import pytest
from sqlalchemy import func, select

from core.api import ApiError
from core.db import db
from desk.models import AiPointsEntry, Conversation
from studio import actions, workbench
from studio.apps import get_app
from studio.models import StudioActionBinding, StudioApp
from tests.conftest import csrf_from, customer_conversation
from tests.support.actions import audit_of, bound, drafts, professional, run_count, save
from tests.support.studio import sample_definition
from tests.support.workbench_tools import WORKBENCH, publish_live

UNCONFIRMED = (False, "yes")  # a raw form or JSON value is not a confirmation either


def _refusal(service, *args, **kwargs) -> tuple[int, str]:
    """The (status, code) of the ApiError the service raises when called with these arguments (it
    names no detail: the spec's refusal is the code alone)."""
    with pytest.raises(ApiError) as refused:
        service(*args, **kwargs)
    assert refused.value.detail is None
    return refused.value.status, refused.value.code


def _bindings() -> int:
    db.session.rollback()
    return db.session.scalar(select(func.count()).select_from(StudioActionBinding))


@pytest.fixture
def found(acting, tenant) -> StudioApp:
    """The live application with an http and a campaign action, as the services take it."""
    return get_app(tenant.id, uuid.UUID(acting))


# --- studio.actions.bind --------------------------------------------------------------------------

@pytest.mark.parametrize("confirmed", UNCONFIRMED)
def test_bind_refuses_an_unconfirmed_call_binding_nothing_and_proceeds_when_confirmed(found, admin, receiver,
                                                                                      confirmed):
    assert _refusal(actions.bind, found, admin.user_id, 1, "crm", receiver.url("localhost"), None,
                    confirmed=confirmed) == (400, "action_confirmation_required")
    assert _bindings() == 0 and audit_of("studio.action_bound") == []
    binding = actions.bind(found, admin.user_id, 1, "crm", receiver.url("localhost"), None, confirmed=True)
    db.session.commit()
    assert (binding.enabled, binding.endpoint_host, binding.bound_by) == (True, "localhost", admin.user_id)
    assert _bindings() == 1 and len(audit_of("studio.action_bound")) == 1


def test_bind_refuses_an_unconfirmed_call_before_looking_at_the_version(found, admin, receiver):
    assert _refusal(actions.bind, found, admin.user_id, 9, "crm", receiver.url("localhost"), None,
                    confirmed=False) == (400, "action_confirmation_required")


# --- studio.actions.request_run -------------------------------------------------------------------

@pytest.fixture
def http_run(api, acting, receiver) -> tuple[uuid.UUID, uuid.UUID]:
    """A saved record of the live version and the binding of its http action: (record id, binding id)."""
    binding_id = bound(api, acting, receiver.url("localhost"))
    return uuid.UUID(save(api, acting, {"title": "A", "notes": "n"})), uuid.UUID(binding_id)


@pytest.mark.parametrize("confirmed", UNCONFIRMED)
def test_an_http_run_refuses_an_unconfirmed_call_running_nothing_and_proceeds_when_confirmed(found, admin, http_run,
                                                                                              confirmed):
    record_id, binding_id = http_run
    assert _refusal(actions.request_run, found, admin.user_id, 1, record_id, "crm", binding_id,
                    confirmed=confirmed) == (400, "action_confirmation_required")
    assert run_count() == 0
    run, replayed, job = actions.request_run(found, admin.user_id, 1, record_id, "crm", binding_id, confirmed=True)
    db.session.commit()
    assert (run.status, replayed, run.requested_by) == ("queued", False, admin.user_id)
    assert job is not None and job.job_id == f"action-{run.id}"
    assert run_count() == 1


def test_a_run_refuses_an_unconfirmed_call_before_looking_at_the_record(found, admin, http_run):
    _record_id, binding_id = http_run
    assert _refusal(actions.request_run, found, admin.user_id, 1, uuid.uuid4(), "crm", binding_id,
                    confirmed=False) == (400, "action_confirmation_required")


def test_a_repeated_run_needs_the_confirmation_again_before_it_is_answered(found, admin, http_run):
    record_id, binding_id = http_run
    run, _replayed, _job = actions.request_run(found, admin.user_id, 1, record_id, "crm", binding_id, confirmed=True)
    db.session.commit()
    assert _refusal(actions.request_run, found, admin.user_id, 1, record_id, "crm", binding_id,
                    confirmed=False) == (400, "action_confirmation_required")
    again, replayed, job = actions.request_run(found, admin.user_id, 1, record_id, "crm", binding_id, confirmed=True)
    assert (again.id, replayed, job) == (run.id, True, None)


def test_a_campaign_run_refuses_an_unconfirmed_call_and_proceeds_when_confirmed(api, acting, found, admin, tenant):
    professional(tenant)
    record_id = uuid.UUID(save(api, acting, {"title": "Spring sale", "notes": "10% off", "tag": "vip"}))
    assert _refusal(actions.request_run, found, admin.user_id, 1, record_id, "promo", None,
                    confirmed=False) == (400, "action_confirmation_required")
    assert run_count() == 0 and drafts() == []
    run, replayed, job = actions.request_run(found, admin.user_id, 1, record_id, "promo", None, confirmed=True)
    db.session.commit()
    assert (run.status, replayed, job) == ("draft_created", False, None)
    assert [draft.title for draft in drafts()] == ["Spring sale"]


# --- studio.workbench.analyze_intent --------------------------------------------------------------

@pytest.fixture
def intent_app(api, tenant) -> uuid.UUID:
    """A live application with intent labels, in the tenant's workbench."""
    app_id = uuid.UUID(publish_live(api, sample_definition(workbench=WORKBENCH, intent={"labels": ["退款", "投诉"]})))
    workbench.add_to_workbench(get_app(tenant.id, app_id), None)
    db.session.commit()
    return app_id


@pytest.fixture
def conversation(tenant) -> Conversation:
    return customer_conversation(tenant, "I want my money back", name="Wang Fang")


def _points() -> int:
    db.session.rollback()
    return db.session.scalar(select(func.count()).select_from(AiPointsEntry))


@pytest.mark.parametrize("confirmed", UNCONFIRMED)
def test_intent_analysis_refuses_an_unconfirmed_call_sending_nothing_and_proceeds_when_confirmed(
        agent, intent_app, conversation, model_server, confirmed):
    model_server.answer_json({"label": "退款", "confidence": 0.9})
    assert _refusal(workbench.analyze_intent, agent, intent_app, 1, conversation, confirmed=confirmed) == (
        400, "intent_confirmation_required")
    assert model_server.received == [] and _points() == 0
    result = workbench.analyze_intent(agent, intent_app, 1, conversation, confirmed=True)
    db.session.commit()
    assert (result.label, result.confidence) == ("退款", 0.9)
    assert len(model_server.received) == 1 and _points() == 1


def test_intent_analysis_refuses_an_unconfirmed_call_before_looking_at_the_entry(agent, api, conversation,
                                                                                model_server):
    not_in_workbench = uuid.UUID(publish_live(api, sample_definition(workbench=WORKBENCH,
                                                                     intent={"labels": ["退款"]})))
    assert _refusal(workbench.analyze_intent, agent, not_in_workbench, 1, conversation, confirmed=False) == (
        400, "intent_confirmation_required")
    assert model_server.received == []


# --- the adapters keep their order ----------------------------------------------------------------

@pytest.mark.parametrize("request_body", [
    {"operation": "bind", "version": "1", "action_key": "crm", "endpoint": "https://crm.example.com/hook"},
    {"operation": "bind", "version": 1, "action_key": 7, "endpoint": "https://crm.example.com/hook"},
    {"operation": "run", "version": 1, "record_id": "not-a-uuid", "action_key": "crm"},
    {"operation": "run", "version": 1, "record_id": str(uuid.uuid4()), "action_key": "crm", "binding_id": None},
])
def test_the_api_answers_a_missing_confirmation_before_a_malformed_property(api, acting, request_body):
    answer = api.post(f"/{acting}/actions", {**request_body, "confirm": False})
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (400, "action_confirmation_required")
    assert _bindings() == 0 and run_count() == 0


def test_the_page_answers_a_missing_confirmation_before_a_malformed_binding_id(api, admin_client, acting):
    record_id = save(api, acting, {"title": "A"})
    token = csrf_from(admin_client.get("/extensions").get_data(as_text=True))
    answer = admin_client.post(f"/extensions/{acting}/records/{record_id}/actions/crm/run",
                               data={"csrf_token": token, "version": "1", "binding_id": "not-a-uuid"})
    assert answer.status_code == 422 and "Tick the confirmation first" in answer.get_data(as_text=True)
    assert run_count() == 0
