"""The workbench: its list by status and view (unread marks, last-message previews), the thread,
the customer's details, the "changes since" poll, and only the selected tenant's conversations."""
from datetime import timedelta

import pytest
from sqlalchemy import update

from core.clock import iso, utcnow
from core.db import db
from desk.models import Conversation, Customer, Message
from desk.panels import PANELS
from tests.conftest import seat
from tests.support.sql import statements


def _conversation(tenant, name, status="open", assignee=None, text="hello") -> Conversation:
    customer = Customer(tenant_id=tenant.id, name=name)
    db.session.add(customer)
    db.session.flush()
    conversation = Conversation(tenant_id=tenant.id, customer_id=customer.id, status=status,
                                assignee_member_id=assignee.id if assignee else None)
    db.session.add(conversation)
    db.session.flush()
    db.session.add(Message(tenant_id=tenant.id, conversation_id=conversation.id, direction="inbound",
                           text=text))
    db.session.commit()
    return conversation


@pytest.mark.parametrize("status,shown", [("", "Open Olga"), ("open", "Open Olga"), ("pending", "Pending Pete"),
                                          ("resolved", "Resolved Rita")])
def test_the_status_tabs_list_one_status_each_and_open_by_default(agent_client, tenant, status, shown):
    for name, state in (("Open Olga", "open"), ("Pending Pete", "pending"), ("Resolved Rita", "resolved")):
        _conversation(tenant, name, status=state)
    page = agent_client.get(f"/workbench?status={status}").get_data(as_text=True)
    assert [name for name in ("Open Olga", "Pending Pete", "Resolved Rita") if name in page] == [shown]


def test_workbench_never_shows_another_tenants_conversations(agent_client, tenant, other_tenant):
    _conversation(tenant, "Mine Mia")
    foreign = _conversation(other_tenant, "Foreign Fay", text="foreign text")
    assert "Foreign Fay" not in agent_client.get("/workbench").get_data(as_text=True)
    response = agent_client.get(f"/workbench/conversations/{foreign.id}")
    assert response.status_code == 404 and "foreign text" not in response.get_data(as_text=True)


@pytest.mark.parametrize("view,expected", [("mine", {"Assigned Ann"}), ("unassigned", {"Free Fred"}),
                                           ("all", {"Assigned Ann", "Free Fred"})])
def test_workbench_filters(agent_client, tenant, agent, view, expected):
    _conversation(tenant, "Assigned Ann", assignee=agent)
    _conversation(tenant, "Free Fred")
    page = agent_client.get(f"/workbench?view={view}").get_data(as_text=True)
    assert {n for n in ("Assigned Ann", "Free Fred") if n in page} == expected


def test_conversation_partial_for_htmx_and_full_page_otherwise(agent_client, tenant):
    conversation = _conversation(tenant, "Olga", text="where is my parcel?")
    partial = agent_client.get(f"/workbench/conversations/{conversation.id}", headers={"HX-Request": "true"})
    assert "where is my parcel?" in partial.get_data(as_text=True)
    assert "<html" not in partial.get_data(as_text=True)
    full = agent_client.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    assert "<html" in full and "where is my parcel?" in full


@pytest.mark.parametrize("query,says", [("", "No open conversations here."),
                                        ("?status=pending&view=mine", "No pending conversations assigned to you."),
                                        ("?view=unassigned", "No open conversations without an assignee.")])
def test_an_empty_list_says_what_it_is_empty_of(agent_client, query, says):
    assert says in agent_client.get(f"/workbench{query}").get_data(as_text=True)


def test_customer_names_and_message_texts_are_shown_as_text_not_markup(agent_client, tenant):
    attack = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    conversation = _conversation(tenant, attack, text=attack)
    for path in ("/workbench", f"/workbench/conversations/{conversation.id}"):
        page = agent_client.get(path).get_data(as_text=True)
        assert "<script>alert(1)" not in page and "<img src=x" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_reading_conversations_in_the_workbench_changes_nothing(agent_client, tenant):
    conversation = _conversation(tenant, "Olga")
    before = conversation.updated_at
    agent_client.get("/workbench")
    agent_client.get(f"/workbench/conversations/{conversation.id}", headers={"HX-Request": "true"})
    agent_client.get(f"/workbench/conversations/{conversation.id}")
    db.session.expire_all()
    assert conversation.updated_at == before  # a rule's snapshot taken before the reads still holds


def test_the_list_shows_the_last_public_message_not_a_private_note(agent_client, tenant, agent):
    conversation = _conversation(tenant, "Olga", text="first question")
    db.session.add_all([Message(tenant_id=tenant.id, conversation_id=conversation.id, direction="inbound",
                                text="where is my parcel?", created_at=utcnow() + timedelta(seconds=1)),
                        Message(tenant_id=tenant.id, conversation_id=conversation.id, direction="outbound",
                                kind="private_note", author_member_id=agent.id, text="secret note",
                                created_at=utcnow() + timedelta(seconds=2))])
    db.session.commit()
    page = agent_client.get("/workbench").get_data(as_text=True)
    assert "where is my parcel?" in page and "secret note" not in page and "first question" not in page


def test_a_conversation_is_unread_until_opened_and_again_after_new_activity(agent_client, tenant):
    conversation = _conversation(tenant, "Olga")
    assert 'class="unread"' in agent_client.get("/workbench").get_data(as_text=True)
    agent_client.get(f"/workbench/conversations/{conversation.id}", headers={"HX-Request": "true"})
    assert 'class="unread"' not in agent_client.get("/workbench").get_data(as_text=True)
    db.session.execute(update(Conversation).values(last_activity_at=utcnow() + timedelta(seconds=5)))
    db.session.commit()
    assert 'class="unread"' in agent_client.get("/workbench").get_data(as_text=True)


def test_unread_marks_are_each_members_own(app, agent_client, tenant):
    conversation = _conversation(tenant, "Olga")
    agent_client.get(f"/workbench/conversations/{conversation.id}")
    other = app.test_client()
    from tests.conftest import login
    login(other, seat(tenant, "agent").user.email)
    assert 'class="unread"' in other.get("/workbench").get_data(as_text=True)


def test_the_details_panel_shows_the_customer_and_the_conversations_assignee_and_status(agent_client, tenant,
                                                                                          agent):
    conversation = _conversation(tenant, "Olga", assignee=agent)
    customer = db.session.get(Customer, conversation.customer_id)
    customer.phone, customer.email, customer.support_note = "+86 138 0000 0000", "olga@example.com", "VIP since 2024"
    db.session.commit()
    page = agent_client.get(f"/workbench/conversations/{conversation.id}", headers={"HX-Request": "true"})
    html = page.get_data(as_text=True)
    assert 'id="details-pane" hx-swap-oob="innerHTML"' in html  # the details replace the panel's
    for shown in ("+86 138 0000 0000", "olga@example.com", "VIP since 2024", "Agent Person", ">Open<"):
        assert shown in html


def test_attachments_are_listed_by_name_and_size_never_opened_inline(agent_client, tenant):
    conversation = _conversation(tenant, "Olga")
    db.session.add(Message(tenant_id=tenant.id, conversation_id=conversation.id, direction="inbound", text="see file",
                           attachments=[{"name": "invoice.pdf", "size": 2048, "url": "https://example.com/x.pdf"}]))
    db.session.commit()
    html = agent_client.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    assert "invoice.pdf" in html and "2.0 kB" in html and "example.com/x.pdf" not in html


def _since(agent_client) -> str:
    page = agent_client.get("/workbench").get_data(as_text=True)
    return page.split('data-since="', 1)[1].split('"', 1)[0]


def test_the_poll_answers_204_while_nothing_changed_and_names_what_changed_after(agent_client, tenant):
    quiet, busy = _conversation(tenant, "Quiet"), _conversation(tenant, "Busy")
    since = _since(agent_client)
    assert agent_client.get("/workbench/changes", query_string={"since": since}).status_code == 204
    db.session.execute(update(Conversation).where(Conversation.id == busy.id).values(status="pending"))
    db.session.commit()
    answer = agent_client.get("/workbench/changes", query_string={"since": since})
    assert answer.status_code == 200 and answer.get_json()["conversation_ids"] == [str(busy.id)]
    assert quiet.id != busy.id
    later = answer.get_json()["since"]
    assert agent_client.get("/workbench/changes", query_string={"since": later}).status_code == 204


def test_the_poll_never_sees_another_tenants_changes(agent_client, tenant, other_tenant):
    _conversation(tenant, "Mine")
    since = _since(agent_client)
    _conversation(other_tenant, "Theirs")
    assert agent_client.get("/workbench/changes", query_string={"since": since}).status_code == 204


@pytest.mark.parametrize("since", ["", "yesterday", "2026-11-25T10:00:00", "2026-13-01T00:00:00Z",
                                   "0001-01-01T00:00:00+14:00", "0001-01-01T00:00:00+00:01",
                                   "9999-12-31T23:59:59-14:00", "9999-12-31T23:59:59.999999-00:01"])
def test_a_bad_since_is_400(agent_client, since):
    assert agent_client.get("/workbench/changes", query_string={"since": since}).status_code == 400


def test_the_poll_needs_a_workbench_session(client):
    assert client.get("/workbench/changes", query_string={"since": iso(utcnow())}).status_code in (302, 401)


def test_the_page_costs_the_same_statements_for_3_and_40_conversations_and_a_quiet_poll_just_one(
        app, agent_client, tenant):
    for n in range(3):
        _conversation(tenant, f"Customer {n}")
    agent_client.get("/workbench")  # the agent's heartbeat, written at most every 30 s, is not the page's cost
    few = statements(app, lambda: agent_client.get("/workbench"))
    quiet = _since(agent_client)
    assert statements(app, lambda: agent_client.get("/workbench/changes", query_string={"since": quiet})) == 1
    for n in range(3, 40):
        _conversation(tenant, f"Customer {n}")
    page = []
    assert statements(app, lambda: page.append(agent_client.get("/workbench").get_data(as_text=True))) == few
    assert page[0].count("Customer ") >= 40
    quiet = _since(agent_client)
    assert statements(app, lambda: agent_client.get("/workbench/changes", query_string={"since": quiet})) == 1

@pytest.mark.parametrize("role", ["admin", "supervisor", "agent"])
def test_every_role_reaches_the_workbench_and_sees_the_tenants_conversations(app, tenant, role):
    from tests.conftest import login
    _conversation(tenant, "Olga", assignee=seat(tenant, "agent"))
    browser = app.test_client()
    login(browser, seat(tenant, role).user.email)
    page = browser.get("/workbench?view=all").get_data(as_text=True)
    assert "Olga" in page
    console = browser.get("/quick-replies")
    assert console.status_code == (200 if role == "admin" else 403)


def test_a_deactivated_agents_poll_is_refused_and_says_nothing_of_the_tenant(agent_client, agent, tenant):
    since = _since(agent_client)
    _conversation(tenant, "Changed meanwhile")
    agent.active = False
    db.session.commit()
    response = agent_client.get("/workbench/changes", query_string={"since": since})
    assert response.status_code in (302, 403) and b"conversation_ids" not in response.data


def test_without_a_panel_provider_the_workbench_has_no_tools_and_no_style_choice(app, agent_client, tenant,
                                                                              monkeypatch):
    monkeypatch.delitem(app.extensions, PANELS)
    conversation = _conversation(tenant, "Plain Paula")
    page = agent_client.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    assert "Forms an administrator adds to the workbench show here." in page
    assert 'id="workbench-style"' not in page and 'class="workbench" id="workbench"' in page
