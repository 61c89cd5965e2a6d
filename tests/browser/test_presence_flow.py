"""The Availability radios in the workbench header, as an agent uses them: a choice is saved on change
with no button and is still chosen after a reload, in English and in Chinese; the arrow keys move
through the choices, saving each; on a 390 px phone the header does not scroll sideways."""
import pytest
from playwright.sync_api import expect

from tests.support.browser import PHONE, log_in

# (locale, name of the group, the radios in order)
LANGUAGES = [("en-US", "Availability", ("Online", "Away", "Offline")), ("zh-CN", "可用状态", ("在线", "离开", "离线"))]


def open_workbench(browser, live_server, agent, locale: str, viewport=None):
    """An agent's workbench in a new browser context speaking `locale`."""
    context = browser.new_context(locale=locale, **({"viewport": viewport} if viewport else {}))
    page = context.new_page()
    log_in(page, live_server, agent.user.email)
    expect(page).to_have_url(f"{live_server}/workbench")
    page.wait_for_load_state()  # htmx has bound the control: a change is sent from now on
    return context, page


def choose(page, group, name: str) -> None:
    """Check the radio `name` and wait for the server's answer to the save it sends."""
    with page.expect_response(lambda answer: answer.url.endswith("/workbench/presence")) as saved:
        group.get_by_role("radio", name=name).check()
    assert saved.value.status == 200


@pytest.mark.parametrize("locale, group_name, names", LANGUAGES)
def test_the_agent_chooses_away_and_it_is_still_chosen_after_a_reload(browser, live_server, agent, locale,
                                                                       group_name, names):
    context, page = open_workbench(browser, live_server, agent, locale)
    online, away, offline = names
    group = page.get_by_role("radiogroup", name=group_name)
    expect(group.get_by_role("radio", name=online)).to_be_checked()
    expect(group.get_by_role("button")).to_have_count(0)  # saved on change: no button with JavaScript on
    choose(page, group, away)
    page.reload()
    group = page.get_by_role("radiogroup", name=group_name)
    expect(group.get_by_role("radio", name=away)).to_be_checked()
    expect(group.get_by_role("radio", name=online)).not_to_be_checked()
    expect(group.get_by_role("radio", name=offline)).not_to_be_checked()
    context.close()


def test_the_arrow_keys_move_through_the_choices_saving_each(browser, live_server, agent):
    context, page = open_workbench(browser, live_server, agent, "en-US")
    group = page.get_by_role("radiogroup", name="Availability")
    group.get_by_role("radio", name="Online").focus()
    group.evaluate("element => { element.dataset.swapped = 'not yet'; }")
    page.keyboard.press("ArrowRight")
    expect(page.locator("[data-swapped]")).to_have_count(0)  # the answer has replaced the control
    expect(group.get_by_role("radio", name="Away")).to_be_focused()  # kept through the swap
    with page.expect_response(lambda answer: answer.url.endswith("/workbench/presence")):
        page.keyboard.press("ArrowRight")
    expect(group.get_by_role("radio", name="Offline")).to_be_checked()
    page.reload()
    expect(page.get_by_role("radiogroup", name="Availability").get_by_role("radio", name="Offline")).to_be_checked()
    context.close()


@pytest.mark.parametrize("locale, group_name, names", LANGUAGES)
def test_on_a_phone_the_header_with_the_control_does_not_scroll_sideways(browser, live_server, agent, locale,
                                                                          group_name, names):
    context, page = open_workbench(browser, live_server, agent, locale, PHONE)
    group = page.get_by_role("radiogroup", name=group_name)
    expect(group).to_be_visible()
    choose(page, group, names[2])
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    context.close()
