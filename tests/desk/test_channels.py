"""The signed inbound channel endpoint."""
import json
import uuid
import time

import pytest
from rq import Queue
from sqlalchemy import func, select

from core.crypto import encrypt, hmac_sha256_hex
from core.db import db
from desk.channels import create_channel
from desk.models import Channel, Conversation, Customer, Message
from tests.support.channels import payload, send


def _count(model) -> int:
    return db.session.scalar(select(func.count()).select_from(model))


def test_signed_message_creates_customer_conversation_and_message(client, channel, tenant):
    response = send(client, channel, payload(phone="+86 13800000000"))
    assert response.status_code == 201
    data = response.get_json()["data"]
    customer = db.session.scalar(select(Customer))
    assert (customer.tenant_id, customer.name, customer.phone) == (tenant.id, "Wang Fang", "+86 13800000000")
    conversation = db.session.get(Conversation, uuid.UUID(data["conversation_id"]))
    assert conversation.status == "open" and conversation.customer_id == customer.id
    message = db.session.scalar(select(Message))
    assert (message.direction, message.kind, message.text) == ("inbound", "public", "Hello, my parcel is late")


def test_channel_secret_is_stored_encrypted(channel):
    found, secret = channel
    assert secret not in db.session.get(Channel, found.id).secret_encrypted


def test_bad_signature_is_refused_and_stores_nothing(client, channel):
    response = send(client, channel, payload(), secret="wrong-secret")
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "invalid_signature"
    assert _count(Message) == 0 and _count(Customer) == 0


def test_signature_over_a_different_body_is_refused(client, channel):
    found, secret = channel
    ts = str(int(time.time()))
    signature = hmac_sha256_hex(secret, ts.encode() + b"." + b'{"other": true}')
    response = client.post(f"/api/channels/{found.id}/messages", json=payload(),
                           headers={"X-Channel-Timestamp": ts, "X-Channel-Signature": f"v1={signature}"})
    assert response.status_code == 401


@pytest.mark.parametrize("skew", [301, -301, 3600])
def test_timestamp_outside_five_minutes_is_refused(client, channel, skew):
    response = send(client, channel, payload(), timestamp=int(time.time()) + skew)
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "invalid_timestamp"
    assert _count(Message) == 0


@pytest.mark.parametrize("timestamp", ["9" * 5000, "-1", "1e9", "١٧٠٠٠٠٠٠٠٠", " 1700000000", ""])
def test_malformed_timestamp_is_refused_not_a_server_error(client, channel, timestamp):
    response = send(client, channel, payload(), timestamp=timestamp)
    assert response.status_code == 401
    assert response.get_json()["error"]["code"] == "invalid_timestamp"


def test_timestamp_within_five_minutes_is_accepted(client, channel):
    assert send(client, channel, payload(), timestamp=int(time.time()) - 290).status_code == 201


def test_missing_signature_headers_are_refused(client, channel):
    found, _ = channel
    response = client.post(f"/api/channels/{found.id}/messages", json=payload())
    assert response.status_code == 401


def test_replayed_message_id_is_ignored(client, channel, redis_conn):
    assert send(client, channel, payload()).status_code == 201
    again = send(client, channel, payload(text="edited replay"))
    assert again.status_code == 200 and again.get_json()["data"]["duplicate"] is True
    assert _count(Message) == 1
    assert db.session.scalar(select(Message.text)) == "Hello, my parcel is late"
    assert Queue("events", connection=redis_conn).count == 1


def test_body_above_16_kb_is_refused(client, channel):
    response = send(client, channel, payload(text="x" * 17_000))
    assert response.status_code == 413


@pytest.mark.parametrize("body", [
    {"message_id": "m", "text": "hi", "customer": {"external_id": "c", "name": "N"}, "extra": 1},
    {"message_id": "m", "text": "hi", "customer": {"external_id": "c", "name": "N", "vip": True}},
    {"message_id": "m", "text": "   ", "customer": {"external_id": "c", "name": "N"}},
    {"message_id": "m", "text": "hi", "customer": {"external_id": "c"}},
    {"message_id": 5, "text": "hi", "customer": {"external_id": "c", "name": "N"}},
    {"message_id": "m", "text": "hi", "customer": "c"},
])
def test_malformed_message_is_refused(client, channel, body):
    response = send(client, channel, body)
    assert response.status_code == 400
    assert response.get_json()["error"]["code"] == "invalid_message"
    assert _count(Message) == 0


def test_signed_non_json_body_is_invalid_json(client, channel):
    assert send(client, channel, None, raw=b"not json").status_code == 400


@pytest.mark.parametrize("raw,named", [
    (b'{"message_id": "m", "message_id": "n", "text": "hi", "customer": {"external_id": "c", "name": "N"}}',
     "message_id"),
    (b'{"message_id": "m", "text": "hi", "customer": {"external_id": "c", "external_id": "d", "name": "N"}}',
     "external_id"),
])
def test_a_message_naming_a_property_twice_is_refused(client, channel, raw, named):
    response = send(client, channel, None, raw=raw)
    assert response.status_code == 400
    assert response.get_json()["error"] == {"code": "invalid_message", "detail": named}
    assert _count(Message) == 0


def test_a_message_in_utf_16_is_invalid_json(client, channel):
    response = send(client, channel, None, raw=json.dumps(payload()).encode("utf-16"))
    assert response.status_code == 400 and response.get_json()["error"]["code"] == "invalid_json"
    assert _count(Message) == 0


def test_unknown_or_inactive_channel_is_not_found(client, channel):
    found, _ = channel
    found.active = False
    db.session.commit()
    assert send(client, channel, payload()).status_code == 404


def test_next_message_continues_the_same_conversation_and_updates_contact(client, channel):
    first = send(client, channel, payload()).get_json()["data"]
    second = send(client, channel, payload(message_id="m-2", email="wf@mail.example")).get_json()["data"]
    assert first["conversation_id"] == second["conversation_id"]
    assert db.session.scalar(select(Customer.email)) == "wf@mail.example"
    assert _count(Customer) == 1


def test_a_message_without_phone_or_email_keeps_the_stored_ones(client, channel):
    send(client, channel, payload(phone="+86 13800000000", email="wf@mail.example"))
    send(client, channel, payload(message_id="m-2", external_id="c-1"))
    customer = db.session.scalar(select(Customer))
    assert (customer.phone, customer.email) == ("+86 13800000000", "wf@mail.example")


def test_a_message_with_the_same_contact_leaves_the_customer_unchanged(client, channel):
    send(client, channel, payload())
    before = db.session.scalar(select(Customer.updated_at))
    send(client, channel, payload(message_id="m-2"))
    db.session.expire_all()
    assert db.session.scalar(select(Customer.updated_at)) == before
    send(client, channel, payload(message_id="m-3", phone="+86 13800000000"))
    db.session.expire_all()
    assert db.session.scalar(select(Customer.updated_at)) > before


def test_a_new_channel_secret_takes_effect_at_once(client, channel):
    found, old_secret = channel
    assert send(client, channel, payload()).status_code == 201  # the old secret is now cached
    new_secret = "a-new-signing-secret"
    found.secret_encrypted = encrypt(new_secret)
    db.session.commit()
    assert send(client, channel, payload(message_id="m-2")).status_code == 401
    assert send(client, channel, payload(message_id="m-3"), secret=new_secret).status_code == 201


def test_message_reopens_a_resolved_conversation(client, channel):
    data = send(client, channel, payload()).get_json()["data"]
    conversation = db.session.get(Conversation, uuid.UUID(data["conversation_id"]))
    conversation.status = "resolved"
    db.session.commit()
    before = conversation.updated_at
    send(client, channel, payload(message_id="m-2"))
    db.session.expire_all()
    assert conversation.status == "open" and conversation.updated_at > before
    assert _count(Conversation) == 1


def test_message_received_event_carries_ids_but_never_the_text(client, channel, redis_conn):
    data = send(client, channel, payload(text="secret order 12345")).get_json()["data"]
    jobs = Queue("events", connection=redis_conn).get_jobs()
    assert len(jobs) == 1
    job = jobs[0]
    assert job.func_name == "jobs.tasks.notify_subscriber"
    assert job.args == ("message_received", "rules.message_events.on_message_received")
    assert job.kwargs["message_id"] == data["message_id"]
    assert job.kwargs["conversation_id"] == data["conversation_id"]
    assert "secret order" not in json.dumps([job.args, job.kwargs])


def test_customers_are_separate_per_tenant(client, channel, other_tenant):
    other, other_secret = create_channel(other_tenant.id, "Other chat")
    db.session.commit()
    send(client, channel, payload())
    send(client, (other, other_secret), payload())
    tenants = set(db.session.scalars(select(Customer.tenant_id)))
    assert len(tenants) == 2


@pytest.mark.parametrize("path", ["text", "message_id", "customer.name", "customer.external_id"])
@pytest.mark.parametrize("odd", ["\\u0000", "\\ud800", "\\udfff tail"])
def test_nul_or_lone_surrogate_in_a_text_is_invalid_message(client, channel, path, odd):
    body = json.dumps(payload()).replace('"m-1"', f'"m{odd}"' if path == "message_id" else '"m-1"')
    field = {"text": "Hello, my parcel is late", "customer.name": "Wang Fang",
             "customer.external_id": "c-1"}.get(path)
    if field is not None:
        body = body.replace(f'"{field}"', f'"{field}{odd}"')
    response = send(client, channel, None, raw=body.encode())
    assert response.status_code == 400
    assert response.get_json()["error"] == {"code": "invalid_message", "detail": path}
    assert _count(Message) == 0 and _count(Customer) == 0


def test_a_replay_naming_another_customer_changes_nothing(client, channel):
    assert send(client, channel, payload()).status_code == 201
    again = send(client, channel, payload(external_id="c-2"))
    assert again.status_code == 200 and again.get_json()["data"]["duplicate"] is True
    assert list(db.session.scalars(select(Customer.external_id))) == ["c-1"]


@pytest.mark.parametrize("store", ["SQLALCHEMY_DATABASE_URI", "REDIS_URL"])
def test_an_unreachable_store_never_answers_500(app_config, channel, store, caplog):
    from tests.conftest import build_app

    unreachable = {"SQLALCHEMY_DATABASE_URI": "postgresql+psycopg://studio@127.0.0.1:1/none",
                   "REDIS_URL": "redis://127.0.0.1:1/0"}  # nothing listens on port 1
    response = send(build_app({**app_config, store: unreachable[store]}).test_client(), channel,
                    payload(text="marker-7f3a"))
    if store == "REDIS_URL":  # stored: the answer says so, and the event's loss is logged
        assert response.status_code == 201 and _count(Message) == 1
    else:  # nothing stored: a 503 the channel retries
        assert response.status_code == 503
        assert response.get_json()["error"]["code"] == "service_unavailable"
    assert "marker-7f3a" not in caplog.text
