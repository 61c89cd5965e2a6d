"""In Chromium, console pages run under the Content-Security-Policy without a single violation,
and htmx swaps (GET, POST with the CSRF header, out-of-band, 422) still work."""
import threading

from playwright.sync_api import expect, sync_playwright

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
from tests.support.browser import log_in
from tests.support.studio import sample_definition

CHARTS = [{"key": "by_priority", "title": "Requests by priority", "type": "bar", "group_by": "priority",
           "metric": "count"}]
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation',
  (e) => window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
"""


def in_chromium(scenario) -> None:
    """Run `scenario(page)` in a fresh Chromium on a thread of its own.

    The suite's session-wide browser (tests/browser) keeps Playwright's event loop on the main
    thread, and a second sync Playwright cannot start beside it there.
    """
    failures = []

    def run():
        try:
            with sync_playwright() as playwright:
                chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    scenario(chromium.new_context().new_page())
                finally:
                    chromium.close()
        except BaseException as failure:  # handed to the test's own thread below
            failures.append(failure)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=180)
    assert not thread.is_alive(), "the browser scenario did not finish"
    if failures:
        raise failures[0]


def watch(page) -> list[str]:
    """Collect every CSP report: console messages, and securitypolicyviolation events per document."""
    reports = []
    page.context.add_init_script(RECORD_VIOLATIONS)
    page.on("console", lambda message: reports.append(message.text)
            if "Content Security Policy" in message.text else None)
    return reports


def assert_no_violation(page, reports: list[str]) -> None:
    """Nothing on the current document broke the policy (checked before leaving it)."""
    assert page.evaluate("window.__cspViolations") == [] and reports == []


def test_console_pages_with_htmx_swaps_break_no_policy(live_server, admin, api):
    app_id = api.create(sample_definition(charts=CHARTS))
    assert api.simulate(app_id).status_code == 200 and api.publish(app_id).status_code == 200
    record = {"version": 1, "input": {"title": "Crushed box", "priority": "high"},
              "idempotency_key": "5b0e8f3c-3f0e-4c59-9a55-0e8d2a4d7b21"}
    assert api.post(f"/{app_id}/records", record).status_code == 200
    email = admin.user.email

    def scenario(page):
        reports = watch(page)
        log_in(page, live_server, email)
        answer = page.goto(f"{live_server}/extensions/{app_id}")
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"]
        expect(page.get_by_role("img", name="Requests by priority")).to_be_visible()  # server-drawn SVG
        expect(page.locator(".cm-editor .cm-lineNumbers").first).to_contain_text("2")  # the editor's bundle ran

        simulate = page.locator("#simulate-form")
        simulate.get_by_label("Title").fill("   ")
        simulate.get_by_role("button", name="Simulate").click()  # a blank title: a 422 swapped in
        expect(page.locator("#simulation")).to_contain_text("required")
        simulate.get_by_label("Title").fill("Lost parcel")
        simulate.get_by_label("Amount").fill("250")
        simulate.get_by_role("button", name="Simulate").click()  # POST with X-CSRFToken, OOB swaps
        expect(page.locator("#simulation")).to_contain_text("Big orders are high priority")
        assert_no_violation(page, reports)

        page.get_by_role("link", name="Workbench").click()
        page.get_by_role("navigation", name="Whose").get_by_role("link", name="Mine").click()  # htmx, pushes the URL
        expect(page).to_have_url(f"{live_server}/workbench?status=open&view=mine")
        assert_no_violation(page, reports)

    in_chromium(scenario)
