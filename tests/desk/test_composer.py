"""The composer's server side: replies and private notes stored once per client message id, the
change stamp, refusals that keep the composer's text, and tenant isolation."""
import uuid

import pytest
from sqlalchemy import select

from core.db import db
from desk.models import ConversationRead, Message
from tests.conftest import csrf_from, seat
from tests.support.desk import HX, browser_of, fresh, send_reply


def stored() -> list[Message]:
    db.session.expire_all()
    return list(db.session.scalars(select(Message).order_by(Message.created_at)))


def test_a_reply_is_stored_outbound_with_its_author_and_moves_activity_and_the_change_stamp(
        agent_client, agent, conversation):
    before = fresh(conversation)
    stamp, activity = before.updated_at, before.last_activity_at
    response = send_reply(agent_client, conversation)
    assert response.status_code == 200 and response.headers["HX-Trigger"] == "conversations-changed"
    assert "Your parcel left the warehouse today." in response.get_data(as_text=True)
    [message] = stored()
    assert (message.direction, message.kind, message.author_member_id) == ("outbound", "public", agent.id)
    after = fresh(conversation)
    assert after.updated_at > stamp and after.last_activity_at > activity


def test_a_private_note_is_stored_as_a_note_and_shown_as_one(agent_client, conversation):
    response = send_reply(agent_client, conversation, "Customer is a VIP", private=True)
    [message] = stored()
    assert message.kind == "private_note"
    assert '<span class="note-label">Private note</span>' in response.get_data(as_text=True)


def test_a_retried_post_with_the_same_client_message_id_stores_one_message(agent_client, conversation):
    client_id = uuid.uuid4()
    assert send_reply(agent_client, conversation, client_id=client_id).status_code == 200
    assert send_reply(agent_client, conversation, client_id=client_id).status_code == 200
    assert len(stored()) == 1


def test_the_same_client_message_id_with_other_text_is_refused(agent_client, conversation):
    client_id = uuid.uuid4()
    send_reply(agent_client, conversation, "first", client_id=client_id)
    response = send_reply(agent_client, conversation, "second", client_id=client_id)
    assert response.status_code == 422 and "already sent with other text" in response.get_data(as_text=True)
    assert [m.text for m in stored()] == ["first"]


@pytest.mark.parametrize("text", ["", "   \n\u3000", "x" * 4001, "nul\x00byte"])
def test_an_empty_too_long_or_unstorable_message_is_refused_into_the_composers_alert(
        agent_client, conversation, text):
    response = send_reply(agent_client, conversation, text)
    assert response.status_code == 422
    assert response.headers["HX-Retarget"] == "#composer-error" and "Write something first" in response.get_data(
        as_text=True)
    assert stored() == []


@pytest.mark.parametrize("client_id", ["", "not-a-uuid"])
def test_a_missing_or_bad_client_message_id_is_refused(agent_client, conversation, client_id):
    page = agent_client.get("/workbench").get_data(as_text=True)
    response = agent_client.post(f"/workbench/conversations/{conversation.id}/messages", headers=HX, data={
        "csrf_token": csrf_from(page), "text": "hello", "client_message_id": client_id})
    assert response.status_code == 422 and stored() == []


def test_sending_into_another_tenants_conversation_is_not_found(app, other_tenant, conversation):
    stranger = browser_of(app, seat(other_tenant, "agent"))
    page = stranger.get("/workbench").get_data(as_text=True)
    response = stranger.post(f"/workbench/conversations/{conversation.id}/messages", headers=HX, data={
        "csrf_token": csrf_from(page), "text": "hello", "client_message_id": str(uuid.uuid4())})
    assert response.status_code == 404 and stored() == []


def test_replying_leaves_the_conversation_read_for_its_author(agent_client, agent, conversation):
    send_reply(agent_client, conversation)
    read_at = db.session.scalar(select(ConversationRead.read_at).where(ConversationRead.member_id == agent.id))
    assert read_at >= fresh(conversation).last_activity_at
    assert 'class="unread"' not in agent_client.get("/workbench").get_data(as_text=True)


def test_the_workbench_page_carries_the_tenants_quick_replies_as_data_not_markup(agent_client, tenant):
    from desk.quick_replies import add_reply
    add_reply(tenant.id, "Greeting", "<b>Hello</b> there")
    db.session.commit()
    page = agent_client.get("/workbench").get_data(as_text=True)
    data = page.split('<div id="quick-reply-data" data-replies=\'', 1)[1].split("'", 1)[0]
    assert "Greeting" in data and "<b>" not in data  # tojson escapes markup and quotes

