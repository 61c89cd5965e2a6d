"""In Chromium, console pages run under the Content-Security-Policy without a single violation,
and htmx swaps (GET, POST with the CSRF header, out-of-band, 422) still work."""
import pytest
from playwright.sync_api import expect

from tests.browser.conftest import browser, page  # noqa: F401  Chromium fixtures, shared here
from tests.browser.test_console_flow import _log_in
from tests.studio.conftest import api, sample_definition  # noqa: F401

CHARTS = [{"key": "by_priority", "title": "Requests by priority", "type": "bar", "group_by": "priority",
           "metric": "count"}]
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
"""


@pytest.fixture
def watched(page):  # noqa: F811
    """The page, with every CSP report from the console and from securitypolicyviolation events."""
    reports = []
    page.context.add_init_script(RECORD_VIOLATIONS)
    page.on("console", lambda message: reports.append(message.text)
            if "Content Security Policy" in message.text else None)
    page.reports = reports
    return page


def assert_no_violation(page) -> None:
    """Nothing on the current document broke the policy (checked before leaving it)."""
    assert page.evaluate("window.__cspViolations") == [] and page.reports == []


def test_console_pages_with_htmx_swaps_break_no_policy(watched, live_server, admin, api):  # noqa: F811
    app_id = api.create(sample_definition(charts=CHARTS))
    assert api.simulate(app_id).status_code == 200 and api.publish(app_id).status_code == 200
    record = {"version": 1, "input": {"title": "Crushed box", "priority": "high"},
              "idempotency_key": "5b0e8f3c-3f0e-4c59-9a55-0e8d2a4d7b21"}
    assert api.post(f"/{app_id}/records", record).status_code == 200

    _log_in(watched, live_server, admin.user.email)
    answer = watched.goto(f"{live_server}/extensions/{app_id}")
    assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
    expect(watched.get_by_role("img", name="Requests by priority")).to_be_visible()  # server-drawn SVG

    simulate = watched.locator("#simulate-form")
    simulate.get_by_label("Title").fill("   ")
    simulate.get_by_role("button", name="Simulate").click()  # a blank title: a 422 swapped in
    expect(watched.locator("#simulation")).to_contain_text("required")
    simulate.get_by_label("Title").fill("Lost parcel")
    simulate.get_by_label("Amount").fill("250")
    simulate.get_by_role("button", name="Simulate").click()  # POST with X-CSRFToken, OOB swaps
    expect(watched.locator("#simulation")).to_contain_text("Big orders are high priority")
    expect(watched.locator(".code-area .gutter").first).to_contain_text("1\n2")  # app.js ran
    assert_no_violation(watched)

    watched.get_by_role("link", name="Workbench").click()
    watched.get_by_role("tab", name="Mine").click()  # an htmx GET that pushes the URL
    expect(watched).to_have_url(f"{live_server}/workbench?view=mine")
    assert_no_violation(watched)
