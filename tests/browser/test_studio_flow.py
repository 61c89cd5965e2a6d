"""An administrator builds, simulates, publishes and uses an app in a real browser."""
import json

from playwright.sync_api import expect

from tests.support.browser import log_in
from tests.support.studio import sample_definition

CHARTS = [{"key": "by_priority", "title": "Requests by priority", "type": "bar", "group_by": "priority",
           "metric": "count"}]


def submit_a_record(page, version: int, title: str, amount: str):
    """Submit a record to the live version through its form; the ledger afterwards."""
    page.get_by_text(f"Submit a record to v{version}").click()
    record = page.locator("#record-form")
    record.get_by_label("Title").fill(title)
    record.get_by_label("Amount").fill(amount)
    record.get_by_role("button", name="Save").click()
    expect(page.get_by_text("Record saved.")).to_be_visible()
    return page.locator("#ledger")


def test_create_edit_simulate_publish_submit_and_see_ledger_and_chart(page, live_server, admin):
    log_in(page, live_server, admin.user.email)
    expect(page.get_by_text("No applications yet")).to_be_visible()
    page.get_by_role("button", name="New app from the starter").click()
    expect(page.get_by_role("heading", name="Simulate v1")).to_be_visible()

    expect(page.locator("#definition-editor + .cm-editor")).to_be_visible()  # mounted: the label names it now
    editor = page.get_by_label("Definition JSON")
    editor.fill(json.dumps(sample_definition(name="Parcel claims", charts=CHARTS), indent=2))
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_text("Saved version 2 as a draft")).to_be_visible()

    simulate = page.locator("#simulate-form")
    simulate.get_by_label("Title").fill("Lost parcel")
    simulate.get_by_label("Amount").fill("250")
    simulate.get_by_role("button", name="Simulate").click()
    expect(page.locator("#simulation")).to_contain_text("Big orders are high priority")
    expect(page.locator("#simulation")).to_contain_text("matched")

    page.get_by_role("button", name="Publish v2…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("extension.records.transform")
    dialog.get_by_label("I confirm these permissions").check()
    dialog.get_by_role("button", name="Publish").click()
    expect(page.get_by_text("Version 2 is live.")).to_be_visible()

    ledger = submit_a_record(page, 2, "Crushed box", "120")
    expect(ledger).to_contain_text("Crushed box")
    expect(ledger).to_contain_text("high")
    expect(page.get_by_role("img", name="Requests by priority")).to_be_visible()
    expect(page.get_by_role("link", name="Studio apps").first).to_be_visible()


def test_publishing_works_by_keyboard_alone(page, live_server, admin, api, draft_app):
    api.simulate(draft_app)
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/{draft_app}")
    opener = page.get_by_role("button", name="Publish v1…")
    opener.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    opener.focus()
    page.keyboard.press("Enter")
    dialog.get_by_label("I confirm these permissions").focus()
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_text("Version 1 is live.")).to_be_visible()
    expect(submit_a_record(page, 1, "Published by keyboard", "5")).to_contain_text("Published by keyboard")


def test_publish_needs_the_confirmation_box_in_the_browser(page, live_server, admin, api, draft_app):
    api.simulate(draft_app)
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/{draft_app}")
    page.get_by_role("button", name="Publish v1…").click()
    page.get_by_role("dialog").get_by_role("button", name="Publish").click()
    expect(page.get_by_role("dialog")).to_be_visible()  # the browser refuses the unticked required box
    page.reload()
    expect(page.get_by_text("Publish a version to collect records.")).to_be_visible()
    expect(page.get_by_text("Submit a record to v1")).to_have_count(0)


def test_script_errors_point_at_their_line_and_code_needs_its_own_confirmation(page, live_server, admin,
                                                                                draft_app, runner):
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/{draft_app}")
    expect(page.locator("#script-editor + .cm-editor")).to_be_visible()  # mounted: the label names it now
    script = page.get_by_label("Script (optional)")
    script.fill("const doubled = (input.amount ?? 0) * 2;\nreturn {amount: doubled, title: missing};")
    expect(page.locator("#script-editor + .cm-editor .cm-lineNumbers")).to_contain_text("2")  # the editor's gutter
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_text("Saved version 2 as a draft")).to_be_visible()

    simulate = page.locator("#simulate-form")
    simulate.get_by_label("Title").fill("Parcel")
    simulate.get_by_label("Amount").fill("21")
    simulate.get_by_role("button", name="Simulate").click()
    expect(page.locator("#simulation")).to_contain_text("The script failed on line 2")
    page.get_by_role("button", name="Show line 2 in the script").click()
    expect(script).to_be_focused()
    assert page.evaluate("getSelection().toString()") == "return {amount: doubled, title: missing};"

    script.fill("return {amount: (input.amount ?? 0) * 2};")
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_text("Saved version 3 as a draft")).to_be_visible()
    simulate.get_by_label("Title").fill("Parcel")
    simulate.get_by_label("Amount").fill("21")
    simulate.get_by_role("button", name="Simulate").click()
    expect(page.locator("#simulation")).to_contain_text("Data after rules and script")
    expect(page.locator("#simulation")).to_contain_text("42")

    page.get_by_role("button", name="Publish v3…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator("pre.code")).to_have_text("return {amount: (input.amount ?? 0) * 2};")
    dialog.get_by_label("I confirm these permissions").check()
    dialog.get_by_role("button", name="Publish").click()
    expect(dialog).to_be_visible()  # the script box is a separate, required confirmation
    dialog.get_by_label("I reviewed and confirm this script").check()
    dialog.get_by_role("button", name="Publish").click()
    expect(page.get_by_text("Version 3 is live.")).to_be_visible()
    expect(submit_a_record(page, 3, "Doubled", "21")).to_contain_text("42")  # the live script ran
