"""Switching the pages' language from the header, as a person does: the same page comes back in
the other language, and the choice stays."""
from playwright.sync_api import expect

from tests.support.browser import log_in


def test_the_header_switch_changes_the_language_and_keeps_the_page(browser, live_server, admin):
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/automation")
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    expect(page.get_by_role("navigation", name="主导航").get_by_role("link", name="自动化")).to_be_visible()

    page.get_by_role("button", name="English").click()
    expect(page).to_have_url(f"{live_server}/extensions/automation")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    expect(page.get_by_role("navigation", name="Main").get_by_role("link", name="Automation")).to_be_visible()
    page.goto(f"{live_server}/knowledge")
    expect(page.locator("html")).to_have_attribute("lang", "en")  # saved, not only for one page

    page.get_by_role("button", name="简体中文").click()
    expect(page).to_have_url(f"{live_server}/knowledge")
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    context.close()
