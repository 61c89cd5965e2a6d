"""An administrator creates an external application in a real browser and copies its token once."""
import re

from playwright.sync_api import expect

from tests.support.browser import log_in
from tests.support.openapi import OpenClient


def test_create_with_confirmations_copy_the_token_once_and_revoke(page, live_server, admin, app):
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/open-platform")
    expect(page.get_by_text("No applications yet")).to_be_visible()
    page.get_by_label("Name", exact=True).fill("Loyalty sync")
    page.get_by_label("Customers: phone and e-mail (sensitive)").check()
    page.get_by_label("This application's records: create").check()
    page.get_by_role("button", name="Create application").click()
    expect(page.get_by_text("This scope needs its own confirmation.")).to_be_visible()
    expect(page.get_by_text("Confirm that an external server will process this data.")).to_be_visible()

    page.get_by_label(re.compile("external server will process customers' phone")).check()
    page.get_by_label(re.compile("an external server will process the data")).check()
    page.get_by_role("button", name="Create application").click()
    expect(page.get_by_role("heading", name="Copy these now: they are shown only once")).to_be_visible()
    token = page.get_by_label(re.compile("API token")).input_value()
    assert OpenClient(app.test_client(), token).get("/customers").status_code == 200

    page.reload()
    expect(page.get_by_text("cannot be shown again")).to_be_visible()
    page.get_by_role("link", name="← Open platform").click()
    row = page.get_by_role("row", name=re.compile("Loyalty sync"))
    expect(row).to_contain_text("active")
    row.get_by_role("button", name="Revoke…").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    expect(page.get_by_text("is revoked")).to_be_visible()
    expect(page.get_by_role("row", name=re.compile("Loyalty sync"))).to_contain_text("revoked")
    assert OpenClient(app.test_client(), token).get("/customers").status_code == 401
