"""The workbench shows only the selected tenant's conversations."""
import pytest

from core.db import db
from desk.models import Conversation, Customer, Message


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


def test_workbench_lists_open_and_pending_but_not_resolved(agent_client, tenant):
    _conversation(tenant, "Open Olga")
    _conversation(tenant, "Pending Pete", status="pending")
    _conversation(tenant, "Resolved Rita", status="resolved")
    page = agent_client.get("/workbench").get_data(as_text=True)
    assert "Open Olga" in page and "Pending Pete" in page and "Resolved Rita" not in page


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


def test_empty_workbench_says_so(agent_client):
    assert "No open or pending conversations" in agent_client.get("/workbench").get_data(as_text=True)


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
