"""The availability page as an administrator uses it, in English and in Chinese on a 390 px phone: from
the console's navigation, see the waiting queue, save the policy (the release delay appears only with
its choice), import a year's calendar through the "Import calendar (CSV)" file input, see a bad line of
an agent's shifts named and save them in place (htmx, the focus kept); the page never scrolls sideways
and axe-core finds nothing."""
import pytest
from playwright.sync_api import expect

from core.db import db
from desk.availability import calendar_of, policy_of
from desk.availability_models import WaitingConversation
from desk.models import Member
from tests.conftest import customer_conversation
from tests.support.browser import PHONE, axe_violations, log_in, settled

CSV = "\ufeffdate,kind,name,as_weekday\n2026-10-01,holiday,国庆节,\n2026-10-10,workday,国庆节调休,5\n".encode()
# The names a person finds the controls by, in each language.
WORDS = {
    "en-US": {"nav": "Availability", "enabled": "Enabled", "capacity": "Default capacity",
              "offline": "Offline policy", "release_choice": "Release them after a delay",
              "release": "Release after minutes", "save_policy": "Save the policy",
              "saved_policy": "Saved the availability policy.",
              "import": "Import calendar (CSV)", "import_button": "Import and replace the calendar",
              "workday": "Make-up workday", "change": "Change the capacity, shifts and leave of Agent Person",
              "shifts": "Shifts", "save_schedule": "Save the schedule of Agent Person", "saved": "Saved.",
              "bad_line": "Shifts, line 2:", "fri": "Fri"},
    "zh-CN": {"nav": "可用状态", "enabled": "已启用", "capacity": "默认容量", "offline": "离线策略",
              "release_choice": "延时后释放", "release": "离线释放分钟数", "save_policy": "保存策略",
              "saved_policy": "已保存可用性策略。", "import": "导入日历（CSV）", "import_button": "导入并替换日历",
              "workday": "调休工作日", "change": "修改 Agent Person 的容量、班次和休假", "shifts": "班次",
              "save_schedule": "保存 Agent Person 的排班", "saved": "已保存。", "bad_line": "班次第 2 行：",
              "fri": "周五"},
}


def fits(page) -> bool:
    """Whether the page is no wider than the screen."""
    return page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


@pytest.mark.parametrize("locale", ["en-US", "zh-CN"])
def test_an_administrator_sets_availability_up_on_a_phone(browser, live_server, tenant, admin, agent, locale):
    words = WORDS[locale]
    waiting = customer_conversation(tenant, name="Wang Fang")
    db.session.add(WaitingConversation(tenant_id=tenant.id, conversation_id=waiting.id, preferred_member_id=agent.id,
                                       reason_code="agent_offline"))
    db.session.commit()
    context = browser.new_context(locale=locale, viewport=PHONE)
    page = context.new_page()
    log_in(page, live_server, admin.user.email)
    page.get_by_role("navigation").get_by_role("link", name=words["nav"]).click()
    expect(page).to_have_url(f"{live_server}/availability")
    queued = page.get_by_role("row").filter(has_text="Wang Fang").get_by_role("link", name="Wang Fang")
    expect(queued).to_have_attribute("href", f"/workbench/conversations/{waiting.id}")
    assert fits(page)

    release = page.get_by_label(words["release"])
    expect(release).to_be_hidden()  # it belongs to one choice alone
    page.get_by_label(words["enabled"]).check()
    page.get_by_label(words["capacity"]).fill("5")
    page.get_by_label(words["offline"]).select_option(label=words["release_choice"])
    expect(release).to_be_visible()
    release.fill("45")
    page.get_by_role("button", name=words["save_policy"]).click()
    expect(page.get_by_role("status").filter(has_text=words["saved_policy"])).to_be_visible()
    expect(page.get_by_label(words["enabled"])).to_be_checked()
    assert policy_of(tenant.id) == {"enabled": True, "default_capacity": 5, "fallback_after_minutes": 5,
                                    "no_reply_minutes": None, "offline_policy": "release_after",
                                    "release_after_minutes": 45}

    page.get_by_label(words["import"]).set_input_files(files=[{"name": "2026.csv", "mimeType": "text/csv",
                                                               "buffer": CSV}])
    page.get_by_role("button", name=words["import_button"]).click()
    row = page.get_by_role("row").filter(has_text="国庆节调休")
    expect(row.get_by_role("cell")).to_have_text(["2026-10-10", words["workday"], "国庆节调休", words["fri"]])
    assert len(calendar_of(tenant.id)) == 2 and fits(page)

    member, imported_at = page.locator(f"#member-{agent.id}"), page.url
    member.get_by_text(words["change"]).click()
    shifts = member.get_by_label(words["shifts"], exact=True)
    shifts.fill("1-5 09:00-18:00\nevenings")
    member.get_by_role("button", name=words["save_schedule"]).click()
    expect(member.get_by_role("alert")).to_contain_text(words["bad_line"])
    settled(page)  # the refused row was swapped in: htmx wires its form up when the swap settles
    shifts.fill("1-5 09:00-18:00\n6,7 22:00-06:00")  # the same control: the refusal kept its id
    member.get_by_role("button", name=words["save_schedule"]).press("Enter")
    expect(member.get_by_role("status")).to_have_text(words["saved"])
    expect(member.get_by_role("button", name=words["save_schedule"])).to_be_focused()  # kept through the swap
    expect(page).to_have_url(imported_at)  # swapped in by htmx, not a page load
    db.session.expire_all()
    assert [shift["weekdays"] for shift in db.session.get(Member, agent.id).shifts] == [[1, 2, 3, 4, 5], [6, 7]]
    assert fits(page) and axe_violations(page) == []
    context.close()
