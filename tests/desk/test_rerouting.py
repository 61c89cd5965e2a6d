"""Taking conversations from members who are not there (issue 35): reassignment when the assignee
stays silent (`no_reply_minutes`: once per customer message, never back to the silent one, notes do
not count, a reply or a manual reassignment stops the timer) and the offline policy (`release_after`,
`release_on_customer_reply`; `keep` keeps)."""
from datetime import timedelta

from sqlalchemy import update

from core.clock import utcnow
from core.db import db
from desk import drain
from desk.conversations import change_by_hand
from desk.models import Conversation, Message
from tests.support.availability import lines, policy_on, present, queue
from tests.support.desk import browser_of, fresh
from tests.support.rule_runs import make_conversations

ZH = {"Accept-Language": "zh-CN"}


def assigned(tenant, member, minutes_ago: float) -> Conversation:
    """A new open conversation assigned to `member` `minutes_ago` minutes ago; committed."""
    [conversation] = make_conversations(tenant, 1, first=len(db.session.query(Conversation).all()) + 1)
    db.session.execute(update(Conversation).where(Conversation.id == conversation.id).values(
        assignee_member_id=member.id, assigned_at=utcnow() - timedelta(minutes=minutes_ago)))
    db.session.commit()
    return conversation


def write(conversation, minutes_ago: float, direction="inbound", author=None, kind="public") -> Message:
    """A message of the conversation `minutes_ago` minutes ago; committed."""
    message = Message(tenant_id=conversation.tenant_id, conversation_id=conversation.id, direction=direction,
                      kind=kind, author_member_id=author.id if author else None, text="…",
                      created_at=utcnow() - timedelta(minutes=minutes_ago))
    db.session.add(message)
    db.session.commit()
    return message


# --- no reply -----------------------------------------------------------------------------------

def test_a_silent_assignee_loses_the_conversation_to_the_least_loaded_other_member(app, tenant, lilei, hanmeimei,
                                                                                  admin):
    policy_on(tenant, no_reply_minutes=5)
    present(lilei), present(hanmeimei)
    conversation = assigned(tenant, lilei, minutes_ago=10)
    write(conversation, minutes_ago=6)
    drain.sweep()
    assert fresh(conversation).assignee_member_id == hanmeimei.id
    assert [kind for kind, _, _ in lines(conversation.id)] == ["reassigned"]
    browser = browser_of(app, admin)
    page = browser.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    assert "Reassigned: no reply from 李雷 in 5 minutes" in page and "now 韩梅梅’s" in page
    page = browser.get(f"/workbench/conversations/{conversation.id}", headers=ZH).get_data(as_text=True)
    assert "已重新分配：李雷 5 分钟内未回复" in page


def test_the_timer_counts_from_the_customer_message_and_from_the_assignment(tenant, lilei, hanmeimei):
    policy_on(tenant, no_reply_minutes=5)
    present(lilei), present(hanmeimei)
    fresh_message = assigned(tenant, lilei, minutes_ago=10)
    write(fresh_message, minutes_ago=4)
    fresh_assignment = assigned(tenant, lilei, minutes_ago=4)
    write(fresh_assignment, minutes_ago=30)
    drain.sweep()
    assert {fresh(c).assignee_member_id for c in (fresh_message, fresh_assignment)} == {lilei.id}


def test_a_public_reply_stops_the_timer_and_a_private_note_does_not(tenant, lilei, hanmeimei):
    policy_on(tenant, no_reply_minutes=5)
    present(lilei), present(hanmeimei)
    answered, noted = assigned(tenant, lilei, 20), assigned(tenant, lilei, 20)
    for conversation in (answered, noted):
        write(conversation, minutes_ago=10)
    write(answered, minutes_ago=8, direction="outbound", author=lilei)
    write(noted, minutes_ago=8, direction="outbound", author=lilei, kind="private_note")
    drain.sweep()
    assert (fresh(answered).assignee_member_id, fresh(noted).assignee_member_id) == (lilei.id, hanmeimei.id)


def test_a_manual_reassignment_restarts_the_timer(tenant, lilei, hanmeimei, admin):
    policy_on(tenant, no_reply_minutes=5)
    present(lilei), present(hanmeimei)
    conversation = assigned(tenant, hanmeimei, 20)
    write(conversation, minutes_ago=10)
    change_by_hand(tenant.id, admin, conversation.id, hanmeimei.id, "open", assignee=lilei.id)
    db.session.commit()
    drain.sweep()
    assert fresh(conversation).assignee_member_id == lilei.id


def test_one_reassignment_per_silence_never_ping_pong(tenant, lilei, hanmeimei):
    policy_on(tenant, no_reply_minutes=5)
    present(lilei), present(hanmeimei)
    conversation = assigned(tenant, lilei, 20)
    write(conversation, minutes_ago=10)
    drain.sweep()
    assert fresh(conversation).assignee_member_id == hanmeimei.id
    db.session.execute(update(Conversation).where(Conversation.id == conversation.id).values(
        assigned_at=utcnow() - timedelta(minutes=20)))  # 韩梅梅 stays silent too
    db.session.commit()
    drain.sweep()
    assert fresh(conversation).assignee_member_id == hanmeimei.id
    assert [kind for kind, _, _ in lines(conversation.id)] == ["reassigned"]


def test_with_nobody_else_available_the_conversation_waits_with_no_reply_then_goes_to_the_next_one(
        tenant, lilei, hanmeimei):
    policy_on(tenant, no_reply_minutes=5)
    present(lilei)
    conversation = assigned(tenant, lilei, 20)
    write(conversation, minutes_ago=10)
    drain.sweep()
    [entry] = queue()
    assert (entry.reason_code, entry.preferred_member_id, entry.expected_assignee_id) == ("no_reply", None, lilei.id)
    assert fresh(conversation).assignee_member_id == lilei.id  # still theirs while nobody else can take it
    drain.sweep()
    assert len(queue()) == 1 and lines(conversation.id) == [("waiting", lilei.id, "no_reply")]
    present(hanmeimei)
    drain.sweep()
    assert fresh(conversation).assignee_member_id == hanmeimei.id and queue() == []


def test_no_reply_minutes_null_never_reassigns(tenant, lilei, hanmeimei):
    policy_on(tenant)
    present(lilei), present(hanmeimei)
    conversation = assigned(tenant, lilei, 600)
    write(conversation, minutes_ago=600)
    drain.sweep()
    assert fresh(conversation).assignee_member_id == lilei.id


# --- offline policy -----------------------------------------------------------------------------

def test_release_after_takes_an_offline_members_conversations_back_after_that_long(app, tenant, lilei, hanmeimei,
                                                                                    admin):
    policy_on(tenant, offline_policy="release_after", release_after_minutes=10, fallback_after_minutes=None)
    present(lilei, seen_at=utcnow() - timedelta(minutes=5))  # offline since 3.5 minutes
    conversation = assigned(tenant, lilei, 60)
    drain.sweep()
    assert fresh(conversation).assignee_member_id == lilei.id
    present(lilei, seen_at=utcnow() - timedelta(minutes=12))  # offline since 10.5 minutes
    present(hanmeimei)
    drain.sweep()
    assert fresh(conversation).assignee_member_id == hanmeimei.id  # released, then drained at once
    assert [kind for kind, _, _ in lines(conversation.id)] == ["released", "drained"]
    page = browser_of(app, admin).get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    assert "Released: 李雷 went offline" in page


def test_release_after_counts_from_the_offline_choice(tenant, lilei):
    policy_on(tenant, offline_policy="release_after", release_after_minutes=10)
    present(lilei, "offline", presence_since=utcnow() - timedelta(minutes=11))  # still polling, chose offline
    conversation = assigned(tenant, lilei, 60)
    drain.sweep()
    assert fresh(conversation).assignee_member_id is None and [e.reason_code for e in queue()] == ["agent_offline"]


def test_release_on_customer_reply_takes_back_only_conversations_the_customer_wrote_to_while_offline(
        tenant, lilei, hanmeimei):
    policy_on(tenant, offline_policy="release_on_customer_reply")
    present(lilei, seen_at=utcnow() - timedelta(minutes=30))  # offline since 28.5 minutes
    written, quiet = assigned(tenant, lilei, 60), assigned(tenant, lilei, 60)
    write(written, minutes_ago=1)
    write(quiet, minutes_ago=40)  # before they went offline
    present(hanmeimei)
    drain.sweep()
    assert (fresh(written).assignee_member_id, fresh(quiet).assignee_member_id) == (hanmeimei.id, lilei.id)


def test_keep_keeps_an_offline_members_conversations(tenant, lilei):
    policy_on(tenant)
    conversation = assigned(tenant, lilei, 600)
    write(conversation, minutes_ago=1)
    drain.sweep()
    assert fresh(conversation).assignee_member_id == lilei.id and queue() == []


def test_a_member_back_online_is_not_released(tenant, lilei):
    policy_on(tenant, offline_policy="release_after", release_after_minutes=1)
    present(lilei, seen_at=utcnow() - timedelta(minutes=10))
    conversation = assigned(tenant, lilei, 60)
    board = drain.seats(tenant.id, utcnow(), 8)
    present(lilei)  # came back between the read and the release
    assert drain.release(tenant.id, conversation.id, lilei.id, utcnow()) is False
    assert board[lilei.id].offline_since is not None and fresh(conversation).assignee_member_id == lilei.id
