"""Merging conversations (issue 37): the source's messages move to the target in time order, each
marked with its channel; the source is resolved and shows only a link; a later message of the
source's customer on the source's channel goes to the target; both threads record the merge with
its actor and the audit log has it; agents merge only their own two; two customers' conversations
need a confirmation naming the customer the target keeps; a rule command in flight refuses it; and a
merge racing inbound messages loses and duplicates nothing (SQLite and PostgreSQL alike)."""
import re
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select, update

from core.audit import AuditEntry
from core.db import db
from desk.channels import create_channel
from desk.conversations import queue_commands, snapshot
from desk.models import Conversation, ConversationEvent, Customer, Message
from desk.service_level_models import ServiceLevelTimer
from tests.conftest import csrf_from, seat
from tests.support.channels import another_channel, payload, send
from tests.support.desk import HX, browser_of
from tests.support.service_levels import levels, policy


def inbound(client, channel, text: str, external_id: str = "c-1", name: str = "Wang Fang") -> uuid.UUID:
    response = send(client, channel, payload(message_id=uuid.uuid4().hex, external_id=external_id, text=text,
                                             name=name))
    assert response.status_code == 201, response.get_json()
    return uuid.UUID(response.get_json()["data"]["conversation_id"])


def merge(browser, source_id, target_id, confirm: str = "", expect: int = 204, headers=None):
    page = browser.get(f"/workbench/conversations/{source_id}").get_data(as_text=True)
    db.session.expire_all()
    seen = db.session.get(Conversation, source_id)
    response = browser.post(f"/workbench/conversations/{source_id}/merge", headers={**HX, **(headers or {})}, data={
        "csrf_token": csrf_from(page), "target": str(target_id), "seen_status": seen.status, "confirm": confirm})
    assert response.status_code == expect, response.get_data(as_text=True)
    return response


def texts(conversation_id) -> list[str]:
    db.session.expire_all()
    return list(db.session.scalars(select(Message.text).where(Message.conversation_id == conversation_id)
                                   .order_by(Message.created_at)))


def test_a_supervisor_merges_and_the_messages_move_in_time_order_with_their_channels(app, client, tenant, channel):
    wechat = another_channel(tenant)
    source = inbound(client, channel, "Order 42 is late")
    target = inbound(client, wechat, "Hello from WeChat")
    inbound(client, channel, "Still waiting")
    supervisor = seat(tenant, "supervisor")
    browser = browser_of(app, supervisor)
    answer = merge(browser, source, target)
    assert answer.headers["HX-Redirect"] == f"/workbench/conversations/{target}"
    assert texts(target) == ["Order 42 is late", "Hello from WeChat", "Still waiting"]
    assert texts(source) == []
    merged = db.session.get(Conversation, source)
    assert (merged.status, merged.merged_into_id) == ("resolved", target)
    page = browser.get(f"/workbench/conversations/{target}").get_data(as_text=True)
    assert "Website chat · " in page and "WeChat · " in page
    assert f'merged <a href="/workbench/conversations/{source}">another conversation</a> into this one' in page
    old = browser.get(f"/workbench/conversations/{source}").get_data(as_text=True)
    assert f'merged into <a href="/workbench/conversations/{target}">another conversation</a>: its messages' in old
    assert 'id="composer"' not in old and "Order 42 is late" not in old
    events = {(e.conversation_id, e.kind, e.actor_member_id) for e in db.session.scalars(select(ConversationEvent))}
    assert {(source, "merged_into", supervisor.id), (target, "merged_from", supervisor.id)} <= events
    [entry] = db.session.scalars(select(AuditEntry).where(AuditEntry.action == "conversation.merged"))
    assert (entry.actor_id, entry.target, entry.summary["into"], entry.summary["messages"]) == (
        supervisor.user_id, f"conversation:{source}", str(target), 2)


def test_a_later_message_on_the_sources_channel_goes_to_the_target(app, client, tenant, channel):
    wechat = another_channel(tenant)
    source, target = inbound(client, channel, "First"), inbound(client, wechat, "Second")
    merge(browser_of(app, seat(tenant, "admin")), source, target)
    assert inbound(client, channel, "Third") == target
    assert texts(target) == ["First", "Second", "Third"]
    merged = db.session.get(Conversation, source)
    assert merged.status == "resolved"


def test_an_agent_merges_only_two_conversations_that_are_both_theirs(app, client, tenant, channel):
    wechat = another_channel(tenant)
    source, target = inbound(client, channel, "First"), inbound(client, wechat, "Second")
    agent = seat(tenant, "agent")
    browser = browser_of(app, agent)
    db.session.get(Conversation, source).assignee_member_id = agent.id
    db.session.commit()
    refused = merge(browser, source, target, expect=422).get_data(as_text=True)
    assert "Agents merge only two conversations that are both theirs" in refused and texts(source) == ["First"]
    db.session.get(Conversation, target).assignee_member_id = agent.id
    db.session.commit()
    merge(browser, source, target)
    assert texts(target) == ["First", "Second"]


def test_two_customers_conversations_merge_only_once_confirmed_and_the_customers_stay(app, client, tenant, channel):
    source = inbound(client, channel, "From Wang", external_id="c-1", name="Wang Fang")
    target = inbound(client, channel, "From Li", external_id="c-2", name="Li Lei")
    browser = browser_of(app, seat(tenant, "supervisor"))
    asked = merge(browser, source, target, expect=422).get_data(as_text=True)
    assert "The merged conversation keeps Li Lei" in asked
    assert f'name="confirm" value="{target}"' in asked and texts(source) == ["From Wang"]
    merge(browser, source, target, confirm=str(uuid.uuid4()), expect=422)  # a confirmation of another target
    merge(browser, source, target, confirm=str(target))
    assert texts(target) == ["From Wang", "From Li"]
    assert sorted(db.session.scalars(select(Customer.name))) == ["Li Lei", "Wang Fang"]
    zh = merge(browser, target, inbound(client, channel, "again", external_id="c-3", name="张伟"), expect=422,
               headers={"Accept-Language": "zh-CN"}).get_data(as_text=True)
    assert "合并后的会话保留张伟" in zh


def test_a_rule_command_in_flight_refuses_the_merge(app, client, tenant, channel):
    wechat = another_channel(tenant)
    source, target = inbound(client, channel, "First"), inbound(client, wechat, "Second")
    agent = seat(tenant, "agent")
    queue_commands(tenant.id, "rule-run-1", [(target, agent.id, snapshot(db.session.get(Conversation, target)))])
    db.session.commit()
    refused = merge(browser_of(app, seat(tenant, "supervisor")), source, target, expect=422).get_data(as_text=True)
    assert "An automation rule is changing one of these conversations" in refused
    assert texts(source) == ["First"]


def test_merging_into_itself_a_merged_or_a_foreign_conversation_is_refused(app, client, tenant, other_tenant,
                                                                           channel):
    wechat = another_channel(tenant)
    source, target = inbound(client, channel, "First"), inbound(client, wechat, "Second")
    browser = browser_of(app, seat(tenant, "supervisor"))
    assert "Choose another conversation" in merge(browser, source, source, expect=422).get_data(as_text=True)
    foreign_channel = create_channel(other_tenant.id, "Theirs")
    db.session.commit()
    foreign = inbound(client, foreign_channel, "Not yours")
    assert "not in this workspace" in merge(browser, source, foreign, expect=422).get_data(as_text=True)
    merge(browser, source, target)
    assert "merged already" in merge(browser, target, source, expect=422).get_data(as_text=True)
    assert texts(foreign) == ["Not yours"]


def test_the_choices_put_the_customers_other_conversations_first_and_search_names_and_ids(
        app, client, tenant, other_tenant, channel):
    wechat = another_channel(tenant)
    source, own = inbound(client, channel, "First"), inbound(client, wechat, "Second")
    stranger = inbound(client, channel, "Hi", external_id="c-9", name="Zhao Min")
    browser = browser_of(app, seat(tenant, "supervisor"))
    page = browser.get(f"/workbench/conversations/{source}").get_data(as_text=True)
    assert 'id="merge-into"' not in page  # loaded when the dialog opens
    page = browser.get(f"/workbench/conversations/{source}/merge", headers=HX).get_data(as_text=True)
    assert re.search(r'<select id="merge-into" name="target" required><option value="' + str(own), page)
    assert str(stranger) not in page.split('id="merge-into"', 1)[1].split("</select>", 1)[0]
    found = browser.get(f"/workbench/conversations/{source}/merge-candidates", query_string={"q": "zhao"})
    assert str(stranger) in found.get_data(as_text=True) and str(own) not in found.get_data(as_text=True)
    by_id = browser.get(f"/workbench/conversations/{source}/merge-candidates", query_string={"q": str(own)})
    assert str(own) in by_id.get_data(as_text=True)
    for query in ("100%_", "a\x00b"):
        none = browser.get(f"/workbench/conversations/{source}/merge-candidates", query_string={"q": query})
        assert none.status_code == 200 and "No conversation found" in none.get_data(as_text=True)


def test_a_merge_racing_inbound_messages_loses_and_duplicates_nothing(app, client, tenant, channel):
    wechat = another_channel(tenant)
    source, target = inbound(client, channel, "m-0"), inbound(client, wechat, "w-0")
    supervisor = seat(tenant, "supervisor")
    browser = browser_of(app, supervisor)
    page = browser.get(f"/workbench/conversations/{source}").get_data(as_text=True)
    sent = [f"m-{n}" for n in range(1, 13)]
    start = threading.Barrier(5)

    def customer(batch: list[str]) -> list[uuid.UUID]:
        with app.app_context():
            start.wait(30)
            return [inbound(app.test_client(), channel, text) for text in batch]

    def merging() -> int:
        with app.app_context():
            start.wait(30)
            return browser.post(f"/workbench/conversations/{source}/merge", headers=HX, data={
                "csrf_token": csrf_from(page), "target": str(target), "seen_status": "open"}).status_code

    with ThreadPoolExecutor(5) as pool:
        deliveries = [pool.submit(customer, sent[n::4]) for n in range(4)]
        merged = pool.submit(merging)
        landed = [conversation for future in deliveries for conversation in future.result()]
        assert merged.result() == 204
    assert set(landed) <= {source, target}
    db.session.expire_all()
    assert texts(source) == []
    assert sorted(texts(target)) == sorted(["m-0", "w-0", *sent])  # every message once, all in the target
    assert db.session.scalar(select(func.count()).select_from(Message)) == 14
    assert db.session.get(Conversation, source).status == "resolved"


def test_the_sources_running_timers_end_closed_and_the_targets_carry_on(app, client, tenant, admin, channel):
    levels(tenant, admin, policy(first=30, resolution=600))
    wechat = another_channel(tenant)
    source, target = inbound(client, channel, "First"), inbound(client, wechat, "Second")
    merge(browser_of(app, seat(tenant, "supervisor")), source, target)
    db.session.expire_all()
    timers = {(t.conversation_id, t.kind): (t.stopped_at is not None, t.outcome)
              for t in db.session.scalars(select(ServiceLevelTimer))}
    assert timers == {(source, "first_response"): (True, "closed"), (source, "resolution"): (True, "closed"),
                      (target, "first_response"): (False, None), (target, "resolution"): (False, None)}


def test_merging_a_into_b_while_b_goes_into_a_ends_with_one_merge(app, client, tenant, channel):
    wechat = another_channel(tenant)
    first, second = inbound(client, channel, "On the web"), inbound(client, wechat, "On WeChat")
    browser = browser_of(app, seat(tenant, "supervisor"))
    page = browser.get(f"/workbench/conversations/{first}").get_data(as_text=True)
    start = threading.Barrier(2)

    def merging(source, target) -> int:
        with app.app_context():
            start.wait(30)
            return browser.post(f"/workbench/conversations/{source}/merge", headers=HX, data={
                "csrf_token": csrf_from(page), "target": str(target), "seen_status": "open"}).status_code

    with ThreadPoolExecutor(2) as pool:
        answers = sorted(pool.map(merging, (first, second), (second, first)))
    assert answers == [204, 422]
    db.session.expire_all()
    pointers = {c.id: c.merged_into_id for c in db.session.scalars(select(Conversation))}
    assert sorted(map(str, pointers.values())) == sorted([str(None), str(first if pointers[second] else second)])
    kept = first if pointers[first] is None else second
    assert sorted(texts(kept)) == ["On WeChat", "On the web"]
    assert inbound(client, channel, "Later") == inbound(client, wechat, "And later") == kept


def test_a_merged_conversation_takes_no_reply_and_no_change_by_hand(app, client, tenant, channel):
    wechat = another_channel(tenant)
    source, target = inbound(client, channel, "First"), inbound(client, wechat, "Second")
    supervisor = browser_of(app, seat(tenant, "supervisor"))
    page = supervisor.get(f"/workbench/conversations/{source}").get_data(as_text=True)
    merge(supervisor, source, target)
    answer = supervisor.post(f"/workbench/conversations/{source}/messages", headers=HX, data={
        "csrf_token": csrf_from(page), "text": "Too late", "client_message_id": str(uuid.uuid4())})
    assert answer.status_code == 422 and "merged into another one: reply there" in answer.get_data(as_text=True)
    changed = supervisor.post(f"/workbench/conversations/{source}/status", headers=HX, data={
        "csrf_token": csrf_from(page), "seen_assignee": "", "seen_status": "resolved", "status": "open"})
    assert changed.status_code == 422
    db.session.expire_all()
    assert db.session.get(Conversation, source).status == "resolved" and "Too late" not in texts(target)
    details = supervisor.get(f"/workbench/conversations/{source}").get_data(as_text=True)
    assert "Mark open" not in details and "Snooze" not in details


@pytest.mark.parametrize("seen_status", ["open\x00", "closed", ""])
def test_a_seen_status_that_is_not_a_status_is_refused_without_merging(app, client, tenant, channel, seen_status):
    source, target = inbound(client, channel, "First"), inbound(client, another_channel(tenant), "Second")
    supervisor = browser_of(app, seat(tenant, "supervisor"))
    page = supervisor.get(f"/workbench/conversations/{source}").get_data(as_text=True)
    answer = supervisor.post(f"/workbench/conversations/{source}/merge", headers=HX, data={
        "csrf_token": csrf_from(page), "target": str(target), "seen_status": seen_status})
    assert answer.status_code == 422 and "Choose the conversation to merge into." in answer.get_data(as_text=True)
    db.session.expire_all()
    assert db.session.get(Conversation, source).merged_into_id is None


def test_a_chain_of_merges_is_followed_and_merged_conversations_are_never_a_choice(app, client, tenant, channel):
    wechat, email = another_channel(tenant), another_channel(tenant, "E-mail")
    first, second = inbound(client, channel, "On the web"), inbound(client, wechat, "On WeChat")
    third = inbound(client, email, "By e-mail")
    supervisor = seat(tenant, "supervisor")
    browser = browser_of(app, supervisor)
    db.session.execute(update(Conversation).where(Conversation.id == third).values(assignee_member_id=supervisor.id))
    db.session.commit()
    merge(browser, first, second)
    merge(browser, second, third)
    assert inbound(client, channel, "Web again") == third  # the web conversation → WeChat's → e-mail's
    assert sorted(texts(third)) == ["By e-mail", "On WeChat", "On the web", "Web again"]
    kept = db.session.get(Conversation, third)
    assert (kept.assignee_member_id, kept.channel_id, kept.status) == (supervisor.id, email[0].id, "open")
    choices = browser.get(f"/workbench/conversations/{third}/merge", headers=HX).get_data(as_text=True)
    assert str(first) not in choices and str(second) not in choices


def test_a_source_changed_since_the_dialog_opened_is_not_merged(app, client, tenant, channel):
    source, target = inbound(client, channel, "First"), inbound(client, another_channel(tenant), "Second")
    supervisor = browser_of(app, seat(tenant, "supervisor"))
    page = supervisor.get(f"/workbench/conversations/{source}").get_data(as_text=True)
    answer = supervisor.post(f"/workbench/conversations/{source}/merge", headers=HX, data={
        "csrf_token": csrf_from(page), "target": str(target), "seen_status": "pending"})
    assert answer.status_code == 422 and "Someone changed this conversation meanwhile" in answer.get_data(as_text=True)
    assert texts(source) == ["First"]
