"""Snooze and merge (issue 37) in Chromium, by keyboard and pointer: in English at a desk an agent
snoozes a conversation for an hour from the "Snooze" menu and then until a typed time, and the list
says until when; in Chinese on a phone a supervisor merges a customer's conversation into their
other one through the "合并会话" dialog and lands on the merged thread, no sideways scroll, axe clean."""
import re
import uuid
from datetime import timedelta

from playwright.sync_api import expect

from core.clock import to_beijing, utcnow
from core.db import db
from desk.models import Conversation
from tests.conftest import seat
from tests.support.browser import PHONE, axe_violations, log_in
from tests.support.channels import another_channel, payload, send


def inbound(client, channel, text: str) -> uuid.UUID:
    response = send(client, channel, payload(message_id=text, text=text))
    assert response.status_code == 201
    return uuid.UUID(response.get_json()["data"]["conversation_id"])


def test_an_agent_snoozes_from_the_menu_and_by_a_typed_time(page, live_server, client, channel, agent):
    conversation = inbound(client, channel, "Call me back tomorrow")
    log_in(page, live_server, agent.user.email)
    page.goto(f"{live_server}/workbench/conversations/{conversation}")
    page.get_by_role("button", name="Snooze", exact=True).click()
    menu = page.get_by_role("group", name="Snooze")
    expect(menu).to_be_visible()
    menu.get_by_role("button", name="1 hour").click()
    expected = to_beijing(utcnow() + timedelta(hours=1)).strftime("%H:%M")
    expect(page.locator("#customer-details .snoozed")).to_have_text(re.compile(r"Snoozed until \d\d:\d\d"))
    assert page.locator("#customer-details .snoozed").inner_text() in {
        f"Snoozed until {expected}", f"Snoozed until {to_beijing(utcnow() + timedelta(hours=1, minutes=1)):%H:%M}",
        f"Snoozed until {to_beijing(utcnow() + timedelta(hours=1)):%Y-%m-%d %H:%M}"}
    page.get_by_role("button", name="Snooze", exact=True).click()
    later = to_beijing(utcnow() + timedelta(days=2)).replace(hour=10, minute=30)
    page.get_by_label("Snooze until").fill(later.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_label("Snooze until").press("Enter")
    expect(page.locator("#customer-details .snoozed")).to_have_text(f"Snoozed until {later:%Y-%m-%d %H:%M}")
    page.goto(f"{live_server}/workbench?status=pending&view=all")
    expect(page.get_by_role("link", name=re.compile("Call me back tomorrow"))).to_contain_text(
        f"Snoozed until {later:%Y-%m-%d %H:%M}")
    db.session.expire_all()
    assert db.session.get(Conversation, conversation).status == "pending"


def test_a_supervisor_merges_on_a_phone_in_chinese(browser, live_server, client, tenant, channel):
    wechat = another_channel(tenant)
    source = inbound(client, channel, "订单 42 还没到")
    target = inbound(client, wechat, "微信上再问一次")
    supervisor = seat(tenant, "supervisor")
    phone = browser.new_context(locale="zh-CN", viewport=PHONE).new_page()
    log_in(phone, live_server, supervisor.user.email)
    phone.goto(f"{live_server}/workbench/conversations/{source}")
    phone.get_by_role("tab", name="客户").click()
    phone.get_by_role("button", name="合并…").click()
    dialog = phone.get_by_role("dialog", name="合并会话")
    expect(dialog).to_be_visible()
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert axe_violations(phone) == []
    dialog.get_by_role("combobox", name="合并到").select_option(str(target))
    with phone.expect_navigation():
        dialog.get_by_role("button", name="合并", exact=True).click()
    assert phone.url.endswith(f"/workbench/conversations/{target}")
    phone.get_by_role("tab", name="对话记录").click()
    thread = phone.get_by_role("list", name="消息与变更")
    expect(thread.get_by_text("订单 42 还没到")).to_be_visible()
    expect(thread.get_by_text("微信上再问一次")).to_be_visible()
    expect(thread).to_contain_text("合并到了此会话")
    phone.context.close()
