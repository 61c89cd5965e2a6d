"""Drafts that survive (issue 37) in Chromium: what an agent types is kept within 2 s, comes back
after a reload, and on another device (a second browser context, in Chinese on a phone) after a
supervisor reassigned the conversation; sending there removes it."""
import time

from playwright.sync_api import expect
from sqlalchemy import select

from core.db import db
from desk.conversations import change_by_hand
from desk.models import ComposerDraft
from tests.conftest import customer_conversation, seat
from tests.support.browser import PHONE, log_in

TEXT = "Half-written: your refund of ¥128 is"


def kept() -> list[str]:
    db.session.expire_all()
    return list(db.session.scalars(select(ComposerDraft.text)))


def wait_until_kept(text: str) -> None:
    deadline = time.monotonic() + 10
    while kept() != [text]:
        assert time.monotonic() < deadline, kept()
        time.sleep(0.1)


def test_a_draft_comes_back_after_a_reload_and_on_another_device_after_a_reassignment(browser, live_server, tenant,
                                                                                       agent):
    conversation = customer_conversation(tenant, "Where is my refund?", name="Draft Du")
    conversation.assignee_member_id = agent.id
    db.session.commit()
    desk = browser.new_context(locale="en-US")
    page = desk.new_page()
    log_in(page, live_server, agent.user.email)
    page.goto(f"{live_server}/workbench/conversations/{conversation.id}")
    page.get_by_role("textbox", name="Reply").click()
    page.keyboard.type(TEXT)
    wait_until_kept(TEXT)
    page.reload()
    expect(page.get_by_role("textbox", name="Reply")).to_have_value(TEXT)
    supervisor = seat(tenant, "supervisor")
    change_by_hand(tenant.id, supervisor, conversation.id, agent.id, "open", assignee=supervisor.id)
    db.session.commit()
    phone = browser.new_context(locale="zh-CN", viewport=PHONE)
    other = phone.new_page()
    log_in(other, live_server, agent.user.email)
    other.goto(f"{live_server}/workbench/conversations/{conversation.id}")
    other.get_by_role("tab", name="对话记录").click()  # a phone shows one pane at a time
    box = other.get_by_role("textbox", name="回复")
    expect(box).to_have_value(TEXT)
    box.focus()
    other.keyboard.type(" refunded.")
    other.keyboard.press("Enter")
    expect(box).to_have_value("")
    other.wait_for_timeout(2500)  # a save still pending would have landed by now
    assert kept() == []
    desk.close()
    phone.close()
