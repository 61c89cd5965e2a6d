"""Replies delivered to the channel's outbound endpoint by the one delivery engine (real RQ
workers, a real HTTPS receiver on loopback), the channels console page, and retry."""
import json
import uuid
from datetime import timedelta

import pytest
from rq import Queue
from sqlalchemy import select, update

from core.clock import utcnow
from core.queue_names import WEBHOOKS

from core.crypto import decrypt
from core.db import db
from desk import outbound
from desk.merge import merge as merge_conversations
from desk.models import Channel, ChannelDelivery, ChannelDeliveryAttempt, Conversation, Customer
from desk.replies import post_message
from tests.conftest import csrf_from, egress_env, seat, worker_killed_once
from tests.support.channels import another_channel
from tests.support.desk import HX, browser_of, send_reply
from tests.support.openapi import deliver, verify


@pytest.fixture
def chat(tenant, chat_channel) -> Conversation:
    """A conversation on the channel with a customer known to it."""
    customer = Customer(tenant_id=tenant.id, name="Wang Fang", external_id="wx-42")
    db.session.add(customer)
    db.session.flush()
    found = Conversation(tenant_id=tenant.id, customer_id=customer.id, channel_id=chat_channel.id)
    db.session.add(found)
    db.session.commit()
    return found


def set_endpoint(admin_client, channel, url: str):
    token = csrf_from(admin_client.get("/channels").get_data(as_text=True))
    return admin_client.post(f"/channels/{channel.id}/outbound", data={"csrf_token": token, "url": url})


@pytest.fixture
def endpoint(admin_client, chat_channel, receiver) -> str:
    """The channel's endpoint set on the console page: the secret, as shown once."""
    page = set_endpoint(admin_client, chat_channel, receiver.url("localhost")).get_data(as_text=True)
    return page.split('id="shown-secret" type="text" readonly value="', 1)[1].split('"', 1)[0]


def deliveries() -> list[ChannelDelivery]:
    db.session.expire_all()
    return list(db.session.scalars(select(ChannelDelivery).order_by(ChannelDelivery.created_at)))


def test_a_reply_is_delivered_signed_like_open_api_webhooks(agent_client, chat, endpoint, receiver, redis_conn):
    response = send_reply(agent_client, chat, "您的包裹已发出")
    assert "Sending…" in response.get_data(as_text=True)  # stored at once, shown as sending
    deliver(redis_conn)
    (seen,) = receiver.received
    assert verify(endpoint, seen.headers, seen.body)
    body = json.loads(seen.body)
    assert seen.headers["X-Service-Event-Id"] == body["id"]
    assert (body["type"], body["data"]["text"], body["data"]["customer_external_id"]) == (
        "conversation.reply", "您的包裹已发出", "wx-42")
    assert [d.status for d in deliveries()] == ["delivered"]
    thread = agent_client.get(f"/workbench/conversations/{chat.id}", headers=HX).get_data(as_text=True)
    assert "Sent" in thread and "Sending…" not in thread


def test_a_private_note_is_never_delivered(agent_client, chat, endpoint, receiver, redis_conn):
    send_reply(agent_client, chat, "internal only", private=True)
    deliver(redis_conn)
    assert receiver.received == [] and deliveries() == []


def test_without_an_endpoint_a_reply_is_stored_only(agent_client, chat, receiver, redis_conn):
    response = send_reply(agent_client, chat, "stored only")
    deliver(redis_conn)
    assert receiver.received == [] and deliveries() == []
    assert "no outbound endpoint" in response.get_data(as_text=True)


def test_a_retried_post_queues_one_delivery(agent_client, chat, endpoint, receiver, redis_conn):
    client_id = uuid.uuid4()
    send_reply(agent_client, chat, "once", client_id=client_id)
    send_reply(agent_client, chat, "once", client_id=client_id)
    deliver(redis_conn)
    assert len(receiver.received) == 1 and len(deliveries()) == 1


def test_a_failing_endpoint_ends_failed_after_the_webhook_schedule_and_retry_sends_it_again(
        app, agent_client, chat, endpoint, receiver, redis_conn, monkeypatch):
    monkeypatch.setitem(app.config, "WEBHOOK_RETRY_INTERVALS", (0,) * 7)
    receiver.default = (503, {}, b"down")
    send_reply(agent_client, chat, "please arrive")
    message_id = deliveries()[0].message_id
    deliver(redis_conn, rounds=3)
    [failed] = deliveries()
    assert failed.status == "failed" and failed.attempts == 8 and len(receiver.received) == 8
    thread = agent_client.get(f"/workbench/conversations/{chat.id}", headers=HX).get_data(as_text=True)
    assert "Failed to send" in thread and ">Retry</button>" in thread
    receiver.default = (200, {}, b"ok")
    token = csrf_from(agent_client.get("/workbench").get_data(as_text=True))
    retried = agent_client.post(f"/workbench/messages/{message_id}/retry", headers=HX, data={"csrf_token": token})
    assert retried.status_code == 200 and "Sending…" in retried.get_data(as_text=True)
    again = agent_client.post(f"/workbench/messages/{message_id}/retry", headers=HX, data={"csrf_token": token})
    assert again.status_code == 422 and "being sent or was sent" in again.get_data(as_text=True)
    deliver(redis_conn)
    assert [d.status for d in deliveries()] == ["retried", "delivered"] and len(receiver.received) == 9
    state = agent_client.get(f"/workbench/messages/{message_id}/delivery", headers=HX).get_data(as_text=True)
    assert "Sent" in state and "hx-trigger" not in state  # final: it stops polling


def test_the_sweeper_requeues_an_interrupted_reply_delivery(app, agent_client, chat, endpoint, receiver, redis_conn):
    send_reply(agent_client, chat, "eventually")
    Queue(WEBHOOKS, connection=redis_conn).empty()  # the worker died with the job
    db.session.execute(update(ChannelDelivery).values(next_attempt_at=utcnow() - timedelta(minutes=5)))
    db.session.commit()
    assert outbound.sweep() == 1
    deliver(redis_conn)
    assert [d.status for d in deliveries()] == ["delivered"] and len(receiver.received) == 1


def test_a_worker_killed_mid_reply_delivery_delivers_it_again_under_the_same_id(app, app_config, agent_client, chat,
                                                                                 endpoint, receiver, redis_conn):
    receiver.answers.append((200, {}, b"too late", 30))  # the first attempt stalls: the worker dies in it
    send_reply(agent_client, chat, "cut short")
    worker_killed_once(app_config, lambda: receiver.received, **egress_env(app))
    assert [d.status for d in deliveries()] == ["pending"]
    db.session.execute(update(ChannelDelivery).values(next_attempt_at=utcnow() - timedelta(minutes=5)))  # lease lapsed
    db.session.commit()
    assert outbound.sweep() == 1
    deliver(redis_conn)
    assert [d.status for d in deliveries()] == ["delivered"] and len(receiver.received) == 2
    assert len({seen.headers["X-Service-Event-Id"] for seen in receiver.received}) == 1


def test_the_outbound_secret_is_shown_once_and_stored_encrypted(admin_client, chat_channel, endpoint):
    db.session.expire_all()
    stored = db.session.get(Channel, chat_channel.id)
    assert endpoint not in stored.outbound_secret_encrypted and decrypt(stored.outbound_secret_encrypted) == endpoint
    assert endpoint not in admin_client.get("/channels").get_data(as_text=True)


@pytest.mark.parametrize("url,says", [("http://example.com/hook", "Use an https:// address."),
                                      ("https://user:pw@example.com/", "Remove the user name and password"),
                                      ("https://example.com/hook?x=1", "Remove the query string"),
                                      ("not a url", "Remove the spaces, line breaks"), ("https://", "Enter a full https://"),
                                      ("https://" + "a" * 2050 + ".com/", "Enter a full https:// address"),
                                      (" https://example.com/hook", "Remove the spaces, line breaks"),
                                      ("https://example.com/a\x00", "Remove the spaces, line breaks"),
                                      ("https://169.254.169.254/x", "non-public address"),
                                      ("https://10.0.0.1/x", "non-public address"),
                                      ("https://0.0.0.0/x", "non-public address"),
                                      ("https://100.64.0.1/x", "non-public address"),
                                      ("https://127.1/x", "in its plain form"),
                                      ("https://internal.example.com/x", "non-public address")])
def test_a_bad_endpoint_is_refused_next_to_its_field(admin_client, chat_channel, dns, url, says):
    dns["internal.example.com"] = [["192.168.1.1"]]
    response = set_endpoint(admin_client, chat_channel, url)
    assert response.status_code == 422 and says in response.get_data(as_text=True)
    db.session.expire_all()
    assert db.session.get(Channel, chat_channel.id).outbound_url is None


def test_removing_the_endpoint_stores_replies_only(admin_client, agent_client, chat, chat_channel, endpoint, receiver,
                                                   redis_conn):
    token = csrf_from(admin_client.get("/channels").get_data(as_text=True))
    removed = admin_client.post(f"/channels/{chat_channel.id}/outbound/delete", data={"csrf_token": token})
    assert removed.status_code == 302
    send_reply(agent_client, chat, "after removal")
    deliver(redis_conn)
    assert receiver.received == [] and deliveries() == []


@pytest.mark.parametrize("name", ["", " ", "x" * 81, "nul\x00"])
def test_a_bad_channel_name_is_refused_next_to_its_field(admin_client, tenant, name):
    token = csrf_from(admin_client.get("/channels").get_data(as_text=True))
    response = admin_client.post("/channels", data={"csrf_token": token, "name": name})
    assert response.status_code == 422 and "Name the channel" in response.get_data(as_text=True)
    assert db.session.scalar(select(Channel.id).where(Channel.tenant_id == tenant.id)) is None


def test_an_administrator_creates_a_channel_and_sees_its_inbound_secret_once(admin_client, tenant):
    token = csrf_from(admin_client.get("/channels").get_data(as_text=True))
    response = admin_client.post("/channels", data={"csrf_token": token, "name": "WeChat"})
    assert response.status_code == 201 and "Inbound signing secret" in response.get_data(as_text=True)
    assert db.session.scalar(select(Channel.name).where(Channel.tenant_id == tenant.id)) == "WeChat"


def test_another_tenants_channel_and_messages_are_not_found(app, other_tenant, chat_channel, chat, agent_client,
                                                            endpoint):
    stranger = browser_of(app, seat(other_tenant, "admin"))
    token = csrf_from(stranger.get("/channels").get_data(as_text=True))
    assert stranger.post(f"/channels/{chat_channel.id}/outbound", data={"csrf_token": token,
                                                                        "url": "https://x.example/"}).status_code == 404
    send_reply(agent_client, chat, "mine")
    message_id = deliveries()[0].message_id
    assert stranger.get(f"/workbench/messages/{message_id}/delivery", headers=HX).status_code == 404
    assert stranger.post(f"/workbench/messages/{message_id}/retry", headers=HX,
                         data={"csrf_token": token}).status_code == 404


def test_agents_cannot_reach_the_channels_page(agent_client):
    assert agent_client.get("/channels").status_code == 403


def test_attempts_are_recorded_per_delivery(agent_client, chat, endpoint, receiver, redis_conn):
    send_reply(agent_client, chat, "counted")
    deliver(redis_conn)
    [attempt] = db.session.scalars(select(ChannelDeliveryAttempt)).all()
    assert attempt.status_code == 200 and attempt.number == 1 and attempt.event_id == deliveries()[0].id


def test_a_retry_after_a_merge_goes_to_the_same_customer_on_the_same_channel(tenant, chat, chat_channel, endpoint):
    """The merge moved the message into another customer's conversation on another channel: the retry
    still answers the customer it was written to, where they wrote."""
    other = Customer(tenant_id=tenant.id, name="Li Lei", external_id="wx-7")
    db.session.add(other)
    db.session.flush()
    target = Conversation(tenant_id=tenant.id, customer_id=other.id, channel_id=another_channel(tenant)[0].id)
    db.session.add(target)
    db.session.commit()
    supervisor = seat(tenant, "supervisor")
    message, first = post_message(tenant.id, supervisor, chat.id, "About your parcel", False, uuid.uuid4())
    db.session.execute(update(ChannelDelivery).where(ChannelDelivery.id == first).values(status="failed"))
    merge_conversations(tenant.id, supervisor, chat.id, target.id, "open", True)
    db.session.commit()
    retried = db.session.get(ChannelDelivery, outbound.retry(tenant.id, message.id))
    data = json.loads(retried.body)["data"]
    assert (retried.channel_id, data["customer_external_id"], data["conversation_id"]) == (
        chat_channel.id, "wx-42", str(chat.id))
