"""Assignment and status by hand in the workbench: the compare-and-swap path, roles, refusals, the
change stamp, and the decision history in the thread (people and rules)."""
import uuid

import pytest
from sqlalchemy import select

from core.db import db
from core.queue_names import DEFAULT
from desk.models import AssignmentReceipt, Conversation, ConversationEvent, Member
from tests.conftest import csrf_from, seat
from tests.support.desk import HX, browser_of, fresh
from tests.support.jobs import work
from tests.support.rule_runs import CONFIRM, complete_plan
from tests.support.rules import READ_ONLY, weekly_rule


@pytest.fixture
def supervisor(tenant) -> Member:
    return seat(tenant, "supervisor")


def change(browser, conversation: Conversation, what: str, value: str, seen=None):
    """POST one change by hand with the state the person saw (the conversation's current one by default)."""
    current = fresh(conversation)
    assignee, status = seen or (current.assignee_member_id, current.status)
    page = browser.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    path = "assignee" if what == "assignee" else "status"
    return browser.post(f"/workbench/conversations/{conversation.id}/{path}", headers=HX, data={
        "csrf_token": csrf_from(page), what: value, "seen_assignee": str(assignee or ""), "seen_status": status})


def test_assign_to_me_takes_an_unassigned_conversation_moves_the_stamp_and_refreshes_the_list(
        agent_client, agent, conversation):
    before = fresh(conversation).updated_at
    response = change(agent_client, conversation, "assignee", "me")
    assert response.status_code == 200 and response.headers["HX-Trigger"] == "conversations-changed"
    after = fresh(conversation)
    assert after.assignee_member_id == agent.id and after.updated_at > before
    assert "Agent Person</strong>" in response.get_data(as_text=True)  # the event, with its actor


def test_an_agent_cannot_take_a_conversation_assigned_to_someone_else(app, agent_client, tenant, conversation):
    other = seat(tenant, "agent")
    change(browser_of(app, other), conversation, "assignee", "me")
    response = change(agent_client, conversation, "assignee", "me")
    assert response.status_code == 422 and "ask a supervisor" in response.get_data(as_text=True)
    assert fresh(conversation).assignee_member_id == other.id


def test_an_agent_unassigns_their_own_but_not_anothers(app, agent_client, agent, tenant, conversation):
    change(agent_client, conversation, "assignee", "me")
    assert change(agent_client, conversation, "assignee", "none").status_code == 200
    assert fresh(conversation).assignee_member_id is None
    other = seat(tenant, "agent")
    change(browser_of(app, other), conversation, "assignee", "me")
    assert change(agent_client, conversation, "assignee", "none").status_code == 422
    assert fresh(conversation).assignee_member_id == other.id


def test_an_agent_cannot_assign_to_another_member(agent_client, tenant, conversation):
    other = seat(tenant, "agent")
    assert change(agent_client, conversation, "assignee", str(other.id)).status_code == 422
    assert fresh(conversation).assignee_member_id is None


def test_a_supervisor_reassigns_to_another_active_agent(app, supervisor, agent, tenant, conversation):
    browser = browser_of(app, supervisor)
    other = seat(tenant, "agent")
    change(browser, conversation, "assignee", str(agent.id))
    response = change(browser, conversation, "assignee", str(other.id))
    assert response.status_code == 200
    assert fresh(conversation).assignee_member_id == other.id
    events = db.session.scalars(select(ConversationEvent).order_by(ConversationEvent.created_at)).all()
    assert [(e.actor_member_id, e.before, e.after) for e in events] == [
        (supervisor.id, None, str(agent.id)), (supervisor.id, str(agent.id), str(other.id))]


@pytest.mark.parametrize("whom", ["inactive", "foreign", "missing"])
def test_an_inactive_foreign_or_missing_member_is_refused_with_a_clear_message(
        app, supervisor, tenant, other_tenant, conversation, whom):
    target = {"inactive": lambda: seat(tenant, "agent"), "foreign": lambda: seat(other_tenant, "agent"),
              "missing": lambda: None}[whom]()
    if whom == "inactive":
        target.active = False
        db.session.commit()
    response = change(browser_of(app, supervisor), conversation, "assignee", str(target.id if target else uuid.uuid4()))
    assert response.status_code == 422
    assert "inactive or not in this workspace" in response.get_data(as_text=True)
    assert fresh(conversation).assignee_member_id is None
    assert db.session.scalar(select(ConversationEvent.id)) is None


@pytest.mark.parametrize("status", ["pending", "resolved", "open"])
def test_status_by_hand_is_written_with_its_event(agent_client, agent, conversation, status):
    if status == "open":
        change(agent_client, conversation, "status", "pending")
    response = change(agent_client, conversation, "status", status)
    assert response.status_code == 200 and fresh(conversation).status == status
    event = db.session.scalars(select(ConversationEvent).order_by(ConversationEvent.created_at.desc())).first()
    assert (event.kind, event.after, event.actor_member_id) == ("status", status, agent.id)


def test_an_unknown_status_is_refused_and_nothing_changes(agent_client, conversation):
    response = change(agent_client, conversation, "status", "closed")
    assert response.status_code == 422 and "Choose open, pending or resolved" in response.get_data(as_text=True)
    assert fresh(conversation).status == "open"


def test_a_change_chosen_on_a_stale_view_is_refused_and_shows_the_conversation_as_it_now_stands(
        app, agent_client, tenant, conversation):
    other = seat(tenant, "agent")
    change(browser_of(app, other), conversation, "assignee", "me")
    response = change(agent_client, conversation, "status", "resolved", seen=(None, "open"))
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert "Someone changed this conversation meanwhile" in page and "Agent Person" in page
    assert fresh(conversation).status == "open"


def test_changes_in_a_foreign_tenant_are_not_found(app, tenant, other_tenant, conversation):
    stranger = browser_of(app, seat(other_tenant, "supervisor"))
    own_page = stranger.get("/workbench").get_data(as_text=True)
    response = stranger.post(f"/workbench/conversations/{conversation.id}/status", headers=HX, data={
        "csrf_token": csrf_from(own_page), "status": "resolved", "seen_assignee": "", "seen_status": "open"})
    assert response.status_code == 404 and fresh(conversation).status == "open"


@pytest.mark.parametrize("seen", [("not-a-uuid", "open"), (None, "closed"), (None, "a\x00b")])
def test_a_bad_seen_state_is_a_clear_refusal_not_an_error(agent_client, conversation, seen):
    response = change(agent_client, conversation, "status", "resolved", seen=seen)
    assert response.status_code == 422 and "reload the page" in response.get_data(as_text=True)
    assert fresh(conversation).status == "open"


def test_the_typeahead_lists_active_members_by_name_for_supervisors_only(app, supervisor, agent, tenant,
                                                                         other_tenant, conversation):
    quiet = seat(tenant, "agent")
    quiet.display_name, quiet.active = "Quiet Agent", False
    seat(other_tenant, "agent").display_name = "Agent Elsewhere"
    db.session.commit()
    page = browser_of(app, supervisor).get(f"/workbench/conversations/{conversation.id}/assignees?q=agent",
                                           headers=HX).get_data(as_text=True)
    assert "Assign to Agent Person" in page and "Quiet Agent" not in page and "Elsewhere" not in page
    agent_view = browser_of(app, agent).get(f"/workbench/conversations/{conversation.id}/assignees?q=a")
    assert agent_view.status_code == 403


def test_an_agent_who_assigns_while_a_rule_run_executes_is_never_overwritten(
        app, rules, tenant, admin, agent_client, agent, conversation, redis_conn, single_run_switches):
    target = seat(tenant, "agent")
    rule_id = rules.create(weekly_rule(target))
    assert rules.publish(rule_id, READ_ONLY).status_code == 200
    run = complete_plan(tenant, rule_id, target, [conversation])
    assert rules.post(f"/{run.id}/execute-plan", CONFIRM).status_code == 202  # the command is queued
    assert change(agent_client, conversation, "assignee", "me").status_code == 200  # the agent, meanwhile
    work(app, redis_conn, DEFAULT)
    db.session.expire_all()
    assert db.session.scalar(select(AssignmentReceipt.status)) == "state_changed"
    assert fresh(conversation).assignee_member_id == agent.id


def test_the_thread_explains_an_automated_assignment_and_links_administrators_to_the_run(
        app, rules, tenant, admin, admin_client, agent_client, conversation, redis_conn, single_run_switches):
    target = seat(tenant, "agent")
    target.display_name = "Rota Agent"
    db.session.commit()
    rule_id = rules.create(weekly_rule(target))
    assert rules.publish(rule_id, READ_ONLY).status_code == 200
    run = complete_plan(tenant, rule_id, target, [conversation])
    rules.post(f"/{run.id}/execute-plan", CONFIRM)
    work(app, redis_conn, DEFAULT)
    path = f"/workbench/conversations/{conversation.id}"
    as_agent = agent_client.get(path, headers=HX).get_data(as_text=True)
    assert "<strong>Automation</strong> assigned the conversation to Rota Agent" in as_agent
    assert "revision 1, triggered by a manual plan" in as_agent and "slot matched" in as_agent
    assert f"run {str(run.id)[:8]}" in as_agent and "run receipts" not in as_agent
    as_admin = admin_client.get(path, headers=HX).get_data(as_text=True)
    assert f'/extensions/automation/{rule_id}#run-{run.id}">run receipts' in as_admin
