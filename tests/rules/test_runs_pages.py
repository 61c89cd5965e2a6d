"""The runs section of the rule page: plans on demand, their per-conversation results, approving one
execution of a fresh complete plan and its live receipts, driven through the page forms."""
import re
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from rq import Queue
from sqlalchemy import func, select, update

from core.clock import utcnow
from core.db import db
from core.queue_names import DEFAULT
from core.audit import AuditEntry
from desk.conversations import mark_sending, queue_commands, resolve_uncertain, snapshot
from desk.models import AssignmentReceipt, Conversation, Member
from rules.execution import command_key
from rules.models import AutomationRun
from tests.conftest import csrf_from, login, seat
from tests.support.jobs import work
from tests.support.rule_pages import BASE, HTMX, bound, page_text, post_form, publish
from tests.support.rule_runs import complete_plan, make_conversations
from tests.support.sql import statements

POLL_RUNS = 'hx-trigger="load delay:2s"'
POLL_RECEIPTS = 'hx-trigger="load delay:1s"'


@pytest.fixture
def executing(app, monkeypatch):
    """Single-run execution and atomic assignment on (both default off)."""
    for name in ("AUTOMATION_EXECUTION_ENABLED", "ATOMIC_ASSIGNMENT_ENABLED"):
        monkeypatch.setitem(app.config, name, True)


@pytest.fixture
def published(admin_client, saved_rule, planning) -> str:
    """The saved weekly rule published read-only (planning on)."""
    publish(admin_client, saved_rule, "plan_only")
    return saved_rule


def _runs(client, rule_id: str) -> str:
    response = client.get(f"{BASE}/{rule_id}/runs", headers=HTMX)
    assert response.status_code == 200
    return page_text(response)


def _run_block(page: str, run_id) -> str:
    """The list item of one run."""
    return re.search(rf'<li class="run" id="run-{run_id}">(.*?)</li>', page, re.S)[1]


# --- the list -----------------------------------------------------------------------------------

def test_a_rule_without_runs_shows_the_empty_state_and_does_not_poll(admin_client, saved_rule):
    page = page_text(admin_client.get(f"{BASE}/{saved_rule}"))
    assert 'id="runs"' in page and 'id="runs-empty"' in page and "Plan now" in page
    partial = _runs(admin_client, saved_rule)
    assert partial.lstrip().startswith('<section class="card" id="runs"') and "<html" not in partial
    assert "No runs yet" in partial and "hx-trigger" not in partial


def test_runs_list_their_facts_and_per_conversation_results(admin_client, tenant, published, agents):
    first, _ = agents
    conversations = make_conversations(tenant, 2)
    run = complete_plan(tenant, published, first, conversations)
    partial = _runs(admin_client, published)
    block = _run_block(partial, run.id)
    assert "Manual plan" in block and "Complete" in block
    assert "<dt>Scanned</dt><dd>2</dd>" in block and "<dt>Planned</dt><dd>2</dd>" in block
    assert "Beijing time" in block  # created and finished
    details = re.search(r"<details class=\"run-items\">(.*?)</details>", block, re.S)[1]
    assert "Conversations (2)" in details
    for conversation in conversations:
        assert str(conversation.id) in details
    assert first.display_name in details and "slot_matched" in details
    assert POLL_RUNS not in partial


def test_a_weekly_plan_names_its_slot_time_in_beijing_time(admin_client, tenant, published, agents):
    run = complete_plan(tenant, published, agents[0], [], planned_for=datetime(2026, 11, 23, 1, 0, tzinfo=timezone.utc))
    block = _run_block(_runs(admin_client, published), run.id)
    assert "<dt>Planned for</dt><dd>2026-11-23 09:00 Beijing time</dd>" in block
    assert "No conversation results." in block and "Execute this plan" not in block


# --- plan now -----------------------------------------------------------------------------------

def test_plan_now_queues_a_run_and_the_section_polls_until_it_is_done(app, admin_client, published, redis_conn):
    response = post_form(admin_client, f"{BASE}/{published}/runs", {}, headers=HTMX)
    assert response.status_code == 200
    partial = page_text(response)
    run = db.session.scalar(select(AutomationRun))
    assert (run.kind, run.status) == ("manual", "queued")
    assert Queue(DEFAULT, connection=redis_conn).count == 1
    assert POLL_RUNS in partial and f'hx-get="{BASE}/{published}/runs"' in partial
    assert "plan is queued" in partial and "Queued" in _run_block(partial, run.id)
    assert POLL_RUNS in _runs(admin_client, published)
    work(app, redis_conn, DEFAULT)
    done = _runs(admin_client, published)
    assert POLL_RUNS not in done and "Complete" in _run_block(done, run.id)


def test_a_second_plan_within_the_minute_is_refused_with_a_message(admin_client, published):
    assert post_form(admin_client, f"{BASE}/{published}/runs", {}, headers=HTMX).status_code == 200
    response = post_form(admin_client, f"{BASE}/{published}/runs", {}, headers=HTMX)
    assert response.status_code == 422
    assert "plan_rate_limited" in page_text(response) and "One plan per minute" in page_text(response)
    assert db.session.scalar(select(func.count()).select_from(AutomationRun)) == 1


def test_plan_now_shows_planning_disabled_when_the_switch_is_off(app, admin_client, published, monkeypatch):
    monkeypatch.setitem(app.config, "AUTOMATION_PLANNING_ENABLED", False)
    response = post_form(admin_client, f"{BASE}/{published}/runs", {}, headers=HTMX)
    assert response.status_code == 422
    page = page_text(response)
    assert 'id="runs-message"' in page and "planning_disabled" in page and "switched off" in page
    assert db.session.scalar(select(AutomationRun.id)) is None


def test_plan_now_of_an_unpublished_rule_is_refused(admin_client, saved_rule, planning):
    response = post_form(admin_client, f"{BASE}/{saved_rule}/runs", {}, headers=HTMX)
    assert response.status_code == 422 and "rule_not_published" in page_text(response)


def test_plan_now_without_javascript_redirects_to_the_page_with_the_message(admin_client, published):
    response = post_form(admin_client, f"{BASE}/{published}/runs", {})
    assert response.status_code == 302 and response.headers["Location"].endswith(f"{BASE}/{published}#runs")
    page = page_text(admin_client.get(response.headers["Location"]))
    assert "plan is queued" in page


# --- execution ----------------------------------------------------------------------------------

def test_the_execute_dialog_names_the_permission_and_the_count(admin_client, tenant, published, agents, executing):
    run = complete_plan(tenant, published, agents[0], make_conversations(tenant, 3))
    page = page_text(admin_client.get(f"{BASE}/{published}"))
    dialog = re.search(rf'<dialog id="execute-{run.id}"(.*?)</dialog>', page, re.S)[1]
    assert f'data-open-dialog="execute-{run.id}"' in page and "Execute this plan…" in page
    assert "conversation.assign_plan" in dialog and "reassign <strong class=\"execute-count\">3 conversations" in dialog
    assert 'type="checkbox" name="confirm"' in dialog


def test_executing_without_the_checkbox_is_refused(admin_client, tenant, published, agents, executing):
    run = complete_plan(tenant, published, agents[0], make_conversations(tenant, 1))
    response = post_form(admin_client, f"{BASE}/{published}/runs/{run.id}/execute",
                         {"permission": "conversation.assign_plan"}, headers=HTMX)
    assert response.status_code == 422
    assert "permission_confirmation_required" in page_text(response) and "Tick the box" in page_text(response)
    assert db.session.scalar(select(AssignmentReceipt.id)) is None


@pytest.mark.parametrize("switch, code", [("AUTOMATION_EXECUTION_ENABLED", "execution_disabled"),
                                          ("ATOMIC_ASSIGNMENT_ENABLED", "atomic_assignment_disabled")])
def test_executing_with_a_switch_off_is_refused(app, admin_client, tenant, published, agents, executing,
                                                monkeypatch, switch, code):
    run = complete_plan(tenant, published, agents[0], make_conversations(tenant, 1))
    monkeypatch.setitem(app.config, switch, False)
    response = post_form(admin_client, f"{BASE}/{published}/runs/{run.id}/execute",
                         {"permission": "conversation.assign_plan", "confirm": "on"}, headers=HTMX)
    assert response.status_code == 422 and code in page_text(response)


def test_an_expired_plan_is_refused(admin_client, tenant, published, agents, executing):
    run = complete_plan(tenant, published, agents[0], make_conversations(tenant, 1),
                        finished_at=utcnow() - timedelta(minutes=6))
    assert "plan again to execute" in _run_block(_runs(admin_client, published), run.id)
    response = post_form(admin_client, f"{BASE}/{published}/runs/{run.id}/execute",
                         {"permission": "conversation.assign_plan", "confirm": "on"}, headers=HTMX)
    assert response.status_code == 422 and "plan_expired" in page_text(response)


def test_an_approved_plan_shows_receipts_polling_until_they_are_final(app, admin_client, tenant, published, agents,
                                                                      executing, redis_conn):
    first, _ = agents
    conversations = make_conversations(tenant, 2)
    run = complete_plan(tenant, published, first, conversations)
    response = post_form(admin_client, f"{BASE}/{published}/runs/{run.id}/execute",
                         {"permission": "conversation.assign_plan", "confirm": "on"}, headers=HTMX)
    assert response.status_code == 200
    block = _run_block(page_text(response), run.id)
    receipts_url = f"{BASE}/{published}/runs/{run.id}/execution"
    assert "2 reassignment commands queued" in page_text(response)
    assert f'hx-get="{receipts_url}"' in block and POLL_RECEIPTS in block
    assert block.count("receipt-pending") == 2 and "Execute this plan" not in block
    assert Queue(DEFAULT, connection=redis_conn).count == 2

    pending = admin_client.get(receipts_url, headers=HTMX)
    assert pending.status_code == 200 and POLL_RECEIPTS in page_text(pending)
    assert page_text(pending).lstrip().startswith(f'<div class="execution" id="execution-{run.id}"')

    work(app, redis_conn, DEFAULT)
    final = page_text(admin_client.get(receipts_url, headers=HTMX))
    assert "hx-trigger" not in final and "hx-get" not in final and "Execution finished" in final
    assert final.count("receipt-applied") == 2 and first.display_name in final
    for conversation in conversations:
        assert str(conversation.id) in final
    page = _runs(admin_client, published)  # the section shows the same receipts, not polling
    assert POLL_RECEIPTS not in page and _run_block(page, run.id).count("receipt-applied") == 2


@pytest.mark.parametrize("meanwhile, shown", [("pause", ("receipt-cancelled", "rule_paused")),
                                               ("agent_left", ("receipt-rejected", "rule_member_unavailable"))])
def test_a_command_cancelled_or_refused_on_recheck_shows_its_reason(app, admin_client, tenant, published, agents,
                                                                     executing, redis_conn, meanwhile, shown):
    run = complete_plan(tenant, published, agents[0], make_conversations(tenant, 1))
    post_form(admin_client, f"{BASE}/{published}/runs/{run.id}/execute",
              {"permission": "conversation.assign_plan", "confirm": "on"}, headers=HTMX)
    if meanwhile == "pause":
        post_form(admin_client, f"{BASE}/{published}/pause", {})
    else:
        db.session.execute(update(Member).where(Member.id == agents[0].id).values(active=False))
        db.session.commit()
    work(app, redis_conn, DEFAULT)
    final = page_text(admin_client.get(f"{BASE}/{published}/runs/{run.id}/execution", headers=HTMX))
    assert all(fact in final for fact in shown) and "hx-trigger" not in final


def _uncertain_command(admin_client, tenant, published, agent, redis_conn):
    """An approved one-command plan whose worker died mid-send (its receipt `uncertain`);
    (run, conversation, the receipts partial's URL)."""
    [conversation] = make_conversations(tenant, 1)
    run = complete_plan(tenant, published, agent, [conversation])
    post_form(admin_client, f"{BASE}/{published}/runs/{run.id}/execute",
          {"permission": "conversation.assign_plan", "confirm": "on"}, headers=HTMX)
    Queue(DEFAULT, connection=redis_conn).empty()
    assert mark_sending(tenant.id, command_key(run.id), conversation.id)
    db.session.commit()
    assert resolve_uncertain(tenant.id, command_key(run.id), conversation.id) == "uncertain"
    db.session.commit()
    return run, conversation, f"{BASE}/{published}/runs/{run.id}/execution"


def test_an_uncertain_command_can_be_sent_again_and_is_rechecked_and_applied(app, admin_client, tenant, published,
                                                                            agents, executing, redis_conn):
    run, conversation, receipts_url = _uncertain_command(admin_client, tenant, published, agents[0], redis_conn)
    final = page_text(admin_client.get(receipts_url, headers=HTMX))
    retry_url = f"{BASE}/{published}/runs/{run.id}/commands/{conversation.id}/retry"
    assert "receipt-uncertain" in final and f'hx-post="{retry_url}"' in final and "hx-trigger" not in final
    response = post_form(admin_client, retry_url, {}, headers=HTMX)
    assert response.status_code == 200
    page = page_text(response)
    assert "receipt-pending" in page and POLL_RECEIPTS in page and "Sent again" in page
    assert Queue(DEFAULT, connection=redis_conn).count == 1
    work(app, redis_conn, DEFAULT)
    final = page_text(admin_client.get(receipts_url, headers=HTMX))
    assert "receipt-applied" in final and "Send again" not in final
    db.session.expire_all()
    assert db.session.get(Conversation, conversation.id).assignee_member_id == agents[0].id
    retried = db.session.scalar(select(AuditEntry).where(AuditEntry.action == "automation.command_retried"))
    assert retried.summary["conversation_id"] == str(conversation.id)


def test_only_an_uncertain_command_can_be_sent_again(app, admin_client, tenant, published, agents, executing,
                                                     redis_conn):
    run, conversation, _ = _uncertain_command(admin_client, tenant, published, agents[0], redis_conn)
    retry_url = f"{BASE}/{published}/runs/{run.id}/commands/{conversation.id}/retry"
    assert post_form(admin_client, retry_url, {}, headers=HTMX).status_code == 200
    again = post_form(admin_client, retry_url, {}, headers=HTMX)  # now pending, not uncertain
    assert again.status_code == 409 and "Only an uncertain command can be sent again" in page_text(again)
    assert Queue(DEFAULT, connection=redis_conn).count == 1


# --- access -------------------------------------------------------------------------------------

def test_agents_are_refused(agent_client, admin_client, saved_rule):
    assert agent_client.get(f"{BASE}/{saved_rule}/runs", headers=HTMX).status_code == 403
    token = csrf_from(page_text(agent_client.get("/workbench")))
    assert agent_client.post(f"{BASE}/{saved_rule}/runs", data={"csrf_token": token}).status_code == 403
    run_id = uuid.uuid4()
    assert agent_client.get(f"{BASE}/{saved_rule}/runs/{run_id}/execution", headers=HTMX).status_code == 403
    assert agent_client.post(f"{BASE}/{saved_rule}/runs/{run_id}/execute",
                             data={"csrf_token": token, "confirm": "on"}).status_code == 403


def test_a_foreign_rule_and_its_runs_are_not_found(admin_client, other_tenant, tenant, published, agents, executing):
    run = complete_plan(tenant, published, agents[0], make_conversations(tenant, 1))
    other = seat(other_tenant, "admin")
    browser = admin_client.application.test_client()
    login(browser, other.user.email)
    token = csrf_from(page_text(browser.get(BASE)))
    assert browser.get(f"{BASE}/{published}/runs", headers=HTMX).status_code == 404
    assert browser.post(f"{BASE}/{published}/runs", data={"csrf_token": token}, headers=HTMX).status_code == 404
    assert browser.get(f"{BASE}/{published}/runs/{run.id}/execution", headers=HTMX).status_code == 404
    executed = browser.post(f"{BASE}/{published}/runs/{run.id}/execute", headers=HTMX,
                            data={"csrf_token": token, "confirm": "on", "permission": "conversation.assign_plan"})
    assert executed.status_code == 404
    retried = browser.post(f"{BASE}/{published}/runs/{run.id}/commands/{uuid.uuid4()}/retry", headers=HTMX,
                           data={"csrf_token": token})
    assert retried.status_code == 404
    assert db.session.scalar(select(AssignmentReceipt.id)) is None


def test_a_run_of_another_rule_is_not_found_under_this_rule(admin_client, tenant, published, agents):
    run = complete_plan(tenant, published, agents[0], make_conversations(tenant, 1))
    other_rule = post_form(admin_client, f"{BASE}/new", bound(*agents, name="Second rule")).headers["Location"]
    other_rule = other_rule.rsplit("/", 1)[1]
    assert admin_client.get(f"{BASE}/{other_rule}/runs/{run.id}/execution", headers=HTMX).status_code == 404


def _executed_runs(tenant, rule_id: str, target: Member, conversations: list[Conversation]) -> None:
    """A plan per conversation whose execution was approved, each with one pending command."""
    for conversation in conversations:
        run = complete_plan(tenant, rule_id, target, [conversation], execution_requested_at=utcnow())
        queue_commands(tenant.id, command_key(run.id), [(conversation.id, target.id, snapshot(conversation))])
    db.session.commit()


def test_the_runs_section_costs_the_same_statements_for_1_and_20_executed_runs(app, admin_client, tenant, published,
                                                                               agents, executing):
    first, _ = agents
    conversations = make_conversations(tenant, 20)
    _executed_runs(tenant, published, first, conversations[:1])
    one = statements(app, lambda: _runs(admin_client, published))
    _executed_runs(tenant, published, first, conversations[1:])
    page = []
    twenty = statements(app, lambda: page.append(_runs(admin_client, published)))
    assert page[0].count("receipt-pending") == 20 and page[0].count(first.display_name) >= 20
    assert twenty == one == 6  # the session's seat, the rule, runs, items, receipts, names
