"""The definition and script editors (CodeMirror 6 over the form's textareas), as an administrator
uses them: what is typed is what the form submits, the validator's path becomes a marker on the
exact property, a script over its limit is flagged before it is sent, Tab leaves the editor, and
the page breaks no content-security rule and no WCAG 2 A/AA rule."""
import json
import uuid

from playwright.sync_api import expect
from sqlalchemy import select

from core.db import db
from studio.catalog import LIMITS
from studio.models import StudioVersion
from tests.support.browser import axe_violations, log_in
from tests.support.studio import sample_definition


def _open(page, live_server, admin, app_id):
    violations = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    log_in(page, live_server, admin.user.email)
    page.goto(f"{live_server}/extensions/{app_id}")
    expect(page.locator(".cm-editor")).to_have_count(2)
    return violations


def _versions(app_id: str) -> list[StudioVersion]:
    db.session.rollback()
    return list(db.session.scalars(select(StudioVersion).where(StudioVersion.app_id == uuid.UUID(app_id))
                                   .order_by(StudioVersion.version)))


def test_what_is_typed_is_what_the_form_submits(page, live_server, admin, draft_app):
    violations = _open(page, live_server, admin, draft_app)
    script = page.get_by_role("textbox", name="Script (optional)")
    script.click()
    page.keyboard.type("return {amount: 2};")
    expect(page.locator("#script-counter")).to_contain_text("19 of 8,000")
    page.get_by_role("button", name="Save as new version").click()
    expect(page.get_by_text("Saved version 2 as a draft")).to_be_visible()
    assert _versions(draft_app)[-1].definition["code"]["source"] == "return {amount: 2};"
    assert violations == [] and axe_violations(page) == []


def test_an_unknown_property_is_marked_on_its_line_after_saving(page, live_server, admin, draft_app):
    _open(page, live_server, admin, draft_app)
    definition = sample_definition()
    definition["fields"][1]["colour"] = "red"
    text = json.dumps(definition, indent=2)
    editor = page.get_by_role("textbox", name="Definition JSON")
    editor.fill(text)
    page.get_by_role("button", name="Save as new version").click()
    expect(page.locator("#editor-error")).to_contain_text("fields[1].colour")
    marked = page.locator("#definition-editor + .cm-editor .cm-lintRange-error")
    expect(marked).to_have_text('"colour"')
    line = next(number for number, row in enumerate(text.splitlines(), 1) if '"colour"' in row)
    shown_on = marked.evaluate("e => { const view = document.getElementById('definition-editor').editorView;"
                               " return view.state.doc.lineAt(view.posAtDOM(e)).number; }")
    assert shown_on == line  # the marker sits on the property's own line
    expect(page.locator("#definition-editor + .cm-editor .cm-lint-marker-error")).to_have_count(1)
    assert len(_versions(draft_app)) == 1  # nothing was saved


def test_a_script_over_its_limit_is_flagged_before_it_is_sent(page, live_server, admin, draft_app):
    _open(page, live_server, admin, draft_app)
    limit = LIMITS["script_source_chars"]
    script = page.get_by_role("textbox", name="Script (optional)")
    script.fill("// " + "x" * (limit - 2))
    expect(page.locator("#script-counter")).to_contain_text(f"{limit + 1:,} of {limit:,}")
    expect(page.locator("#script-editor + .cm-editor .cm-lintRange-error")).to_have_count(1)
    page.get_by_role("button", name="Save as new version").click()
    expect(script).to_be_focused()  # the save was held back, the editor shows why
    page.wait_for_timeout(300)
    assert len(_versions(draft_app)) == 1


def test_tab_leaves_the_editor(page, live_server, admin, draft_app):
    _open(page, live_server, admin, draft_app)
    editor = page.get_by_role("textbox", name="Definition JSON")
    editor.click()
    page.keyboard.press("Tab")
    expect(editor).not_to_be_focused()
    assert page.evaluate("document.activeElement.closest('.cm-editor') === null || "
                         "document.activeElement.closest('#definition-editor + .cm-editor') === null")
