"""Every write to a conversation moves `updated_at`, the microsecond the rules' snapshots compare."""
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select, update

from core import clock
from core.db import db
from desk.demo import seed_demo
from desk.models import Conversation, Message
from tests.support.channels import payload, send
from tests.support.desk import stop_the_clock

ONE_MICROSECOND = timedelta(microseconds=1)


@pytest.fixture
def stopped_clock(monkeypatch, conversation) -> datetime:
    """The clock stands still at the instant `conversation` was created, as a coarse clock would,
    or several writes within one tick."""
    return stop_the_clock(monkeypatch, conversation.updated_at)


def stored_update_time(conversation_id: uuid.UUID) -> datetime:
    """`updated_at` as the database has it now, read past the session's identity map."""
    return db.session.execute(select(Conversation.updated_at).where(Conversation.id == conversation_id)
                              .execution_options(populate_existing=True)).scalar_one()


def test_writes_of_the_unit_of_work_within_one_clock_tick_leave_increasing_update_times(
        conversation, agent, stopped_clock):
    times = [conversation.updated_at]
    for change in ({"status": "pending"}, {"assignee_member_id": agent.id}, {"bot_active": True},
                   {"status": "open", "assignee_member_id": None}):
        for name, value in change.items():
            setattr(conversation, name, value)
        db.session.commit()
        times.append(stored_update_time(conversation.id))
    assert times == [stopped_clock + n * ONE_MICROSECOND for n in range(5)]


def test_a_bulk_update_moves_the_update_time_so_an_old_snapshot_no_longer_matches(
        conversation, agent, stopped_clock):
    snapshot = conversation.updated_at

    def assign_if_unchanged(member_id) -> int:
        """The atomic adapter's compare-and-swap: reassign only if nothing changed since the snapshot."""
        return db.session.execute(update(Conversation).where(
            Conversation.id == conversation.id, Conversation.updated_at == snapshot)
            .values(assignee_member_id=member_id)).rowcount

    assert assign_if_unchanged(agent.id) == 1
    assert conversation.updated_at == snapshot + ONE_MICROSECOND  # the session sees it at once
    db.session.commit()
    assert stored_update_time(conversation.id) == snapshot + ONE_MICROSECOND
    assert assign_if_unchanged(None) == 0  # a second writer with the same snapshot overwrites nothing
    db.session.commit()
    assert db.session.get(Conversation, conversation.id).assignee_member_id == agent.id


def test_a_write_from_a_host_whose_clock_is_behind_still_moves_it_forward(conversation):
    ahead = clock.utcnow() + timedelta(minutes=5)  # written last by a host whose clock runs ahead
    db.session.execute(update(Conversation).values(updated_at=ahead))
    db.session.commit()
    conversation.status = "pending"
    db.session.commit()
    assert stored_update_time(conversation.id) == ahead + ONE_MICROSECOND


@pytest.mark.parametrize("previous,expected", [
    (datetime(2026, 11, 22, 21, 35, 59, 999999), datetime(2026, 11, 22, 21, 36, 0, 0)),
    (datetime(2026, 12, 31, 23, 59, 59, 999999), datetime(2027, 1, 1, 0, 0, 0, 0)),
    (datetime(2028, 2, 28, 23, 59, 59, 999999), datetime(2028, 2, 29, 0, 0, 0, 0)),
    (datetime(2026, 6, 1, 8, 0, 0, 0), datetime(2026, 6, 1, 8, 0, 0, 1)),
], ids=["minute", "year", "leap day", "whole second"])
def test_the_added_microsecond_carries_into_seconds_days_and_years(conversation, monkeypatch,
                                                                    previous, expected):
    previous, expected = (moment.replace(tzinfo=timezone.utc) for moment in (previous, expected))
    db.session.execute(update(Conversation).values(updated_at=previous))
    db.session.commit()
    stop_the_clock(monkeypatch, previous - timedelta(days=1))  # behind the stored time
    db.session.execute(update(Conversation).values(status="pending"))
    db.session.commit()
    assert stored_update_time(conversation.id) == expected


def test_a_write_with_a_later_clock_takes_the_clock_time(conversation):
    before = conversation.updated_at
    conversation.status = "resolved"
    db.session.commit()
    after = stored_update_time(conversation.id)
    assert before < after <= clock.utcnow()


def test_each_inbound_message_moves_its_conversation(client, channel):
    data = send(client, channel, payload()).get_json()["data"]
    conversation_id = uuid.UUID(data["conversation_id"])
    first = stored_update_time(conversation_id)
    send(client, channel, payload(message_id="m-2"))
    second = stored_update_time(conversation_id)
    db.session.execute(update(Conversation).values(status="resolved"))
    db.session.commit()
    resolved = stored_update_time(conversation_id)
    send(client, channel, payload(message_id="m-3"))  # reopens it
    assert first < second < resolved < stored_update_time(conversation_id)


def test_an_inbound_message_never_moves_its_conversation_backwards(client, channel):
    conversation_id = uuid.UUID(send(client, channel, payload()).get_json()["data"]["conversation_id"])
    ahead = clock.utcnow() + timedelta(minutes=5)  # written last by a host whose clock runs ahead
    db.session.execute(update(Conversation).values(updated_at=ahead))
    db.session.commit()
    send(client, channel, payload(message_id="m-2"))
    assert stored_update_time(conversation_id) == ahead + ONE_MICROSECOND


def test_the_demo_seed_writes_each_conversation_once_at_its_last_message(app):
    seed_demo()
    db.session.commit()
    last_message = dict(db.session.execute(
        select(Message.conversation_id, Message.created_at).order_by(Message.created_at)).all())
    conversations = list(db.session.scalars(select(Conversation)))
    assert len(conversations) == 80
    for found in conversations:
        assert found.created_at < found.updated_at == found.last_activity_at == last_message[found.id]
