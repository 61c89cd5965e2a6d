"""An administrator builds, previews, binds and publishes an automation rule in a real browser."""
import copy
import re

from playwright.sync_api import expect

from core.db import db
from rules import service
from rules.catalog import AUTOMATION_PREVIEW_EXAMPLE
from tests.conftest import seat
from tests.support.browser import log_in
from tests.support.generation import rule_answer


def test_rotation_template_edit_preview_save_bind_and_publish(page, live_server, tenant, admin, continuous_switches):
    agents = [seat(tenant, "agent") for _ in range(3)]
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/automation")
    expect(page.get_by_text("No automation rules yet")).to_be_visible()
    page.get_by_role("link", name="New rule from the rotation template").click()
    expect(page.get_by_role("heading", name="New rule")).to_be_visible()
    page.wait_for_load_state()  # htmx is ready: the row buttons below swap partials
    expect(page.locator("#rule-keywords")).to_be_hidden()  # the filter is "none"

    # Edit the slots: a third one for the weekend (added by htmx), and the second one moves to 13:30.
    page.get_by_role("button", name="Add a slot").click()
    third = page.get_by_role("group", name="Slot 3")
    expect(third).to_be_visible()
    expect(third.get_by_label("Mon")).to_be_focused()
    third.get_by_label("Sat").check()
    third.get_by_label("Sun").check()
    third.get_by_label("Time").fill("10:00")
    third.get_by_label("Placeholder before binding").fill("Agent C")
    page.get_by_role("group", name="Slot 2").get_by_label("Time").fill("13:30")

    # Preview on samples at Saturday 11:00 Beijing time: the weekend slot is in effect.
    page.get_by_label("Sample 1 text").fill("Where is my parcel?")
    page.get_by_role("button", name="Add a sample").click()
    expect(page.get_by_label("Sample 3 id")).to_be_focused()  # the new row takes the focus
    page.get_by_label("Sample 3 text").fill("Thanks, solved")
    page.get_by_label("Sample 3 status").select_option("resolved")
    page.get_by_label("Paste samples").fill("pending\tMy kettle broke")
    page.get_by_label("Instant").fill("2026-11-28T11:00")
    page.get_by_role("button", name="Preview").click()
    result = page.locator("#preview-result")
    expect(result).to_contain_text("Executed: no — nothing was read or changed")
    expect(result).to_contain_text("Planned: 3 of 4")
    expect(result).to_contain_text("slot Sat 10:00")
    expect(result).to_contain_text("Agent C")
    expect(result).to_contain_text("Resolved: never takes part")
    expect(page.locator("#preview-next-times li").first).to_have_text("2026-11-29 Sun 10:00")
    expect(result).to_contain_text("Beijing time, UTC+08:00")

    # Save: the placeholders must be bound first; the error sits at the first slot.
    page.get_by_role("button", name="Save rule").click()
    first = page.get_by_role("group", name="Slot 1")
    expect(first.get_by_role("alert")).to_contain_text("Bind this assignee")
    expect(first.get_by_role("alert")).to_contain_text("definition.slots[0].assignee_ref")
    expect(page.get_by_role("group", name="Slot 3").get_by_label("Time")).to_have_value("10:00")  # kept

    # Bind each slot to a bindable agent and save.
    for index, agent in enumerate(agents):
        page.get_by_role("group", name=f"Slot {index + 1}").get_by_label("Assignee").select_option(str(agent.id))
    page.get_by_role("button", name="Save rule").click()
    expect(page.get_by_text("Saved revision 1 as a draft")).to_be_visible()
    expect(page.get_by_role("heading", name="Weekday rotation")).to_contain_text("draft")

    # Publish: the permissions follow the chosen mode; the confirmation is explicit.
    page.get_by_role("button", name="Publish r1…").click()
    dialog = page.get_by_role("dialog")
    plan_only, scheduled = dialog.locator("#permissions-plan_only"), dialog.locator("#permissions-scheduled")
    expect(plan_only).to_be_visible()
    expect(plan_only).to_contain_text('"automation.schedule_plan"')
    expect(scheduled).to_be_hidden()
    expect(dialog.get_by_label("Message-triggered assignment", exact=False)).to_be_disabled()
    dialog.get_by_label("Scheduled assignment", exact=False).check()
    expect(scheduled).to_be_visible()
    expect(scheduled).to_contain_text('"conversation.assign_scheduled"')
    expect(plan_only).to_be_hidden()
    dialog.get_by_role("button", name="Publish").click()
    expect(dialog).to_be_visible()  # the browser refuses the unticked required box
    dialog.get_by_label("I confirm the permissions of the chosen mode").check()
    dialog.get_by_role("button", name="Publish").click()
    expect(page.get_by_text("Revision 1 is published: scheduled assignment")).to_be_visible()
    expect(page.get_by_role("heading", name="Weekday rotation")).to_contain_text("published r1")

    page.get_by_role("link", name="← Automation rules").click()
    row = page.locator("#rule-list").get_by_role("row", name=re.compile("Weekday rotation"))
    expect(row).to_contain_text("Scheduled assignment")
    expect(row).to_contain_text("published r1")
    scheduled = page.locator("#scheduled-rules").get_by_role("row", name=re.compile("Weekday rotation"))
    expect(scheduled).to_contain_text("r1")  # the scheduler card lists it with its next slot
    expect(scheduled.locator("time")).to_have_count(1)


def _saved_weekly_rule(tenant, admin) -> str:
    """A weekly rule saved with both slots bound to one agent (revision 1); its id."""
    agent = seat(tenant, "agent")
    definition = copy.deepcopy(AUTOMATION_PREVIEW_EXAMPLE)
    for slot in definition["slots"]:
        slot["assignee_ref"] = str(agent.id)
    saved = service.save_rule(tenant.id, admin.user.id, definition)
    db.session.commit()
    return saved["rule_id"]


def test_publish_and_pause_dialogs_work_by_keyboard_alone(page, live_server, tenant, admin, continuous_switches):
    rule_id = _saved_weekly_rule(tenant, admin)
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/automation/{rule_id}")
    opener = page.get_by_role("button", name="Publish r1…")
    opener.focus()
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog")
    expect(dialog).to_be_visible()
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    opener.focus()
    page.keyboard.press("Enter")
    expect(dialog.get_by_label("Read-only plans")).to_be_focused()
    page.keyboard.press("ArrowDown")  # the next mode: scheduled assignment
    expect(dialog.get_by_label("Scheduled assignment", exact=False)).to_be_checked()
    expect(dialog.locator("#permissions-scheduled")).to_be_visible()
    page.keyboard.press("Tab")
    expect(dialog.get_by_label("I confirm the permissions of the chosen mode")).to_be_focused()
    page.keyboard.press("Space")
    page.keyboard.press("Tab")
    expect(dialog.get_by_role("button", name="Publish")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_text("Revision 1 is published: scheduled assignment")).to_be_visible()
    page.wait_for_load_state("load")  # the reloaded page's script opens dialogs: wait until it ran

    pause = page.get_by_role("button", name="Pause rule…")
    pause.focus()
    page.keyboard.press("Enter")
    confirm = page.get_by_role("dialog").get_by_role("button", name="Pause rule")
    expect(confirm).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("dialog")).to_be_hidden()
    pause.focus()
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_contain_text("The rule is paused")
    expect(page.get_by_role("heading", name="Weekday rotation")).to_contain_text("paused (r1 kept)")


def test_an_ai_draft_fills_the_editor_without_saving(page, live_server, admin, model_server, generator_process):
    model_server.answer_json(rule_answer())
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/automation")
    page.get_by_role("link", name="Start from an AI draft").click()
    page.get_by_label("Routing requirement").fill("Rotate weekday conversations between two agents.")
    page.get_by_role("button", name="Draft a rule with AI").click()
    expect(page.get_by_text("AI draft — review it")).to_be_visible(timeout=20_000)
    expect(page.get_by_role("group", name="Slot 1").get_by_label("Placeholder before binding")).to_have_value("Agent A")
    expect(page.get_by_role("button", name="Save rule")).to_be_visible()
