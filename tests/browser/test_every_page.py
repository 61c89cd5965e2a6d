"""Every console and workbench page, in both languages: it says its language in `<html lang>`, fits
a 390 px wide phone without sideways scrolling (Chinese wraps differently; wide tables and editors
scroll inside their own box) and axe-core finds no WCAG 2 A/AA violation. The URL map is walked
with the hostile-input walk's estate (one of everything, so every section shows), whose names,
titles, labels and options are as long as the product accepts, with an unbroken token and Chinese
in each."""
import pytest
from playwright.sync_api import expect

from tests.support.browser import PHONE, axe_violations, log_in
from tests.support.estate import rule_path, url_rules

# The page's scroll width when it is wider than the screen, with the elements that stick out
# (those not inside a box that scrolls or clips on its own) to say where to look.
OVERFLOW = """() => { const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth <= width) return null;
  const clipped = e => { for (let a = e.parentElement; a; a = a.parentElement) {
    if (getComputedStyle(a).overflowX !== 'visible') return true; } return false; };
  return [document.documentElement.scrollWidth,
    [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > width + 1 && !clipped(e))
      .slice(0, 5).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
        + (e.className ? '.' + e.className : ''))]; }"""


@pytest.mark.parametrize("language, tag", [("zh-CN", "zh-CN"), ("en-US", "en")])
def test_every_page_says_its_language_fits_a_phone_and_passes_axe(app, browser, live_server, estate, admin, tenant,
                                                                  language, tag):
    context = browser.new_context(locale=language, viewport=PHONE)
    page = context.new_page()
    log_in(page, live_server, admin.user.email)
    page.get_by_role("button", name=tenant.name).click()
    expect(page).not_to_have_url(f"{live_server}/tenants/select")
    wide, failing, seen = {}, {}, 0
    for rule in url_rules(app, "GET"):
        path = rule_path(rule, estate.values)
        if path.startswith(("/api/", "/static/")):
            continue
        response = page.goto(f"{live_server}{path}")
        if response.ok and "text/html" in response.headers.get("content-type", ""):
            seen += 1
            if not response.text().lstrip().lower().startswith("<!doctype html>"):
                continue  # a region's partial opened on its own, unstyled: the page that includes it is walked
            if found := page.evaluate(OVERFLOW):
                wide[path] = found
            if page.evaluate("document.documentElement.lang") != tag:
                failing[path] = ["lang"]
            elif violations := axe_violations(page):
                failing[path] = violations
    context.close()
    assert seen >= 20
    assert wide == {}, "\n".join(f"{path}: {found}" for path, found in wide.items())
    assert failing == {}, "\n".join(f"{path}: {found}" for path, found in failing.items())
