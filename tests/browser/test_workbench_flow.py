"""The workbench in a real browser: live updates, changes by hand, keyboard, and phones."""
import json
import time
from datetime import timedelta

import requests
from playwright.sync_api import expect

from core.clock import utcnow
from core.crypto import hmac_sha256_hex
from tests.conftest import customer_conversation
from tests.support.browser import PHONE, log_in
from tests.support.search import beijing, fillers, make

PHONE_NUMBER = "+86 139 1234 5678"
LIVE_WAIT_MS = 12_000  # the page polls every 3 s


def post_inbound(base: str, channel, message_id: str, text: str, name: str = "Wang Fang") -> None:
    """What a channel does: a signed POST to the inbound endpoint over HTTP."""
    found, secret = channel
    raw = json.dumps({"message_id": message_id, "text": text,
                      "customer": {"external_id": f"ext-{name}", "name": name}}, ensure_ascii=False).encode()
    stamp = str(int(time.time()))
    answer = requests.post(f"{base}/api/channels/{found.id}/messages", data=raw, timeout=10, headers={
        "Content-Type": "application/json", "X-Channel-Timestamp": stamp,
        "X-Channel-Signature": "v1=" + hmac_sha256_hex(secret, stamp.encode() + b"." + raw)})
    assert answer.status_code in (200, 201), answer.text


def test_a_message_posted_to_the_inbound_endpoint_appears_in_an_open_workbench_without_reload(
        page, live_server, tenant, agent, channel):
    post_inbound(live_server, channel, "m-1", "第一条消息")
    log_in(page, live_server, agent.user.email)
    page.evaluate("window.stayed = true")
    page.get_by_role("link", name="Wang Fang").click()
    thread = page.get_by_role("list", name="Messages and changes")
    expect(thread).to_contain_text("第一条消息")
    post_inbound(live_server, channel, "m-2", "Where is my parcel now?")
    expect(thread).to_contain_text("Where is my parcel now?", timeout=LIVE_WAIT_MS)
    post_inbound(live_server, channel, "m-3", "Hello from someone new", name="Li Lei")
    expect(page.get_by_role("link", name="Li Lei")).to_be_visible(timeout=LIVE_WAIT_MS)
    assert page.evaluate("window.stayed") is True  # no reload: the page was never left


def test_assign_to_me_and_resolve_update_the_list(page, live_server, tenant, agent):
    customer_conversation(tenant, name="Olga Customer")
    log_in(page, live_server, agent.user.email)
    listed = page.get_by_role("link", name="Olga Customer")
    expect(listed).to_contain_text("Unassigned")
    listed.click()
    page.get_by_role("button", name="Assign to me").click()
    expect(listed).to_contain_text("Agent Person")
    expect(page.get_by_role("list", name="Messages and changes")).to_contain_text(
        "Agent Person assigned the conversation to Agent Person")
    page.get_by_role("button", name="Resolve").click()
    expect(listed).to_have_count(0)
    page.get_by_role("navigation", name="Status").get_by_role("link", name="Resolved").click()
    expect(page.get_by_role("link", name="Olga Customer")).to_be_visible()


def test_j_and_k_move_through_the_list_but_not_while_typing(page, live_server, tenant, admin):
    for name in ("First Customer", "Second Customer", "Third Customer"):
        customer_conversation(tenant, name=name)
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/workbench")
    links = page.get_by_role("list", name="Open conversations").get_by_role("link")
    page.keyboard.press("j")
    expect(links.nth(0)).to_be_focused()
    page.keyboard.press("j")
    expect(links.nth(1)).to_be_focused()
    page.keyboard.press("k")
    expect(links.nth(0)).to_be_focused()
    page.keyboard.press("ArrowDown")
    expect(links.nth(1)).to_be_focused()
    page.keyboard.press("Enter")
    search = page.get_by_role("searchbox", name="Assign to someone else")
    search.focus()
    page.keyboard.type("jk")
    expect(search).to_have_value("jk")
    expect(search).to_be_focused()


def test_on_a_phone_choosing_a_conversation_opens_the_customer_drawer_first(page, live_server, tenant, agent):
    customer_conversation(tenant, "my parcel is late", name="Olga Customer", phone=PHONE_NUMBER)
    page.set_viewport_size(PHONE)
    log_in(page, live_server, agent.user.email)
    details = page.get_by_role("complementary", name="Customer details")
    thread = page.get_by_role("region", name="Conversation")
    expect(details).to_be_hidden()
    page.get_by_role("link", name="Olga Customer").click()
    expect(details).to_be_visible()
    expect(details).to_contain_text(PHONE_NUMBER)
    expect(thread).to_be_hidden()
    page.get_by_role("tab", name="Thread").click()
    expect(thread).to_contain_text("my parcel is late")
    expect(details).to_be_hidden()
    page.get_by_role("tab", name="Conversations").click()
    expect(page.get_by_role("link", name="Olga Customer")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_search_by_beijing_dates_includes_the_whole_end_day(page, live_server, tenant, agent):
    make(tenant, "Last Second", at=beijing("2026-11-20", "23:59:59"))
    make(tenant, "Next Midnight", at=beijing("2026-11-21", "00:00:00"))
    log_in(page, live_server, agent.user.email)
    page.get_by_text("Advanced search").click()
    page.get_by_label("Last activity from (Beijing date)").fill("2026-11-20")
    page.get_by_label("Last activity until (whole day)").fill("2026-11-20")
    page.get_by_role("button", name="Search").click()
    results = page.get_by_role("list", name="Search results")
    expect(results.get_by_role("link", name="Last Second")).to_be_visible()
    expect(results.get_by_role("link", name="Next Midnight")).to_have_count(0)
    page.get_by_role("textbox", name="Message content").fill("no such words")
    page.get_by_role("button", name="Search").click()
    expect(page.get_by_role("status")).to_contain_text("No conversation matches these conditions.")


def test_search_continues_looking_for_older_conversations(page, live_server, tenant, agent):
    make(tenant, "Needle Person", at=utcnow() - timedelta(days=1))
    fillers(tenant, 200, utcnow())
    log_in(page, live_server, agent.user.email)
    page.get_by_role("searchbox", name="Search conversations").fill("needle")
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_contain_text("No match found so far")
    more = page.get_by_role("link", name="Continue looking for older conversations")
    expect(page.get_by_role("link", name="Needle Person")).to_have_count(0)
    more.click()
    expect(page.get_by_role("list", name="Search results").get_by_role("link", name="Needle Person")).to_be_visible()
    expect(more).to_have_count(0)
    expect(page.get_by_role("status")).to_contain_text("1 found among the 201 most recent conversations")


HIDDEN_SWITCH = """Object.defineProperty(document, "hidden", {configurable: true, get: () => window.__hidden === true});"""


def test_a_tab_in_the_background_polls_less_often(page, live_server, tenant, agent):
    page.add_init_script(HIDDEN_SWITCH)  # what the browser reports for a background tab, switchable
    polls = []
    page.on("request", lambda request: polls.append(request.url) if "/workbench/changes" in request.url else None)
    log_in(page, live_server, agent.user.email)
    page.wait_for_timeout(7_000)
    visible = len(polls)
    page.evaluate("window.__hidden = true; document.dispatchEvent(new Event('visibilitychange'))")
    polls.clear()
    page.wait_for_timeout(7_000)
    assert visible >= 2 and polls == []  # every 3 s in front; every 30 s behind
    page.evaluate("window.__hidden = false; document.dispatchEvent(new Event('visibilitychange'))")
    page.wait_for_timeout(500)
    assert len(polls) == 1  # at once when the tab comes back
