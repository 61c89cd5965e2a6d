"""Comparing versions on the console page and before publishing (issue 38): the two versions picked
(by default the live one against the newest), each change in words ("Added", "Removed", "Changed")
under its section, the script as a line diff, unchanged parts collapsed, both languages; the publish
confirmation's comparison with the live version ("First publication" when none) and what a rollback
undoes; publish notes — trimmed, at most 400 characters, kept on the version and in the audit entry,
shown in the versions list and the comparison, and refused by the JSON publish as any extra property."""
import copy
import html
import re

import pytest
from sqlalchemy import select

from core.audit import AuditEntry
from core.db import db
from studio.models import StudioApp, StudioVersion
from tests.conftest import csrf_from, seat
from tests.support.desk import browser_of
from tests.support.studio import SECTIONS, sample_definition

SAMPLE = {"title": "Sample", "amount": 5}  # what the sample script needs
RULE = {"name": "Urgent is high", "when": {"field": "urgent", "operator": "equals", "value": True},
        "then": {"field": "priority", "value": "high"}}


def _text(response) -> str:
    assert response.status_code == 200, response.status_code
    return re.sub(r"\s+", " ", html.unescape(response.get_data(as_text=True)))


def _form(client, path: str, data: dict, **kwargs):
    token = csrf_from(client.get("/extensions").get_data(as_text=True))
    return client.post(path, data={"csrf_token": token, **data}, **kwargs)


def _saved(api, app_id: str, definition: dict) -> int:
    answer = api.post(f"/{app_id}/versions", {"definition": definition})
    assert answer.status_code == 201, answer.get_json()
    return answer.get_json()["data"]["version"]


def _publish(client, app_id: str, version: int, expected: int | str = "", **extra):
    fields = {"version": str(version), "expected_active_version": str(expected), "confirm_permissions": "on",
              "code_confirmed": "on"}
    return _form(client, f"/extensions/{app_id}/publish", {**fields, **extra})


def _words(page: str) -> str:
    """The page's text as read aloud: tags gone, spaces collapsed."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def _changes(page: str) -> list[str]:
    """Each change's words: its kind and its subject."""
    return re.findall(r'<span class="change-kind">([^<]+)</span> <span class="change-subject">([^<]+)</span>', page)


@pytest.fixture
def edited(api, runner):
    """An application with every section (v1, live) and a draft v2 changing one thing in each."""
    before = sample_definition(**copy.deepcopy(SECTIONS))
    app_id = api.create(before)
    assert api.simulate(app_id, 1, SAMPLE).status_code == 200
    assert api.publish(app_id, code_confirmed=True).status_code == 200
    after = copy.deepcopy(before)
    after["page"]["submit_label"] = "Send"
    after["fields"][0]["label"] = "Subject"
    after["fields"][2]["options"] = ["minor", "high"]
    after["fields"].append({"key": "notes", "label": "Notes", "type": "textarea", "required": False})
    after["table_columns"] = ["priority", "title", "amount"]
    after["workflow"]["rules"].append(RULE)
    after["charts"][0]["type"] = "line"
    after["charts"][0]["group_by"] = "due"
    after["code"]["source"] = "const total = input.amount * 2;\nreturn {amount: total};"
    after["workbench"]["theme"] = "violet"
    after["intent"]["labels"] = ["refund", "complaint"]
    del after["actions"]
    assert _saved(api, app_id, after) == 2
    return app_id


def test_the_page_shows_each_kind_of_change_in_words(admin_client, edited):
    page = _text(admin_client.get(f"/extensions/{edited}/compare"))
    assert "From v1 to v2" in page
    assert _changes(page) == [
        ("Changed", "Submit button label"),
        ("Changed", "Field “Subject” · Label"),
        ("Changed", "Field “Priority” · Options"),
        ("Added", "Field “Notes”"),
        ("Changed", "Columns and their order"),
        ("Added", "Rule 2 “Urgent is high”"),
        ("Changed", "Chart “By priority” · Type"),
        ("Changed", "Chart “By priority” · Grouped by"),
        ("Changed", "Script · Source"),
        ("Changed", "Workbench settings · Theme"),
        ("Changed", "Intent labels · Labels"),
        ("Removed", "Actions")]
    assert "Before “Save” After “Send”" in _words(page)  # the values of a changed text
    # an option list's values before and after, and the ones it gained and lost
    assert "Before “low”, “high” After “minor”, “high” Added “minor” Removed “low”" in _words(page)
    assert "“Notes” (textarea; optional)" in _words(page)
    # each side in its own names: the first field was “Title” before
    assert "Before “Title”, “Priority”, “Amount” After “Priority”, “Subject”, “Amount”" in _words(page)
    assert "“Urgent is high”: if “Urgent” equals yes, then “Priority” = “high”" in _words(page)  # condition, result
    assert "Before “Priority” After “Due date”" in _words(page)  # a chart's group, by the field's label
    assert "“Notify the warehouse” (Kind: “http”; Fields: “Title”, “Amount”)" in _words(page)  # the removed action


def test_the_script_is_a_line_diff_with_the_change_in_words(admin_client, edited):
    page = admin_client.get(f"/extensions/{edited}/compare").get_data(as_text=True)
    rows = re.findall(r'<tr class="(line-\w+)">.*?<code>([^<]*)</code>', page, re.S)
    assert rows == [("line-removed", "const total = input.amount;"), ("line-added", "const total = input.amount * 2;"),
                    ("line-kept", "return {amount: total};")]
    assert '−<span class="visually-hidden"> Removed</span>' in page
    assert '+<span class="visually-hidden"> Added</span>' in page


def test_unchanged_parts_collapse(api, admin_client, edited):
    v3 = sample_definition(**copy.deepcopy(SECTIONS))
    v3["fields"][0]["label"] = "Subject"
    _saved(api, edited, v3)
    page = _text(admin_client.get(f"/extensions/{edited}/compare?from=1&to=3"))
    assert _changes(page) == [("Changed", "Field “Subject” · Label")]
    assert re.search(r'<details class="unchanged"> <summary>4 unchanged</summary> <ul><li>Field “Amount”</li>', page)
    assert ("<summary>Unchanged: Page texts, Table columns, Rules, Charts, Script, Workbench settings, Intent labels, "
            "Actions</summary>") in page


def test_a_version_against_itself_says_there_is_no_change(admin_client, edited):
    page = _text(admin_client.get(f"/extensions/{edited}/compare?from=2&to=2"))
    assert _changes(page) == [] and "No changes: both versions define the same application." in page


def test_the_pick_defaults_to_the_live_version_against_the_newest(api, admin_client, edited):
    page = admin_client.get(f"/extensions/{edited}").get_data(as_text=True)
    pick = page[page.index('class="compare-pick"'):page.index("</form>", page.index('class="compare-pick"'))]
    assert re.search(r'name="from">.*<option value="1" selected>v1 \(live\)', pick, re.S)
    assert re.search(r'name="to"><option value="2" selected>v2</option>', pick)
    assert ">Compare versions</button>" in pick
    assert "From v1 to v2" in _text(admin_client.get(f"/extensions/{edited}/compare"))
    assert api.simulate(edited, 2, SAMPLE).status_code == 200
    assert api.publish(edited, 2, 1, code_confirmed=True).status_code == 200
    assert "From v1 to v2" in _text(admin_client.get(f"/extensions/{edited}/compare"))  # newest live: the one before


def test_an_application_with_one_version_offers_no_comparison(admin_client, draft_app):
    assert 'class="compare-pick"' not in admin_client.get(f"/extensions/{draft_app}").get_data(as_text=True)
    assert "No changes" in _text(admin_client.get(f"/extensions/{draft_app}/compare"))


def test_the_page_in_chinese(admin_client, edited):
    page = _text(admin_client.get(f"/extensions/{edited}/compare", headers={"Accept-Language": "zh-CN"}))
    kinds = {kind for kind, _subject in _changes(page)}
    assert kinds == {"新增", "删除", "修改"}
    assert "比较版本" in page and "从 v1 到 v2" in page
    assert ("修改", "字段“Subject” · 选项") not in _changes(page) and ("修改", "字段“Priority” · 选项") in _changes(page)


def test_missing_versions_and_foreign_applications_are_not_found(app, admin_client, edited, other_tenant):
    for query in ("?from=9&to=1", "?from=1&to=0"):
        assert admin_client.get(f"/extensions/{edited}/compare{query}").status_code == 404, query
    stranger = browser_of(app, seat(other_tenant, "admin"))
    assert stranger.get(f"/extensions/{edited}/compare").status_code == 404


def test_agents_cannot_open_the_page(app, tenant, edited):
    agent = browser_of(app, seat(tenant, "agent"))
    assert agent.get(f"/extensions/{edited}/compare").status_code in (302, 403)


# --- before publishing -----------------------------------------------------------------------

def _dialog(client, app_id: str, version: int) -> str:
    page = _text(client.get(f"/extensions/{app_id}?version={version}"))
    return page[page.index("<dialog"):page.index("</dialog>")]


def test_the_first_publication_says_so(api, admin_client, draft_app):
    api.simulate(draft_app)
    dialog = _dialog(admin_client, draft_app, 1)
    assert "First publication" in dialog and "Nothing is live yet: v1 will be the first live version." in dialog


def test_publishing_shows_the_changes_against_the_live_version(api, admin_client, edited):
    api.simulate(edited, 2, SAMPLE)
    dialog = _dialog(admin_client, edited, 2)
    assert "Changes against the live version (v1 → v2)" in dialog
    assert ("Added", "Field “Notes”") in _changes(dialog) and ("Removed", "Actions") in _changes(dialog)
    assert 'name="confirm_permissions"' in dialog and 'name="code_confirmed"' in dialog


def test_a_rollback_shows_what_it_undoes(api, admin_client, edited):
    assert api.simulate(edited, 2, SAMPLE).status_code == 200
    assert api.publish(edited, 2, 1, code_confirmed=True).status_code == 200
    dialog = _dialog(admin_client, edited, 1)
    assert "What the rollback undoes (v2 → v1)" in dialog
    assert ("Removed", "Field “Notes”") in _changes(dialog) and ("Added", "Actions") in _changes(dialog)


# --- publish notes ---------------------------------------------------------------------------

def test_a_publish_note_is_trimmed_and_kept_on_the_version_in_the_audit_and_the_lists(api, admin_client, edited):
    api.simulate(edited, 2, SAMPLE)
    response = _publish(admin_client, edited, 2, 1, note="  Adds notes; the VIP rule\nfor urgent requests.  \n")
    assert response.status_code == 302
    note = "Adds notes; the VIP rule\nfor urgent requests."
    db.session.expire_all()
    assert db.session.scalar(select(StudioVersion.publish_note).where(StudioVersion.version == 2)) == note
    entry = db.session.scalars(select(AuditEntry).where(AuditEntry.action == "studio.published")
                               .order_by(AuditEntry.created_at.desc())).first()
    assert entry.summary["note"] == note and entry.summary["version"] == 2
    versions = admin_client.get(f"/extensions/{edited}").get_data(as_text=True)
    assert '<td class="publish-note">Adds notes; the VIP rule\nfor urgent requests.</td>' in versions
    assert "Publish note: Adds notes; the VIP rule for urgent requests." in _words(_text(
        admin_client.get(f"/extensions/{edited}/compare?from=1&to=2")))


def test_a_publication_without_a_note_keeps_the_earlier_note_and_records_none(api, admin_client, edited):
    api.simulate(edited, 2, SAMPLE)
    _publish(admin_client, edited, 2, 1, note="First go")
    _publish(admin_client, edited, 1, 2, note=" \t ")
    _publish(admin_client, edited, 2, 1)
    db.session.expire_all()
    assert db.session.scalar(select(StudioVersion.publish_note).where(StudioVersion.version == 2)) == "First go"
    assert db.session.scalar(select(StudioVersion.publish_note).where(StudioVersion.version == 1)) is None
    entries = db.session.scalars(select(AuditEntry).where(AuditEntry.action == "studio.published")
                                 .order_by(AuditEntry.created_at)).all()
    assert [e.summary.get("note") for e in entries] == [None, "First go", None, None]


@pytest.mark.parametrize("note", ["x" * 401, "😀" * 201, "bell \x07", "nul \x00"])
def test_a_note_too_long_or_with_control_characters_publishes_nothing(api, admin_client, edited, note):
    api.simulate(edited, 2, SAMPLE)
    response = _publish(admin_client, edited, 2, 1, note=note)
    page = _text(admin_client.get(response.headers["Location"]))
    assert "The publish note takes at most 400 characters, without control characters." in page
    db.session.expire_all()
    assert db.session.scalar(select(StudioApp.active_version)) == 1
    assert db.session.scalar(select(StudioVersion.publish_note).where(StudioVersion.version == 2)) is None


def test_a_note_of_exactly_400_characters_is_kept(api, admin_client, edited):
    api.simulate(edited, 2, SAMPLE)
    _publish(admin_client, edited, 2, 1, note="说" * 400)
    db.session.expire_all()
    assert db.session.scalar(select(StudioVersion.publish_note).where(StudioVersion.version == 2)) == "说" * 400


def test_the_json_publish_refuses_a_note_as_any_extra_property(api, edited):
    api.simulate(edited, 2, SAMPLE)
    answer = api.publish(edited, 2, 1, code_confirmed=True, note="Why")
    assert answer.status_code == 400 and answer.get_json()["error"]["code"] == "invalid_json"
    db.session.expire_all()
    assert db.session.scalar(select(StudioApp.active_version)) == 1


def test_the_dialog_offers_the_note_box(api, admin_client, draft_app):
    api.simulate(draft_app)
    dialog = _dialog(admin_client, draft_app, 1)
    assert '<label for="publish-note">Publish note</label>' in dialog
    assert '<textarea id="publish-note" name="note" rows="2" maxlength="400"' in dialog


def test_re_enabling_says_the_definition_stays(api, admin_client, live_app):
    api.post(f"/{live_app}/disable", {})
    dialog = _dialog(admin_client, live_app, 1)
    assert "Same version" in dialog and "re-enabling it changes nothing in the definition" in dialog


def test_notes_and_definition_texts_in_a_comparison_are_shown_as_text(api, admin_client, edited):
    hostile = sample_definition(**copy.deepcopy(SECTIONS))
    hostile["fields"][0]["label"] = "<img src=x onerror=alert(1)>"
    v3 = _saved(api, edited, hostile)
    api.simulate(edited, v3, SAMPLE)
    _publish(admin_client, edited, v3, 1, note="<script>alert(1)</script>")
    for path in (f"/extensions/{edited}", f"/extensions/{edited}/compare?from=1&to={v3}"):
        page = admin_client.get(path).get_data(as_text=True)
        assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page, path
    compared = admin_client.get(f"/extensions/{edited}/compare?from=1&to={v3}").get_data(as_text=True)
    assert "<img src=x" not in compared and "&lt;img src=x onerror=alert(1)&gt;" in compared
