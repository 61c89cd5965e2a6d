"""Who else is here (issue 37) in Chromium, two members in two browser contexts — one at a desk in
English, one on a phone in Chinese: each sees the other in the thread header within 7 s, typing
and then not typing after the send; the list marks the conversation the other has open; a member's
name shows as text, never markup; a send after the other replied asks "Someone else replied", and
"Send anyway" sends once while "Review first" shows the reply and keeps the text."""
import re

from playwright.sync_api import expect
from sqlalchemy import func, select

from core.db import db
from desk.models import Message
from tests.conftest import customer_conversation, seat
from tests.support.browser import PHONE, axe_violations, log_in

SEEN_WITHIN_MS = 7000
# Typing without a send stops counting 5 s after the last keystroke; then one poll of each page.
STOPPED_WITHIN_MS = 5000 + 2 * 3000 + 1000
HOSTILE = "<img src=x onerror=window.pwned=1>"


def named(tenant, name: str):
    member = seat(tenant, "agent")
    member.display_name = name
    db.session.commit()
    return member


def stored(text: str) -> int:
    db.session.expire_all()
    return db.session.scalar(select(func.count()).select_from(Message).where(Message.text == text))


def open_conversation(browser, live_server, member, conversation, **context):
    page = browser.new_context(**context).new_page()
    log_in(page, live_server, member.user.email)
    page.goto(f"{live_server}/workbench/conversations/{conversation.id}")
    return page


def test_two_members_see_each_other_typing_and_the_question_before_a_send(browser, live_server, tenant):
    conversation = customer_conversation(tenant, "Where is my parcel?", name="Wang Fang")
    han, other = named(tenant, "韩梅梅"), named(tenant, HOSTILE)
    desk = open_conversation(browser, live_server, other, conversation, locale="en-US")
    phone = open_conversation(browser, live_server, han, conversation, locale="zh-CN", viewport=PHONE)
    phone.get_by_role("tab", name="对话记录").click()  # a phone shows one pane at a time

    expect(desk.locator("#viewers-notice")).to_have_text("韩梅梅 is here too", timeout=SEEN_WITHIN_MS)
    expect(desk.get_by_role("link", name=re.compile("Wang Fang")).locator(".open-elsewhere")).to_have_text(
        "Open: 韩梅梅", timeout=SEEN_WITHIN_MS)
    expect(phone.locator("#viewers-notice")).to_have_text(f"{HOSTILE} 也在查看", timeout=SEEN_WITHIN_MS)
    assert phone.evaluate("window.pwned") is None and desk.evaluate("window.pwned") is None

    box = phone.get_by_role("textbox", name="回复")
    box.click()
    phone.keyboard.type("您好，包裹")
    expect(desk.locator("#viewers-notice")).to_have_text("韩梅梅 is typing a reply…", timeout=SEEN_WITHIN_MS)
    assert desk.locator("#viewers-notice").get_attribute("aria-live") == "polite"

    desk.get_by_role("textbox", name="Reply").click()
    desk.keyboard.type("We shipped it this morning.")
    desk.keyboard.press("Enter")
    expect(desk.get_by_role("textbox", name="Reply")).to_have_value("")
    expect(phone.locator("#viewers-notice")).to_have_text(f"{HOSTILE} 也在查看", timeout=SEEN_WITHIN_MS)

    phone.keyboard.type("已经发出了。")
    phone.keyboard.press("Enter")
    question = phone.get_by_role("dialog", name="其他人已回复")
    expect(question).to_be_visible()
    expect(question).to_contain_text(re.compile(f"{re.escape(HOSTILE)} .*前回复了。仍然发送？"))
    assert phone.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert axe_violations(phone) == []
    question.get_by_role("button", name="先查看").click()
    expect(question).to_have_count(0)
    expect(box).to_have_value("您好，包裹已经发出了。")
    thread = phone.get_by_role("list", name="消息与变更")
    expect(thread.get_by_text("We shipped it this morning.")).to_be_visible()
    assert stored("您好，包裹已经发出了。") == 0
    expect(desk.locator("#viewers-notice")).to_have_text("韩梅梅 is here too", timeout=STOPPED_WITHIN_MS)

    desk.keyboard.type("Tracking number follows.")
    desk.keyboard.press("Enter")
    expect(desk.get_by_role("textbox", name="Reply")).to_have_value("")
    box.press("Enter")
    phone.get_by_role("dialog", name="其他人已回复").get_by_role("button", name="仍然发送").click()
    expect(box).to_have_value("")
    expect(thread.get_by_text("您好，包裹已经发出了。")).to_have_count(1)
    assert stored("您好，包裹已经发出了。") == 1
    expect(phone.locator("#viewers-notice")).to_have_text(f"{HOSTILE} 也在查看", timeout=SEEN_WITHIN_MS)
    expect(desk.locator("#viewers-notice")).to_have_text("韩梅梅 is here too", timeout=SEEN_WITHIN_MS)
    desk.context.close()
    phone.context.close()
