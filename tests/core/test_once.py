"""The create-once path: one digest rule, one replay/conflict rule, one way to say which limit refused."""
import hashlib
import uuid

import pytest
from sqlalchemy import func, select, update

from core.api import ApiError
from core.db import db
from core.once import CreateOnce, digest, take_slot
from desk.channels import create_channel
from desk.models import Channel, Conversation, Customer, Message


def test_digest_is_equal_for_identical_input():
    assert digest({"title": "Café", "amount": 1}) == digest({"title": "Café", "amount": 1})


def test_digest_differs_when_keys_are_reordered():
    assert digest({"title": "T", "amount": 1}) != digest({"amount": 1, "title": "T"})


def test_digest_differs_for_different_values():
    assert digest({"title": "T"}) != digest({"title": "U"})


def test_digest_is_sha256_of_the_compact_serialization():
    expected = hashlib.sha256('{"title":"Café","n":[1,2]}'.encode()).hexdigest()
    assert digest({"title": "Café", "n": [1, 2]}) == expected


def test_digest_tolerates_a_lone_surrogate_that_validation_will_refuse():
    assert len(digest({"title": "\ud800"})) == 64


@pytest.fixture
def channel_in_use(tenant) -> Channel:
    """A channel with a conversation on it, the conversation's id as `conversation_id`."""
    found, _ = create_channel(tenant.id, "Chat")
    customer = Customer(tenant_id=tenant.id, name="N", external_id="c")
    db.session.add(customer)
    db.session.flush()
    conversation = Conversation(tenant_id=tenant.id, customer_id=customer.id, channel_id=found.id)
    db.session.add(conversation)
    db.session.commit()
    found.conversation_id = conversation.id
    return found


def _values(channel, external_id="m-1", text="hi") -> dict:
    return {"tenant_id": channel.tenant_id, "conversation_id": channel.conversation_id,
            "channel_id": channel.id, "external_id": external_id, "direction": "inbound", "text": text}


MESSAGES = CreateOnce(Message, ("channel_id", "external_id"))
DIGESTED = CreateOnce(Message, ("channel_id", "external_id"), "text")  # the text stands in for a digest


def test_a_new_key_is_inserted_and_a_repeated_one_replays_the_original(channel_in_use):
    first, replayed = MESSAGES.insert(_values(channel_in_use))
    assert replayed is False
    again, replayed = MESSAGES.insert(_values(channel_in_use, text="other"))
    assert (again.id, again.text, replayed) == (first.id, "hi", True)
    assert MESSAGES.existing(_values(channel_in_use)).id == first.id
    assert MESSAGES.existing(_values(channel_in_use, external_id="m-2")) is None
    assert db.session.scalar(select(func.count()).select_from(Message)) == 1


def test_a_different_request_under_the_same_key_is_a_conflict(channel_in_use):
    DIGESTED.insert(_values(channel_in_use), "d1")
    assert DIGESTED.existing(_values(channel_in_use), "d1").text == "d1"
    for attempt in (lambda: DIGESTED.existing(_values(channel_in_use), "d2"),
                    lambda: DIGESTED.insert(_values(channel_in_use), "d2")):
        with pytest.raises(ApiError) as refused:
            attempt()
        assert (refused.value.code, refused.value.status) == ("idempotency_conflict", 409)


def test_a_slot_not_taken_raises_what_the_refusal_finds(channel_in_use):
    statement = update(Channel).where(Channel.id == channel_in_use.id, Channel.active.is_(False)).values(name="x")
    with pytest.raises(ApiError) as refused:
        take_slot(statement, lambda: ApiError("channel_active", 409, detail=str(uuid.UUID(int=0))))
    assert refused.value.code == "channel_active"
    take_slot(update(Channel).where(Channel.id == channel_in_use.id).values(name="y"), lambda: ApiError("never"))
    assert db.session.scalar(select(Channel.name)) == "y"
