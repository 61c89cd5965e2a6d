"""Every console page fits a 390 px wide phone without sideways scrolling: the URL map is walked
with the hostile-input walk's estate (one of everything, so every section shows)."""
from playwright.sync_api import expect

from tests.browser.test_console_flow import _log_in
from tests.test_hostile_input import _path, _rules, estate  # noqa: F401 (estate is a fixture)

PHONE = {"width": 390, "height": 844}
OVERFLOW = """() => { const width = document.documentElement.clientWidth;
  const clipped = e => { for (let a = e.parentElement; a; a = a.parentElement) {
    if (getComputedStyle(a).overflowX !== 'visible') return true; } return false; };
  return document.documentElement.scrollWidth <= width ? [] :
    [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > width + 1 && !clipped(e))
      .slice(0, 5).map(e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '')); }"""


def test_every_console_page_fits_a_phone_without_sideways_scrolling(app, page, live_server, estate, admin, tenant):
    page.set_viewport_size(PHONE)
    _log_in(page, live_server, admin.user.email)
    page.get_by_role("button", name=tenant.name).click()
    expect(page).not_to_have_url(f"{live_server}/tenants/select")
    wide, seen = {}, 0
    for rule in _rules(app, "GET"):
        path = _path(rule, estate.values)
        if path.startswith(("/api/", "/static/")):
            continue
        response = page.goto(f"{live_server}{path}")
        if response.ok and "text/html" in response.headers.get("content-type", ""):
            seen += 1
            if overflowing := page.evaluate(OVERFLOW):
                wide[path] = overflowing
    assert seen >= 20
    assert wide == {}, "\n".join(f"{path}: {elements}" for path, elements in wide.items())
