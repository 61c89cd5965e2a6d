"""An administrator drafts an application with the model in a real browser."""
import re
from datetime import timedelta

from playwright.sync_api import expect

from core.clock import utcnow
from core.db import db
from studio import quota
from desk.models import KnowledgeDocument
from tests.support.browser import log_in
from tests.support.generation import UNSUPPORTED, app_answer
from tests.support.studio import sample_definition

REQUIREMENT = "Log warranty claims with product and amount."


def test_a_generated_draft_opens_in_the_editor_with_the_draft_banner(page, live_server, admin, model_server,
                                                                     generator_process):
    model_server.answer_json(app_answer(sample_definition(name="Warranty claims")))
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions")
    page.get_by_role("link", name="Generate a draft with AI").click()
    expect(page.locator("#quota-state")).to_contain_text("20 of 20 generations left")
    page.get_by_label("Requirement").fill(REQUIREMENT)
    expect(page.locator("#prompt-counter")).to_contain_text(f"{len(REQUIREMENT)} / 3000")
    page.get_by_role("button", name="Generate draft").click()
    expect(page.get_by_text("Draft — simulate and review before publishing")).to_be_visible(timeout=20_000)
    expect(page.get_by_label("Definition JSON")).to_contain_text("Warranty claims")


def test_an_unsupported_requirement_lists_what_is_missing_by_label(page, live_server, admin, model_server,
                                                                  generator_process):
    model_server.answer_json(UNSUPPORTED)
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/generate")
    page.get_by_label("Requirement").fill("Refund the customer when a claim is approved.")
    page.get_by_role("button", name="Generate draft").click()
    expect(page.locator("#missing-labels")).to_contain_text("Refund the customer's payment", timeout=20_000)
    expect(page.get_by_text("No application was created.")).to_be_visible()


def test_the_knowledge_selector_loads_metadata_only_when_opened_and_says_why_a_document_is_unusable(
        page, live_server, admin, tenant, model_server):
    for title, status in (("Warranty policy", "published"), ("Holiday hours", "draft")):
        db.session.add(KnowledgeDocument(tenant_id=tenant.id, title=title, body="Text.", status=status,
                                         safe_processed=status == "published", safe_body="Text.",
                                         valid_until=utcnow() + timedelta(days=30)))
    db.session.commit()
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/generate")
    expect(page.get_by_text("Open to load the documents.")).to_be_attached()
    page.get_by_text("Knowledge reference").click()
    expect(page.get_by_label("Warranty policy v1")).to_be_enabled()
    expect(page.get_by_label("Holiday hours v1")).to_be_disabled()
    expect(page.locator("#knowledge-options")).to_contain_text("knowledge_not_published")


def test_without_a_model_the_page_says_so_and_offers_no_generate_button(page, live_server, admin):
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/generate")
    expect(page.get_by_text("No model is configured for this platform.")).to_be_visible()
    expect(page.get_by_role("button", name="Generate draft")).to_have_count(0)


def test_a_waiting_tenant_sees_when_it_may_generate_again_on_a_phone_without_sideways_scrolling(
        page, live_server, admin, tenant, model_server, rate_window):
    rate_window()  # a long window: the minute cannot roll over before the page shows the wait
    quota.release_slot(quota.reserve_generation(tenant.id, False).slot_token)
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/generate")
    expect(page.locator("#quota-state")).to_contain_text(re.compile(r"Next generation allowed at "
                                                                   r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d Beijing time"))
    expect(page.get_by_label("Requirement")).to_be_editable()
    expect(page.get_by_role("button", name="Generate draft")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def test_text_typed_before_the_page_script_runs_is_counted(page, live_server, admin, model_server):
    log_in(page, live_server, admin.user.email)
    held = []
    page.route("**/static/js/app.js*", lambda route: held.append(route))  # the script waits for the text
    with page.expect_request("**/static/js/app.js*"):
        page.goto(f"{live_server}/extensions/generate", wait_until="commit")
    page.get_by_label("Requirement").fill(REQUIREMENT)
    held[0].continue_()
    expect(page.locator("#prompt-counter")).to_contain_text(f"{len(REQUIREMENT)} / 3000")
