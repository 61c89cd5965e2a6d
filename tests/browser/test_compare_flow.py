"""Comparing versions and publishing with the comparison in view (issue 38), in Chromium: an
administrator opens "Compare versions", reads each change in words, opens the collapsed unchanged
parts, publishes with a note that then shows in the versions list; in Chinese on a phone, the
comparison fits the screen and the rollback's confirmation says what it undoes; axe finds nothing."""
import copy
import re

from playwright.sync_api import expect

from tests.support.browser import PHONE, axe_violations, log_in
from tests.support.studio import sample_definition

NOTE = "Priority options renamed; notes field for the warehouse."


def two_versions(api) -> str:
    """v1 live; v2 simulated, renaming an option, adding a field and a script line."""
    before = sample_definition(code={"language": "javascript", "source": "const a = input.amount;\nreturn {};"})
    app_id = api.create(before)
    assert api.simulate(app_id, 1, {"title": "Sample", "amount": 5}).status_code == 200
    assert api.publish(app_id, code_confirmed=True).status_code == 200
    after = copy.deepcopy(before)
    after["fields"][2]["options"] = ["minor", "high"]
    after["fields"].append({"key": "notes", "label": "Notes", "type": "textarea", "required": False})
    after["code"]["source"] = "const a = input.amount;\nconst b = a * 2;\nreturn {};"
    assert api.post(f"/{app_id}/versions", {"definition": after}).status_code == 201
    assert api.simulate(app_id, 2, {"title": "Sample", "amount": 5}).status_code == 200
    return app_id


def test_compare_then_publish_with_a_note(page, live_server, admin, api, runner):
    app_id = two_versions(api)
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/{app_id}")
    expect(page.get_by_label("From version", exact=True)).to_have_value("1")
    expect(page.get_by_label("To version", exact=True)).to_have_value("2")
    page.get_by_role("button", name="Compare versions").click()

    expect(page.get_by_role("heading", name="From v1 to v2")).to_be_visible()
    fields = page.get_by_role("region", name="Fields")
    expect(fields.get_by_role("listitem").filter(has_text="Field “Priority” · Options")).to_contain_text(
        re.compile(r"Added\s*“minor”\s*Removed\s*“low”"))
    expect(fields.get_by_role("listitem").filter(has_text="Field “Notes”")).to_contain_text("Added")
    script = page.get_by_role("region", name="Script")
    expect(script.get_by_role("row").filter(has_text="const b = a * 2;")).to_contain_text("+ Added")
    unchanged = page.get_by_text("4 unchanged")
    expect(page.get_by_role("listitem").filter(has_text="Field “Amount”")).to_be_hidden()
    unchanged.click()
    expect(page.get_by_role("listitem").filter(has_text="Field “Amount”")).to_be_visible()
    assert axe_violations(page) == []

    page.get_by_role("link", name="← Service request").click()
    page.get_by_role("button", name="Publish v2…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("heading", name="Changes against the live version (v1 → v2)")).to_be_visible()
    expect(dialog.get_by_role("listitem").filter(has_text="Field “Notes”")).to_contain_text("Added")
    dialog.get_by_label("Publish note").fill(f"  {NOTE}  ")
    dialog.get_by_label("I confirm these permissions").check()
    dialog.get_by_label("I reviewed and confirm this script").check()
    dialog.get_by_role("button", name="Publish").click()
    expect(page.get_by_text("Version 2 is live.")).to_be_visible()
    expect(page.get_by_role("row", name="v2").get_by_role("cell", name=NOTE, exact=True)).to_be_visible()


def test_in_chinese_on_a_phone_the_comparison_fits_and_a_rollback_says_what_it_undoes(
        browser, live_server, admin, api, runner):
    app_id = two_versions(api)
    assert api.publish(app_id, 2, 1, code_confirmed=True).status_code == 200
    context = browser.new_context(locale="zh-CN", viewport=PHONE)
    page = context.new_page()
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/{app_id}")
    page.get_by_role("button", name="比较版本").click()
    expect(page.get_by_role("heading", name="从 v1 到 v2")).to_be_visible()
    expect(page.get_by_role("region", name="字段").get_by_role("listitem").filter(
        has_text="字段“Notes”")).to_contain_text("新增")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    assert axe_violations(page) == []

    page.goto(f"{live_server}/extensions/{app_id}?version=1")
    page.get_by_role("button", name="回滚到 v1…").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_role("heading", name="回滚将撤销的改动（v2 → v1）")).to_be_visible()
    expect(dialog.get_by_role("listitem").filter(has_text="字段“Notes”")).to_contain_text("删除")
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    context.close()
