"""Draining the waiting queue (issue 35): first come first served, to the preferred member once
available, after `fallback_after_minutes` to the least loaded available agent or supervisor (ties to
the one idle longest), each an `applied` receipt through the compare-and-swap; racing drains give one
assignment; a conversation assigned by hand or otherwise changed leaves the queue."""
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

from sqlalchemy import select, update

from core.clock import utcnow
from core.db import db
from desk import drain, waiting
from desk.conversations import change_by_hand
from desk.models import AssignmentReceipt, Conversation
from jobs import wiring
from tests.conftest import seat
from tests.support.availability import lines, policy_on, present, queue
from tests.support.desk import browser_of, fresh
from tests.support.rule_runs import make_conversations

ZH = {"Accept-Language": "zh-CN"}


def wait_for(tenant, conversation, member, reason="agent_offline", minutes_ago: float = 0) -> None:
    """The conversation joins the queue for `member`, `minutes_ago` minutes ago; committed."""
    waiting.join(tenant.id, conversation.id, member.id if member else None, reason, None,
                 utcnow() - timedelta(minutes=minutes_ago))
    db.session.commit()


def holding(tenant, member, count: int, start: int = 100) -> None:
    """`member` holds `count` more open conversations; committed."""
    for conversation in make_conversations(tenant, count, first=start):
        conversation.assignee_member_id = member.id
    db.session.commit()


def receipts() -> list[AssignmentReceipt]:
    db.session.expire_all()
    return list(db.session.scalars(select(AssignmentReceipt)))


def test_the_preferred_member_coming_online_gets_the_conversation_at_the_next_sweep(app, tenant, lilei, admin):
    policy_on(tenant, fallback_after_minutes=None)
    [conversation] = make_conversations(tenant, 1)
    wait_for(tenant, conversation, lilei)
    assert drain.sweep() == 0 and len(queue()) == 1  # still offline: it waits
    present(lilei)
    assert drain.sweep() == 1
    assert fresh(conversation).assignee_member_id == lilei.id and queue() == []
    [receipt] = receipts()
    assert (receipt.status, receipt.target_member_id) == ("applied", lilei.id)
    assert receipt.command_key.startswith(waiting.QUEUE_KEY_PREFIX)
    assert lines(conversation.id) == [("waiting", lilei.id, "agent_offline"), ("drained", lilei.id, None)]
    browser = browser_of(app, admin)
    page = browser.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    assert "Waiting: 李雷 is offline" in page and "Assigned from the waiting queue to 李雷 (0 of 8 open)" in page
    assert "Automation</strong> assigned" not in page  # the queue's receipt is told by its own line
    page = browser.get(f"/workbench/conversations/{conversation.id}", headers=ZH).get_data(as_text=True)
    assert "等待中：李雷 离线" in page and "已从等待队列分配给 李雷（0 / 8 个进行中）" in page


def test_after_fallback_minutes_the_least_loaded_available_agent_gets_it(app, tenant, lilei, hanmeimei, admin):
    policy_on(tenant, fallback_after_minutes=5)
    absent, [conversation] = seat(tenant, "agent"), make_conversations(tenant, 1)
    present(lilei), present(hanmeimei)
    holding(tenant, lilei, 3)
    holding(tenant, hanmeimei, 2, start=200)
    wait_for(tenant, conversation, absent, minutes_ago=4)
    assert drain.sweep() == 0  # four minutes: it still waits for its preferred member
    db.session.execute(update(waiting.WaitingConversation).values(waiting_since=utcnow() - timedelta(minutes=5)))
    db.session.commit()
    assert drain.sweep() == 1
    assert fresh(conversation).assignee_member_id == hanmeimei.id
    page = browser_of(app, admin).get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    assert "Assigned from the waiting queue to 韩梅梅 (least loaded: 2 of 8 open)" in page


def test_load_is_open_count_over_capacity(tenant, lilei, hanmeimei):
    policy_on(tenant, fallback_after_minutes=0)
    present(lilei, capacity=10), present(hanmeimei, capacity=2)
    holding(tenant, lilei, 4)  # 0.4
    holding(tenant, hanmeimei, 1, start=200)  # 0.5
    [conversation] = make_conversations(tenant, 1)
    wait_for(tenant, conversation, None)
    assert drain.sweep() == 1 and fresh(conversation).assignee_member_id == lilei.id


def test_equal_loads_go_to_the_member_the_queue_assigned_longest_ago(tenant, lilei, hanmeimei):
    policy_on(tenant, fallback_after_minutes=0)
    present(lilei, last_routed_at=utcnow() - timedelta(minutes=1))
    present(hanmeimei, last_routed_at=utcnow() - timedelta(minutes=30))
    first, second = make_conversations(tenant, 2)
    wait_for(tenant, first, None, minutes_ago=2)
    wait_for(tenant, second, None, minutes_ago=1)
    assert drain.sweep() == 2
    # The first to 韩梅梅 (idle longest); then both hold one and 李雷 is now the one idle longest.
    assert (fresh(first).assignee_member_id, fresh(second).assignee_member_id) == (hanmeimei.id, lilei.id)


def test_the_fallback_never_picks_an_administrator_and_null_never_falls_back(tenant, lilei, admin):
    present(admin)
    [conversation] = make_conversations(tenant, 1)
    policy_on(tenant, fallback_after_minutes=0)
    wait_for(tenant, conversation, lilei, minutes_ago=60)
    assert drain.sweep() == 0  # the only one available is an administrator
    policy_on(tenant, fallback_after_minutes=None)
    present(seat(tenant, "supervisor"))
    assert drain.sweep() == 0 and len(queue()) == 1  # null: it waits for 李雷 however long


def test_the_queue_drains_first_come_first_served(tenant, lilei):
    policy_on(tenant, fallback_after_minutes=None)
    present(lilei, capacity=1)
    older, newer = make_conversations(tenant, 2)
    wait_for(tenant, newer, lilei, minutes_ago=1)
    wait_for(tenant, older, lilei, minutes_ago=2)
    assert drain.sweep() == 1
    assert (fresh(older).assignee_member_id, fresh(newer).assignee_member_id) == (lilei.id, None)
    [still] = queue()
    assert still.conversation_id == newer.id


def test_a_resolve_frees_capacity_and_the_next_sweep_uses_it(tenant, lilei, admin):
    policy_on(tenant, fallback_after_minutes=None)
    present(lilei, capacity=1)
    held, waiting_one = make_conversations(tenant, 2)
    held.assignee_member_id = lilei.id
    db.session.commit()
    wait_for(tenant, waiting_one, lilei, "agent_at_capacity")
    assert drain.sweep() == 0
    change_by_hand(tenant.id, admin, held.id, lilei.id, "open", status="resolved")
    db.session.commit()
    assert drain.sweep() == 1 and fresh(waiting_one).assignee_member_id == lilei.id


def test_an_assignment_by_hand_takes_the_conversation_out_of_the_queue(tenant, lilei, hanmeimei, admin):
    policy_on(tenant)
    [conversation] = make_conversations(tenant, 1)
    wait_for(tenant, conversation, lilei)
    change_by_hand(tenant.id, admin, conversation.id, None, "open", assignee=hanmeimei.id)
    db.session.commit()
    assert queue() == []


def test_a_conversation_changed_otherwise_leaves_the_queue_at_the_drain_unassigned(tenant, lilei, hanmeimei):
    policy_on(tenant)
    present(lilei)
    first, second = make_conversations(tenant, 2)
    wait_for(tenant, first, lilei)
    wait_for(tenant, second, lilei)
    db.session.execute(update(Conversation).where(Conversation.id == first.id).values(assignee_member_id=hanmeimei.id))
    db.session.execute(update(Conversation).where(Conversation.id == second.id).values(status="pending"))
    db.session.commit()
    assert drain.sweep() == 0 and queue() == []
    assert (fresh(first).assignee_member_id, fresh(second).assignee_member_id) == (hanmeimei.id, None)


def test_with_the_policy_off_the_queue_is_left_as_it_is(tenant, lilei):
    [conversation] = make_conversations(tenant, 1)
    wait_for(tenant, conversation, lilei)
    present(lilei)
    assert drain.sweep() == 0 and len(queue()) == 1
    assert fresh(conversation).assignee_member_id is None


def test_a_drain_never_assigns_another_tenants_member(tenant, other_tenant, lilei):
    policy_on(tenant, fallback_after_minutes=0)
    present(seat(other_tenant, "agent"))
    [conversation] = make_conversations(tenant, 1)
    wait_for(tenant, conversation, lilei)
    assert drain.sweep() == 0 and fresh(conversation).assignee_member_id is None


def test_the_sweep_is_a_tick_handler():
    assert "desk.drain.sweep" in wiring.TICK_HANDLERS


def test_twenty_drains_two_sweeps_and_a_manual_assignment_racing_give_one_assignment(app, tenant, lilei, hanmeimei,
                                                                                     admin):
    policy_on(tenant, fallback_after_minutes=0)
    present(lilei), present(hanmeimei)
    [conversation] = make_conversations(tenant, 1)
    wait_for(tenant, conversation, lilei)
    [entry] = queue()
    tenant_id, admin_id, start = tenant.id, admin.id, threading.Barrier(23)

    def one(n: int) -> str:
        with app.app_context():
            start.wait(30)
            if n < 20:
                return drain.assign_from_queue(tenant_id, entry.conversation_id, entry.waiting_since, None,
                                               lilei.id, "preferred", utcnow())
            if n < 22:
                return str(drain.sweep())
            try:
                change_by_hand(tenant_id, db.session.get(type(admin), admin_id), entry.conversation_id, None, "open",
                               assignee=hanmeimei.id)
                db.session.commit()
                return "by hand"
            except Exception as refused:  # conversation_changed: a drain came first
                db.session.rollback()
                return getattr(refused, "code", repr(refused))

    with ThreadPoolExecutor(23) as pool:
        outcomes = list(pool.map(one, range(23)))
    applied = [r for r in receipts() if r.status == "applied"]
    assignee = fresh(conversation).assignee_member_id
    if "by hand" in outcomes:
        assert assignee == hanmeimei.id and applied == [] and outcomes.count("applied") == 0
    else:
        assert outcomes[22] == "conversation_changed"
        assert len(applied) == 1 and assignee == applied[0].target_member_id
        assert outcomes[:20].count("applied") + sum(int(n) for n in outcomes[20:22]) == 1
    assert queue() == []
