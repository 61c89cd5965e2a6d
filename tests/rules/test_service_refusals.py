"""The rule services called directly, without a view: each refuses what the administrator did not
confirm (a publication's exact permissions, a plan's execution, a semantic preview's model calls)
and goes ahead once they did. The views only read the confirmation; the services decide."""
import uuid

import pytest
from sqlalchemy import select

from core.api import ApiError
from core.db import db
from desk.models import AiPointsEntry, AssignmentReceipt
from rules import execution, preview, service
from rules.models import AutomationGrant, AutomationRule, AutomationRun
from tests.support.preview import MONDAY_MIDNIGHT, sample
from tests.support.rule_runs import complete_plan, make_conversations
from tests.support.rules import KEYWORD, READ_ONLY, SCHEDULED, message_rule, semantic_rule, weekly_rule

pytestmark = pytest.mark.usefixtures("single_run_switches", "continuous_switches")


def refusal(call) -> tuple:
    """(status, code, detail) of the ApiError `call` raises; what it flushed is rolled back."""
    with pytest.raises(ApiError) as raised:
        call()
    db.session.rollback()
    return raised.value.status, raised.value.code, raised.value.detail


def publication(permissions, confirmed: bool = True, **changes) -> service.Publication:
    """A first publication of revision 1 confirming `permissions`."""
    return service.Publication(**{"revision": 1, "expected_active_revision": None, "permissions": permissions,
                                  "confirmed": confirmed, **changes})


def grants() -> list[AutomationGrant]:
    return list(db.session.scalars(select(AutomationGrant)))


@pytest.fixture
def draft(tenant, admin, agent) -> uuid.UUID:
    """A weekly rule saved through the service (revision 1, a draft), bound to the agent."""
    saved = service.save_rule(tenant.id, admin.user_id, weekly_rule(agent))
    db.session.commit()
    return uuid.UUID(saved["rule_id"])


# --- publish ------------------------------------------------------------------------------------

def test_a_publication_not_confirmed_is_refused(tenant, admin, draft):
    refused = refusal(lambda: service.publish(tenant.id, admin.user_id, draft, publication(READ_ONLY, False)))
    assert refused == (400, "permission_confirmation_required", None)
    assert db.session.get(AutomationRule, draft).state == "draft" and grants() == []


@pytest.mark.parametrize("permissions, mode", [
    (READ_ONLY[::-1], None),
    (READ_ONLY[:1], None),
    (READ_ONLY + ["conversation.assign_plan"], None),
    (READ_ONLY + KEYWORD, None),
    ((), None),
    (SCHEDULED, None),
    (SCHEDULED, "plan_only"),
    (READ_ONLY, "scheduled"),
])
def test_a_publication_confirming_other_permissions_than_its_mode_needs_is_refused(tenant, admin, draft,
                                                                                   permissions, mode):
    confirmed = publication(permissions, execution_mode=mode)
    refused = refusal(lambda: service.publish(tenant.id, admin.user_id, draft, confirmed))
    assert refused == (400, "permission_confirmation_required", None)
    assert db.session.get(AutomationRule, draft).state == "draft" and grants() == []


@pytest.mark.parametrize("permissions, mode", [(READ_ONLY, None), (tuple(READ_ONLY), "plan_only"),
                                               (SCHEDULED, "scheduled")])
def test_a_publication_confirming_exactly_its_permissions_is_published(tenant, admin, draft, permissions, mode):
    data = service.publish(tenant.id, admin.user_id, draft, publication(permissions, execution_mode=mode))
    (grant,) = grants()
    assert (data["state"], data["active_revision"], data["grant_id"]) == ("published", 1, str(grant.id))
    assert (grant.execution_mode, grant.permissions, grant.granted_by) == (mode or "plan_only", list(permissions),
                                                                           admin.user_id)


def test_revision_numbers_below_1_are_refused(tenant, admin, agent, draft):
    refused = refusal(lambda: service.publish(tenant.id, admin.user_id, draft, publication(READ_ONLY, revision=0)))
    assert refused == (400, "invalid_version", None)
    change = service.RuleChange(draft, 0)
    assert refusal(lambda: service.save_rule(tenant.id, admin.user_id, weekly_rule(agent), change)) == (
        400, "invalid_version", None)


# --- request_execution ----------------------------------------------------------------------------

@pytest.fixture
def plan(tenant, admin, target) -> AutomationRun:
    """A complete, fresh plan assigning two conversations to `target`, of a rule the services saved
    and published read-only."""
    saved = service.save_rule(tenant.id, admin.user_id, weekly_rule(target))
    service.publish(tenant.id, admin.user_id, uuid.UUID(saved["rule_id"]), publication(READ_ONLY))
    db.session.commit()
    return complete_plan(tenant, saved["rule_id"], target, make_conversations(tenant, 2))


@pytest.mark.parametrize("confirmed, permission", [(False, execution.EXECUTE_PERMISSION),
                                                   (True, "conversation.assign_scheduled"),
                                                   (True, "")])
def test_an_execution_not_confirmed_is_refused(tenant, admin, plan, confirmed, permission):
    refused = refusal(lambda: execution.request_execution(tenant.id, admin.user_id, plan.id, confirmed=confirmed,
                                                          permission=permission))
    assert refused == (400, "permission_confirmation_required", None)
    assert db.session.get(AutomationRun, plan.id).execution_requested_at is None
    assert db.session.scalar(select(AssignmentReceipt.id)) is None


def test_a_confirmed_execution_queues_one_command_per_planned_conversation(tenant, admin, plan):
    data = execution.request_execution(tenant.id, admin.user_id, plan.id, confirmed=True,
                                       permission=execution.EXECUTE_PERMISSION)
    assert data == {"run_id": str(plan.id), "commands": 2, "status": "queued", "complete": False}
    assert [r.status for r in db.session.scalars(select(AssignmentReceipt))] == ["pending", "pending"]
    assert db.session.get(AutomationRun, plan.id).approved_by == admin.user_id


# --- preview ------------------------------------------------------------------------------------

def simulation(definition: dict, semantic_confirmed: bool = False) -> preview.Simulation:
    """One open sample asking for a refund, at Monday 00:00 Beijing time."""
    return preview.Simulation(definition, [sample("s1")], MONDAY_MIDNIGHT, semantic_confirmed=semantic_confirmed)


def ledger(tenant) -> list[AiPointsEntry]:
    return list(db.session.scalars(select(AiPointsEntry).where(AiPointsEntry.tenant_id == tenant.id)))


def test_a_semantic_preview_not_confirmed_is_refused_before_the_model_is_called(tenant, agent, model_server):
    refused = refusal(lambda: preview.preview(tenant.id, simulation(semantic_rule(agent))))
    assert refused == (400, "semantic_confirmation_required", None)
    assert model_server.received == [] and ledger(tenant) == []


def test_a_confirmed_semantic_preview_calls_the_model_and_meters_it(tenant, agent, model_server):
    model_server.answer_json({"label": "billing", "confidence": 0.95}, input_tokens=500, output_tokens=10)
    answer = preview.preview(tenant.id, simulation(semantic_rule(agent), semantic_confirmed=True))
    assert (answer["planned_count"], answer["ai_usage"]["model_calls"]) == (1, 1)
    assert len(model_server.received) == 1 and [e.input_tokens for e in ledger(tenant)] == [500]


def test_a_preview_of_a_rule_without_semantics_needs_no_confirmation(tenant, agent, model_server):
    answer = preview.preview(tenant.id, simulation(message_rule(agent)))
    assert answer["planned_count"] == 1 and answer["ai_usage"] is None and model_server.received == []
