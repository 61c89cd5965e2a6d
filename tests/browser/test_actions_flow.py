"""Record actions in a real browser: an administrator binds an address, selects a record in the
ledger, reviews the exact payload and target, confirms, follows the progress to the outcome, and
makes a campaign draft; axe-core checks each page."""
import json
import re

from playwright.sync_api import expect

from tests.support.actions import TOKEN, professional, run_count, save, send_actions
from tests.support.browser import PHONE, axe_violations, log_in


def _review(page, base: str, app_id: str):
    """Open the app page and follow the only record's "Actions" link from the ledger."""
    page.goto(f"{base}/extensions/{app_id}")
    page.get_by_role("link", name=re.compile(r"^Actions for the record saved")).click()
    expect(page.get_by_role("heading", name="Actions for a record")).to_be_visible()


def test_an_administrator_binds_an_address_reviews_a_record_and_runs_it_once(page, live_server, admin, api, acting,
                                                                            receiver, redis_conn):
    save(api, acting, {"title": "Order 7", "amount": 120, "notes": "Call after 6pm"})
    log_in(page, live_server, admin.user.email)
    _review(page, live_server, acting)
    crm = page.get_by_role("region", name="Send to CRM")
    expect(crm).to_contain_text("No address is bound to this action of v1.")
    crm.get_by_role("link", name="Bind an address").click()
    page.get_by_label("Address for v1 · Send to CRM").fill(receiver.url("localhost", "/hooks/orders"))
    page.get_by_label("Bearer token (optional) for v1 · Send to CRM").fill(TOKEN)
    page.get_by_role("checkbox", name=re.compile(r"^I confirm: records I run this action on .* \(v1 · Send to CRM\)")
                     ).check()
    page.get_by_role("button", name="Bind address to v1 · Send to CRM").click()
    expect(page.get_by_role("status")).to_contain_text("v1 · crm: bound to localhost.")
    assert TOKEN not in page.content() and axe_violations(page) == []

    _review(page, live_server, acting)
    crm = page.get_by_role("region", name="Send to CRM")
    expect(crm).to_contain_text(f"POST {receiver.url('localhost', '/hooks/orders')}")
    payload = crm.get_by_label("Payload of Send to CRM").inner_text()
    assert json.loads(payload) == {"notes": "Call after 6pm", "title": "Order 7", "amount": 120}
    crm.get_by_role("button", name="Run Send to CRM").click()  # unticked: the browser asks for the confirmation
    assert run_count() == 0
    crm.get_by_role("checkbox", name="I reviewed the payload and the target of Send to CRM").check()
    crm.get_by_role("button", name="Run Send to CRM").click()
    expect(crm.get_by_role("progressbar", name="Action run in progress")).to_be_visible()
    assert axe_violations(page) == []
    send_actions(redis_conn)
    expect(crm.get_by_role("status")).to_contain_text("Accepted: the receiver answered HTTP 200.", timeout=10_000)
    expect(crm).to_contain_text("not that its business process completed")
    assert len(receiver.received) == 1 and json.loads(receiver.received[0].body) == json.loads(payload)
    page.reload()
    crm = page.get_by_role("region", name="Send to CRM")
    expect(crm.get_by_role("button", name="Run Send to CRM")).to_have_count(0)
    assert axe_violations(page) == []


def test_a_campaign_draft_is_made_from_a_record_and_listed_with_its_review_state(page, live_server, admin, api, acting,
                                                                                 tenant):
    professional(tenant)
    save(api, acting, {"title": "Spring sale", "notes": "20% off this week", "tag": "vip"})
    log_in(page, live_server, admin.user.email)
    _review(page, live_server, acting)
    promo = page.get_by_role("region", name="Promotion draft")
    expect(promo).to_contain_text("Customers tagged “vip”")
    promo.get_by_role("checkbox", name="I reviewed the draft of Promotion draft").check()
    promo.get_by_role("button", name="Run Promotion draft").click()
    expect(promo.get_by_role("status")).to_contain_text("Marketing draft created")
    promo.get_by_role("link", name="Marketing drafts").click()
    row = page.get_by_role("row", name=re.compile("Spring sale"))
    expect(row).to_contain_text("Awaiting review")
    expect(row).to_contain_text("Customers tagged “vip”")
    assert axe_violations(page) == []


def test_the_review_page_fits_a_phone(page, live_server, admin, api, acting, receiver):
    save(api, acting, {"title": "Order 7", "notes": "x" * 1500})
    page.set_viewport_size(PHONE)
    log_in(page, live_server, admin.user.email)
    _review(page, live_server, acting)
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert axe_violations(page) == []
