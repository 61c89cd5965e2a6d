"""The team board and the assignee typeahead's question in Chromium (issue 35): a supervisor follows the
header's Team link to the table named "Team availability", in English and in Chinese, on a 390 px phone
without sideways scrolling and without axe violations; the board follows the changes poll; with the
availability policy on, choosing an offline member asks first, Cancel goes back to the options and
"Assign anyway" assigns."""
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from core.clock import utcnow
from core.db import db
from desk.availability import save_policy
from desk.availability_models import WaitingConversation
from desk.models import Conversation, Member, Tenant
from tests.conftest import customer_conversation, seat
from tests.support.browser import PHONE, axe_violations, log_in, settled

LIVE_WAIT_MS = 12_000  # the page polls every 3 s
# (locale, the link, the table's name, words the board shows for an online agent with one open conversation)
LANGUAGES = [("en-US", "Team", "Team availability", ["Online", "Available", "1 / 8", "Yes"]),
             ("zh-CN", "团队", "团队可用状态", ["在线", "可用", "1 / 8", "是"])]


def member(tenant: Tenant, role: str, name: str, online: bool) -> Member:
    """A member named `name`, online now (a workbench request just now) or never seen; committed."""
    found = seat(tenant, role)
    found.display_name, found.last_seen_at = name, utcnow() if online else None
    db.session.commit()
    return found


def assigned(tenant: Tenant, to: Member, name: str = "Olga Customer") -> Conversation:
    """An open conversation of a new customer assigned to `to`; committed."""
    conversation = customer_conversation(tenant, name=name)
    conversation.assignee_member_id = to.id
    db.session.commit()
    return conversation


def open_board(browser, live_server, supervisor: Member, locale: str, link: str, viewport=None):
    """The supervisor's browser speaking `locale`, on the team board reached by the header's link."""
    context = browser.new_context(locale=locale, **({"viewport": viewport} if viewport else {}))
    page = context.new_page()
    log_in(page, live_server, supervisor.user.email)
    expect(page).to_have_url(f"{live_server}/workbench")
    page.get_by_role("link", name=link, exact=True).click()
    expect(page).to_have_url(f"{live_server}/workbench/team")
    return context, page


@pytest.mark.parametrize("locale, link, table_name, shown", LANGUAGES)
def test_the_board_on_a_phone_in_both_languages(browser, live_server, tenant, locale, link, table_name, shown):
    supervisor = seat(tenant, "supervisor")
    agent = member(tenant, "agent", "Ada Online", online=True)
    assigned(tenant, agent)
    member(tenant, "agent", "Cy Never", online=False)
    for minutes in (12, 3):
        waiting = customer_conversation(tenant, name=f"Waiting {minutes}")
        db.session.add(WaitingConversation(conversation_id=waiting.id, tenant_id=tenant.id, reason_code="agent_offline",
                                           waiting_since=utcnow() - timedelta(minutes=minutes)))
    db.session.commit()
    context, page = open_board(browser, live_server, supervisor, locale, link, PHONE)
    table = page.get_by_role("table", name=table_name)
    expect(table).to_be_visible()
    row = table.get_by_role("row").filter(has=page.get_by_role("rowheader", name="Ada Online", exact=False))
    for index, word in enumerate(shown):  # presence, availability, open / capacity, on shift
        expect(row.get_by_role("cell").nth(index)).to_have_text(word)
    expect(page.get_by_role("region", name="等待队列" if locale == "zh-CN" else "Waiting queue")).to_contain_text(
        "2 个会话在等待" if locale == "zh-CN" else "2 conversations waiting; the oldest for 12 min")
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    box = page.locator(".table-scroll")  # the five columns fit: nothing scrolls inside the box either
    assert box.evaluate("element => element.scrollWidth <= element.clientWidth")
    assert axe_violations(page) == []
    context.close()


def test_the_board_follows_the_changes_poll(browser, live_server, tenant):
    supervisor = seat(tenant, "supervisor")
    agent = member(tenant, "agent", "Ada Online", online=True)
    context, page = open_board(browser, live_server, supervisor, "en-US", "Team")
    row = page.get_by_role("table", name="Team availability").get_by_role("row").filter(
        has=page.get_by_role("rowheader", name="Ada Online", exact=False))
    expect(row.get_by_role("cell").nth(2)).to_have_text("0 / 8")
    assigned(tenant, agent)
    expect(row.get_by_role("cell").nth(2)).to_have_text("1 / 8", timeout=LIVE_WAIT_MS)
    expect(page).to_have_url(f"{live_server}/workbench/team")  # no reload
    context.close()


def test_with_the_policy_on_an_offline_pick_asks_first_and_assign_anyway_assigns(browser, live_server, tenant):
    save_policy(tenant.id, None, {"enabled": True, "default_capacity": 8, "fallback_after_minutes": 5,
                                  "offline_policy": "keep"})
    supervisor = seat(tenant, "supervisor")
    member(tenant, "agent", "Cy Never", online=False)
    customer_conversation(tenant, name="Olga Customer")
    context = browser.new_context(locale="en-US", viewport=PHONE)
    page = context.new_page()
    log_in(page, live_server, supervisor.user.email)
    page.get_by_role("link", name="Olga Customer").click()
    settled(page)
    details = page.get_by_role("complementary", name="Customer details")
    with page.expect_response(lambda answer: "/assignees?q=Cy" in answer.url):  # the options of what was typed
        details.get_by_role("searchbox", name="Assign to someone else").fill("Cy")
    option = details.get_by_role("button", name="Assign to Cy Never")
    expect(option).to_have_accessible_description("agent · Offline · 0 / 8 open")
    option.click()
    question = details.get_by_role("group", name="Assign to Cy Never anyway?")
    expect(question).to_contain_text("Offline")
    expect(question.get_by_role("button", name="Assign anyway")).to_be_focused()
    question.get_by_role("link", name="Cancel").click()
    expect(question).to_have_count(0)
    details.get_by_role("button", name="Assign to Cy Never").click()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    details.get_by_role("group", name="Assign to Cy Never anyway?").get_by_role("button", name="Assign anyway").click()
    expect(details.get_by_role("group", name="Assign to Cy Never anyway?")).to_have_count(0)
    expect(details.get_by_role("definition").filter(has_text="Cy Never")).to_be_visible()  # the assignee now
    expect(details).to_contain_text("Forms an administrator adds to the workbench")  # the tools area stays
    context.close()
