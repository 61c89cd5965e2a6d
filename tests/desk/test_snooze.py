"""Snooze (issue 37): presets and a typed time (Beijing, to the minute, at least 1 minute ahead)
set a conversation pending until then, through the desk's compare-and-swap; the list and the
details say until when; the tick reopens it at that time with an event in the thread and its
resolution timer resumed, a customer message earlier; a change by hand ends the snooze and the tick
leaves a conversation changed meanwhile alone."""
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from core.api import ApiError
from core.db import db
from desk import snooze
from desk.models import Conversation, ConversationEvent
from tests.conftest import csrf_from
from tests.support.desk import HX
from tests.support.service_levels import beijing, levels, policy


def ask(desk, expect: int = 200, seen_status: str | None = None, headers=None, **form):
    """POST the snooze form of the desk's conversation as its page sends it."""
    db.session.expire_all()
    seen = db.session.get(Conversation, desk.conversation_id)
    page = desk.agent.get(f"/workbench/conversations/{seen.id}").get_data(as_text=True)
    response = desk.agent.post(f"/workbench/conversations/{seen.id}/snooze", headers={**HX, **(headers or {})}, data={
        "csrf_token": csrf_from(page), "seen_status": seen_status or seen.status,
        "seen_assignee": str(seen.assignee_member_id or ""), **form})
    assert response.status_code == expect, response.get_data(as_text=True)
    return response


def state(desk) -> tuple[str, datetime | None]:
    db.session.expire_all()
    found = db.session.get(Conversation, desk.conversation_id)
    return found.status, found.snoozed_until


def events(desk) -> list[tuple[str, str | None]]:
    db.session.expire_all()
    return [(e.kind, e.after) for e in db.session.scalars(select(ConversationEvent).where(
        ConversationEvent.conversation_id == desk.conversation_id).order_by(ConversationEvent.created_at))]


@pytest.mark.parametrize(("now", "preset", "until"), [
    ("2026-11-27 10:23", "hour", "2026-11-27 11:23"),
    ("2026-11-27 10:23", "tonight", "2026-11-27 18:00"),
    ("2026-11-27 17:58", "tonight", "2026-11-27 18:00"),
    ("2026-11-27 17:59", "tonight", "2026-11-27 18:00"),  # a minute ahead
    ("2026-11-27 19:00", "tonight", None),
    ("2026-11-27 23:30", "tomorrow", "2026-11-28 09:00"),
    ("2026-11-27 10:23", "monday", "2026-11-30 09:00"),  # a Friday
    ("2026-11-30 08:00", "monday", "2026-12-07 09:00"),  # on a Monday: the next one
    ("2026-11-27 10:23", "someday", None),
])
def test_each_preset_ends_at_its_beijing_time(now, preset, until):
    assert snooze.preset_until(preset, beijing(now)) == (beijing(until) if until else None)


def test_presets_on_offer_leave_out_tonight_once_it_is_not_a_minute_ahead():
    assert snooze.preset_until("tonight", beijing("2026-11-27 17:59") + timedelta(seconds=1)) is None
    assert [p for p, _ in snooze.presets(beijing("2026-11-27 19:00"))] == ["hour", "tomorrow", "monday"]


@pytest.mark.parametrize("typed", ["2026-11-27T10:23", "2026-11-27T10:23:30", "tomorrow", "", "2027-11-28T10:30",
                                   "2026-13-01T09:00", "0001-01-01T00:00"])
def test_a_typed_time_not_a_minute_to_a_year_ahead_is_refused(typed):
    with pytest.raises(ApiError) as refused:
        snooze.read_until(typed, beijing("2026-11-27 10:23"))
    assert refused.value.code == "invalid_snooze"


def test_a_typed_time_is_beijing_time_to_the_minute():
    assert snooze.read_until("2026-11-27T10:24", beijing("2026-11-27 10:23")) == beijing("2026-11-27 10:24")
    assert snooze.read_until("2026-11-27T10:24", beijing("2026-11-27 10:23")).tzinfo == timezone.utc


def test_a_preset_snoozes_and_the_list_and_details_say_until_when(desk, tenant, admin):
    desk.at(beijing("2026-11-27 10:23")).customer()
    body = ask(desk, preset="tonight").get_data(as_text=True)
    assert state(desk) == ("pending", beijing("2026-11-27 18:00"))
    assert "Snoozed until 18:00" in body
    assert events(desk) == [("status", "pending"), ("snooze", "2026-11-27T10:00:00.000000Z")]
    listed = desk.agent.get("/workbench?status=pending&view=all", headers=HX).get_data(as_text=True)
    assert '<span class="snoozed">Snoozed until 18:00</span>' in listed
    ask(desk, preset="monday")  # snoozed again: until the new time
    listed = desk.agent.get("/workbench?status=pending&view=all", headers=HX).get_data(as_text=True)
    assert "Snoozed until 2026-11-30 09:00" in listed
    page = desk.agent.get(f"/workbench/conversations/{desk.conversation_id}").get_data(as_text=True)
    assert "snoozed the conversation until 2026-11-30 09:00 Beijing time" in page


def test_the_menu_offers_the_presets_and_the_field_in_chinese(desk, tenant):
    desk.at(beijing("2026-11-27 10:23")).customer()
    page = desk.agent.get(f"/workbench/conversations/{desk.conversation_id}",
                          headers={"Accept-Language": "zh-CN"}).get_data(as_text=True)
    for words in ("稍后处理", "1 小时", "今晚 18:00", "明天 09:00", "下周一 09:00", "稍后处理至"):
        assert words in page
    body = ask(desk, until="2026-11-28T09:30", headers={"Accept-Language": "zh-CN"}).get_data(as_text=True)
    assert "稍后处理至 2026-11-28 09:30" in body


def test_a_typed_time_snoozes_and_a_bad_one_is_refused_with_nothing_changed(desk):
    desk.at(beijing("2026-11-27 10:23")).customer()
    refused = ask(desk, 422, until="2026-11-27T10:23").get_data(as_text=True)
    assert "at least 1 minute ahead" in refused and state(desk) == ("open", None)
    ask(desk, until="2026-11-27T10:24")
    assert state(desk) == ("pending", beijing("2026-11-27 10:24"))


def test_a_snooze_over_a_change_made_meanwhile_is_refused(desk):
    desk.at(beijing("2026-11-27 10:23")).customer()
    desk.status("resolved")
    refused = ask(desk, 422, seen_status="open", preset="hour").get_data(as_text=True)
    assert "Someone changed this conversation meanwhile" in refused
    assert state(desk) == ("resolved", None)


def test_the_tick_reopens_it_at_its_time_with_an_event_and_resolution_resumed(desk, tenant, admin):
    levels(tenant, admin, policy(resolution=120))
    desk.at(beijing("2026-11-27 10:00")).customer()
    desk.at(beijing("2026-11-27 10:30"))
    ask(desk, preset="hour")
    desk.at(beijing("2026-11-27 11:29"))
    assert snooze.sweep() == 0 and state(desk) == ("pending", beijing("2026-11-27 11:30"))
    desk.at(beijing("2026-11-27 11:30"))
    assert snooze.sweep() == 1
    assert state(desk) == ("open", None)
    assert events(desk)[-1] == ("wake", "tick")
    assert desk.timer("resolution").due_at == beijing("2026-11-27 13:00")  # 30 minutes counted, 90 left
    page = desk.agent.get(f"/workbench/conversations/{desk.conversation_id}").get_data(as_text=True)
    assert "The snooze ended: the conversation is open again" in page
    assert snooze.sweep() == 0


def test_a_customer_message_reopens_it_earlier(desk):
    desk.at(beijing("2026-11-27 10:00")).customer()
    ask(desk, preset="tomorrow")
    desk.at(beijing("2026-11-27 15:00")).customer("Any news?")
    assert state(desk) == ("open", None)
    assert events(desk)[-1] == ("wake", "customer")
    page = desk.agent.get(f"/workbench/conversations/{desk.conversation_id}").get_data(as_text=True)
    assert "The customer wrote: the snooze ended early" in page
    desk.at(beijing("2026-11-28 09:00"))
    assert snooze.sweep() == 0 and events(desk)[-1] == ("wake", "customer")


def test_a_change_by_hand_ends_the_snooze_and_the_tick_leaves_it_alone(desk):
    desk.at(beijing("2026-11-27 10:00")).customer()
    ask(desk, preset="hour")
    desk.status("open")
    assert state(desk) == ("open", None)
    desk.status("pending")
    desk.at(beijing("2026-11-27 12:00"))
    assert snooze.sweep() == 0 and state(desk) == ("pending", None)


def test_a_customer_message_leaves_a_pending_conversation_that_is_not_snoozed_pending(desk):
    desk.at(beijing("2026-11-27 10:00")).customer()
    desk.status("pending")
    desk.at(beijing("2026-11-27 11:00")).customer("Here is the photo you asked for")
    assert state(desk) == ("pending", None)
    assert [kind for kind, _after in events(desk)] == ["status"]
