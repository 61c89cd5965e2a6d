"""A person in Chromium: logging in through the page, a phone's viewport, and axe-core's verdict."""
import re
from pathlib import Path

import axe_playwright_python

from tests.conftest import PASSWORD

PHONE = {"width": 390, "height": 844}
AXE = Path(axe_playwright_python.__file__).with_name("axe.min.js")


def log_in(page, base: str, email: str) -> None:
    """Log in on the login page, in whichever language it speaks, and wait until the page it lands on has
    loaded: a route a test sets next must not catch that page's own requests."""
    page.goto(f"{base}/login")
    page.get_by_label(re.compile("^(Email|邮箱)$")).fill(email)
    page.get_by_label(re.compile("^(Password|密码)$")).fill(PASSWORD)
    with page.expect_navigation():
        page.get_by_label(re.compile("^(Password|密码)$")).press("Enter")


def settled(page) -> None:
    """Until htmx has no request in flight and nothing swapping or settling: htmx wires up swapped-in
    content when it settles (20 ms after the swap), so a control filled before that sends nothing."""
    page.wait_for_function("() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')")


def axe_violations(page) -> list[str]:
    """WCAG 2 A and AA violations axe-core finds on the page."""
    page.evaluate(AXE.read_text())  # through the debugger protocol: the page's CSP stays as served
    result = page.evaluate("axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}})")
    assert len(result["passes"]) > 10  # the rules ran on this page
    return [f"{v['id']}: {[n['target'] for n in v['nodes']][:3]}" for v in result["violations"]]
