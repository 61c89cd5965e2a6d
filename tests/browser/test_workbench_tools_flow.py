"""Studio forms in the workbench, in a real browser: an administrator adds an app, agents submit
its form from the side panel, share customer data item by item, analyze intent and choose a style;
axe-core checks the page at desktop and phone sizes."""
import re

import pytest
from playwright.sync_api import expect
from sqlalchemy import func, select

from core.db import db
from desk.models import AiPointsEntry, Conversation, ConversationEvent, Customer, Message
from studio.models import StudioRecord
from tests.conftest import customer_conversation
from tests.support.browser import PHONE, axe_violations, log_in
from tests.support.studio import sample_definition
from tests.support.workbench_tools import OTHER, PROFILE, WORKBENCH, publish_live

DEFINITION = sample_definition(workbench=WORKBENCH, intent={"labels": ["退款", "投诉"]})


@pytest.fixture
def agent_page(browser, live_server, agent):
    """The agent, logged in, in a context that may use the clipboard."""
    context = browser.new_context(locale="en-US", permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    log_in(page, live_server, agent.user.email)
    yield page
    context.close()


@pytest.fixture
def added(page, live_server, admin, api) -> str:
    """A live application the administrator added to the workbench by its button."""
    app_id = publish_live(api, DEFINITION)
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/{app_id}")
    page.get_by_role("button", name="Add to workbench").click()
    expect(page.get_by_role("button", name="Remove from workbench")).to_be_visible()
    return app_id


def _open(page, base: str, conversation: Conversation):
    page.goto(f"{base}/workbench/conversations/{conversation.id}")
    return page.get_by_role("region", name="Refund desk")


def _count(model) -> int:
    db.session.rollback()
    return db.session.scalar(select(func.count()).select_from(model))


def test_an_agent_submits_the_added_form_and_the_administrator_sees_it_in_the_ledger(
        page, agent_page, live_server, added, agent, tenant):
    conversation = customer_conversation(tenant, "I want my money back", **PROFILE)
    tool = _open(agent_page, live_server, conversation)
    tool.get_by_label("Title").fill("Refund for order 42")
    tool.get_by_label("Amount").fill("180")
    key = tool.locator("input[name=idempotency_key]").input_value()
    tool.get_by_role("button", name="Save", exact=True).click()
    expect(agent_page.get_by_role("region", name="Refund desk")).to_contain_text("Record saved.")
    replay = agent_page.evaluate("""async ([url, key, conversation]) => {
        const body = new URLSearchParams({csrf_token: document.querySelector('meta[name=csrf-token]').content,
            conversation_id: conversation, version: '1', idempotency_key: key, f_title: 'Refund for order 42',
            f_amount: '180'});
        const answer = await fetch(url, {method: 'POST', body, headers: {'HX-Request': 'true'}});
        return await answer.text();
    }""", [f"/workbench/apps/{added}/records", key, str(conversation.id)])
    assert "This submission was already saved." in replay and _count(StudioRecord) == 1
    page.goto(f"{live_server}/extensions/{added}")
    ledger = page.get_by_role("region", name=re.compile("Ledger"))
    row = ledger.get_by_role("row", name=re.compile("Refund for order 42"))
    expect(row).to_contain_text(agent.display_name)
    expect(row.get_by_role("link", name=PROFILE["name"])).to_be_visible()
    expect(row).to_contain_text("high")  # the workflow rule ran on the panel's submission
    refused = agent_page.goto(f"{live_server}/extensions/{added}")
    assert refused.status == 403 and "Refund for order 42" not in agent_page.content()


def test_customer_data_is_shared_item_by_item_for_the_selected_customer_only(agent_page, live_server, added, tenant,
                                                                            api):
    first, second = customer_conversation(tenant, "I want my money back", **PROFILE), customer_conversation(tenant, "I want my money back", **OTHER)
    tool = _open(agent_page, live_server, first)
    expect(tool).not_to_contain_text(PROFILE["support_note"])  # the plain form until the agent shares
    share = tool.get_by_role("group", name="Share customer data with this form")
    share.get_by_role("checkbox", name="Name").check()
    share.get_by_role("checkbox", name="Internal note").check()
    share.get_by_role("button", name="Save data sharing").click()
    tool = agent_page.get_by_role("region", name="Refund desk")
    expect(tool).to_contain_text(PROFILE["support_note"])
    expect(tool.get_by_role("button", name="Copy contact data")).to_have_count(0)
    expect(tool).not_to_contain_text(PROFILE["phone"])
    tool.get_by_role("button", name="Copy name").click()
    assert agent_page.evaluate("navigator.clipboard.readText()") == PROFILE["name"]
    assert tool.get_by_label("Title").input_value() == ""  # never pre-filled
    tool = _open(agent_page, live_server, second)
    expect(tool).to_contain_text(OTHER["support_note"])
    expect(tool).not_to_contain_text(PROFILE["support_note"])
    tool.get_by_role("button", name="Revoke data authorization").click()
    tool = agent_page.get_by_role("region", name="Refund desk")
    expect(tool).to_contain_text("Data authorization revoked")
    expect(tool).not_to_contain_text(OTHER["support_note"])
    share = tool.get_by_role("group", name="Share customer data with this form")
    share.get_by_role("checkbox", name="Contact data").check()
    share.get_by_role("button", name="Save data sharing").click()
    expect(agent_page.get_by_role("region", name="Refund desk")).to_contain_text(OTHER["email"])
    publish_live(api, DEFINITION, app_id=added)  # a new live version asks again
    tool = _open(agent_page, live_server, second)
    expect(tool.get_by_role("checkbox", name="Contact data")).not_to_be_checked()
    expect(tool).not_to_contain_text(OTHER["email"])


def test_intent_analysis_asks_for_confirmation_and_writes_nothing(agent_page, live_server, added, tenant,
                                                                 model_server):
    conversation = customer_conversation(tenant, "I want my money back", **PROFILE)
    tool = _open(agent_page, live_server, conversation)
    tool.get_by_role("button", name="Analyze intent").click()
    dialog = agent_page.get_by_role("dialog", name="Analyze intent")
    expect(dialog).to_contain_text("uses AI points")
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_be_hidden()
    assert model_server.received == []
    before = [_count(m) for m in (Message, ConversationEvent, Conversation, Customer, StudioRecord)]
    model_server.answer_json({"label": "退款", "confidence": 0.91})
    tool.get_by_role("button", name="Analyze intent").click()
    agent_page.get_by_role("dialog", name="Analyze intent").get_by_role("button", name="Confirm analysis").click()
    result = agent_page.get_by_role("region", name="Refund desk").get_by_role("status")
    expect(result.filter(has_text="Intent: 退款")).to_contain_text("Needs human review")
    assert [_count(m) for m in (Message, ConversationEvent, Conversation, Customer, StudioRecord)] == before
    assert _count(AiPointsEntry) == 1 and len(model_server.received) == 1


def test_the_style_selector_switches_theme_and_density_and_restores_defaults(agent_page, live_server, added, tenant):
    conversation = customer_conversation(tenant, "I want my money back", **PROFILE)
    _open(agent_page, live_server, conversation)
    workbench = agent_page.locator("#workbench")
    agent_page.get_by_label("Workbench style").select_option(label="Refund desk")
    agent_page.get_by_role("button", name="Apply style").click()
    expect(workbench).to_have_class(re.compile(r"\bwb-theme-emerald\b.*\bwb-density-compact\b"))
    accent = agent_page.get_by_role("button", name="Send").evaluate("b => getComputedStyle(b).backgroundColor")
    assert accent == "rgb(4, 120, 87)"  # the emerald accent, from the fixed class
    expect(agent_page.get_by_role("button", name="Log out")).to_be_visible()
    agent_page.reload()
    expect(agent_page.get_by_label("Workbench style")).to_have_value(added)  # remembered
    agent_page.get_by_role("button", name="Restore defaults").click()
    expect(workbench).to_have_class("workbench")
    expect(agent_page.get_by_label("Workbench style")).to_have_value("")


def test_removing_the_app_closes_the_open_panels_next_submission(page, agent_page, live_server, added, tenant):
    conversation = customer_conversation(tenant, "I want my money back", **PROFILE)
    tool = _open(agent_page, live_server, conversation)
    tool.get_by_label("Title").fill("Too late")
    page.get_by_role("button", name="Remove from workbench").click()
    expect(page.get_by_role("button", name="Add to workbench")).to_be_visible()
    tool.get_by_role("button", name="Save", exact=True).click()
    expect(agent_page.get_by_role("alert").filter(has_text="no longer in the workbench")).to_be_visible()
    assert _count(StudioRecord) == 0


def test_a_phone_opens_the_customer_drawer_first_with_the_profile_above_the_tools(agent_page, live_server, added,
                                                                                  tenant):
    conversation = customer_conversation(tenant, "I want my money back", **PROFILE)
    agent_page.set_viewport_size(PHONE)
    tool = _open(agent_page, live_server, conversation)
    expect(agent_page.get_by_role("complementary", name="Customer details")).to_be_visible()
    expect(tool).to_be_visible()
    profile_top = agent_page.locator("#customer-details").bounding_box()["y"]
    assert profile_top < tool.bounding_box()["y"]  # before_profile on wide screens; the profile first here
    assert agent_page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


@pytest.mark.parametrize("size", [None, PHONE], ids=["desktop", "phone"])
def test_axe_finds_no_wcag_violation_on_the_workbench_with_a_panel_open(agent_page, live_server, added, tenant,
                                                                        size):
    conversation = customer_conversation(tenant, "I want my money back", **PROFILE)
    if size:
        agent_page.set_viewport_size(size)
    tool = _open(agent_page, live_server, conversation)
    share = tool.get_by_role("group", name="Share customer data with this form")
    share.get_by_role("checkbox", name="Name").check()
    share.get_by_role("button", name="Save data sharing").click()
    expect(agent_page.get_by_role("button", name="Copy name")).to_be_visible()
    assert axe_violations(agent_page) == []
