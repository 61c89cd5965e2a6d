"""Service levels in Chromium (issue 36), in English and in Chinese on a 390 px phone, without
sideways scrolling and without axe violations: an agent reads each row's nearest due target in words
("Due in 10 min", "Breached 5 min ago") and follows the "Breaching soon" tab to what is due within 15
minutes or breached, oldest due first; an administrator follows the header's link to the report, its
chart and its tables, and switches to 30 days."""
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from core.clock import to_beijing, utcnow
from core.db import db
from desk.channels import create_channel
from desk.service_level_models import ServiceLevelTimer
from tests.conftest import customer_conversation, seat
from tests.support.browser import PHONE, axe_violations, log_in

# (locale, the tab, the words of a target due in ten minutes and of one breached five minutes ago)
LANGUAGES = [("en-US", "Breaching soon", "Due in 10 min", "Breached 5 min ago"),
             ("zh-CN", "即将超时", "10分钟后到期", "已超时 5分钟")]
REPORT = [("en-US", "Service levels", "By target", "Last 30 days", "First response"),
          ("zh-CN", "服务水平", "按目标", "最近 30 天", "首次响应")]


def timed(tenant, channel, name: str, due_in: timedelta, **decided) -> None:
    """A customer's open conversation whose first-response target is due `due_in` from now."""
    conversation = customer_conversation(tenant, name=name)
    due = utcnow() + due_in
    started = due - timedelta(minutes=30)
    values = {"breached_at": due, "outcome": "breached"} if due_in < timedelta() else {}
    db.session.add(ServiceLevelTimer(
        tenant_id=tenant.id, conversation_id=conversation.id, channel_id=channel.id, kind="first_response",
        hours="calendar", target_minutes=30, started_at=started, started_on=to_beijing(started).date(),
        counted_since=started, due_at=due, **{**values, **decided}))
    db.session.commit()


def phone_fits(page) -> None:
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert axe_violations(page) == []


@pytest.mark.parametrize("locale, tab, soon, breached", LANGUAGES)
def test_the_badges_and_breaching_soon_on_a_phone(browser, live_server, tenant, locale, tab, soon, breached):
    agent = seat(tenant, "agent")
    channel, _ = create_channel(tenant.id, "Website chat")
    timed(tenant, channel, "Later Li", timedelta(hours=2))
    timed(tenant, channel, "Soon Sun", timedelta(minutes=10, seconds=20))
    timed(tenant, channel, "Late Zhao", timedelta(minutes=-5, seconds=-20))
    context = browser.new_context(locale=locale, viewport=PHONE)
    page = context.new_page()
    log_in(page, live_server, agent.user.email)
    rows = page.locator(".conversations li")
    expect(rows.filter(has_text="Soon Sun")).to_contain_text(soon)
    expect(rows.filter(has_text="Late Zhao")).to_contain_text(breached)
    phone_fits(page)
    page.get_by_role("link", name=tab, exact=True).click()
    expect(page).to_have_url(f"{live_server}/workbench?status=open&view=breaching")
    expect(rows).to_have_count(2)
    expect(rows.nth(0)).to_contain_text("Late Zhao")
    expect(rows.nth(1)).to_contain_text("Soon Sun")
    phone_fits(page)
    context.close()


@pytest.mark.parametrize("locale, link, table, thirty, kind", REPORT)
def test_the_report_on_a_phone(browser, live_server, tenant, admin, locale, link, table, thirty, kind):
    channel, _ = create_channel(tenant.id, "Website chat")
    timed(tenant, channel, "Met Ma", timedelta(minutes=-40), stopped_at=utcnow() - timedelta(minutes=60),
          elapsed_minutes=10.0, member_id=admin.id, outcome="met", breached_at=None)
    timed(tenant, channel, "Late Zhao", timedelta(minutes=-5))
    context = browser.new_context(locale=locale, viewport=PHONE)
    page = context.new_page()
    log_in(page, live_server, admin.user.email)
    page.get_by_role("link", name=link, exact=True).click()
    expect(page).to_have_url(f"{live_server}/reports/service-levels")
    expect(page.get_by_role("img", name="每日达成率" if locale == "zh-CN" else "Achieved per day")).to_be_visible()
    targets = page.get_by_role("table", name=table, exact=True)
    expect(targets.get_by_role("row").filter(has=page.get_by_role("rowheader", name=kind))).to_contain_text(
        "2 1 1 50")
    phone_fits(page)
    page.get_by_role("link", name=thirty).click()
    expect(page).to_have_url(f"{live_server}/reports/service-levels?days=30")
    expect(page.get_by_role("link", name=thirty)).to_have_attribute("aria-current", "page")
    context.close()


def test_an_administrator_sets_the_policies_and_hours_by_keyboard_on_a_phone(browser, live_server, tenant, admin):
    create_channel(tenant.id, "Website chat")
    db.session.commit()
    context = browser.new_context(locale="en-US", viewport=PHONE)
    page = context.new_page()
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/service-levels")
    default = page.get_by_role("group", name="Default policy")
    default.get_by_role("textbox", name="First response, minutes").fill("30")
    default.get_by_role("textbox", name="Resolution, minutes").fill("2880")
    override = page.get_by_role("group", name="Channel override 1")
    override.get_by_role("combobox", name="Channel").select_option(label="Website chat")
    override.get_by_role("textbox", name="First response, minutes").fill("5")
    override.get_by_role("combobox", name="Counted in").select_option(label="Every hour (calendar)")
    page.get_by_role("textbox", name="Weekly business hours").fill("1-5 09:00-18:00")
    phone_fits(page)
    page.get_by_role("textbox", name="Weekly business hours").press("Tab")
    page.keyboard.press("Enter")  # the focused Save button
    expect(page.get_by_text("Saved the service-level policies and business hours.")).to_be_visible()
    expect(page.get_by_role("group", name="Channel override 1").get_by_role(
        "textbox", name="First response, minutes")).to_have_value("5")
    expect(page.get_by_role("textbox", name="Weekly business hours")).to_have_value("1-5 09:00-18:00")
    context.close()
