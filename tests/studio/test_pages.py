"""The Studio console pages, driven through their forms."""
import json
import re
import uuid

import pytest
from sqlalchemy import func, select

from core.db import db
from studio.definition import capability_manifest, validate_definition
from studio.models import StudioApp, StudioRecord, StudioVersion
from studio.templates_market import LICENSE, TEMPLATES
from tests.conftest import csrf_from
from tests.support.studio import sample_definition


def _form(client, path: str, data: dict, **kwargs):
    """POST a page form with the page's CSRF token."""
    token = csrf_from(client.get("/extensions").get_data(as_text=True))
    return client.post(path, data={"csrf_token": token, **data}, **kwargs)


def _text(response) -> str:
    return response.get_data(as_text=True)


def test_empty_app_list_explains_how_to_start(admin_client):
    page = _text(admin_client.get("/extensions"))
    assert "No applications yet" in page and "New app from the starter" in page


def test_app_list_shows_status_badges(api, admin_client, live_app):
    api.create(sample_definition(name="Draft one"))
    api.post(f"/{live_app}/disable", {})
    page = _text(admin_client.get("/extensions"))
    assert "Draft one" in page and "draft" in page and "disabled (v1 kept)" in page


def test_create_from_starter_opens_the_new_draft(admin_client):
    response = _form(admin_client, "/extensions/new", {})
    assert response.status_code == 302
    page = _text(admin_client.get(response.headers["Location"]))
    assert "v1" in page and "Simulate v1" in page and "Advanced editor" in page
    assert db.session.scalar(select(StudioApp.enabled)) is False


def test_template_market_offers_six_templates_with_origin_and_licence(admin_client):
    page = _text(admin_client.get("/template-market/studio"))
    assert len(TEMPLATES) >= 6
    for template in TEMPLATES:
        assert template["title"] in page
    assert "CC0" in page and "Origin" in page


@pytest.mark.parametrize("template", TEMPLATES, ids=[t["slug"] for t in TEMPLATES])
def test_every_template_is_a_valid_definition(template):
    definition = validate_definition(template["definition"])
    assert "ui.form" in capability_manifest(definition)


def test_templates_cover_charts_and_rules():
    by_slug = {t["slug"]: t["definition"] for t in TEMPLATES}
    assert by_slug["lead-capture"].get("charts")
    assert len(by_slug["complaint-escalation"]["workflow"]["rules"]) >= 2


def test_importing_a_template_creates_an_unpublished_draft_keeping_origin(admin_client):
    response = _form(admin_client, "/template-market/studio/return-request/import", {})
    assert response.status_code == 302
    found = db.session.scalar(select(StudioApp))
    assert (found.enabled, found.active_version, found.latest_version) == (False, None, 1)
    assert found.license == LICENSE and "Return request" in found.origin
    assert db.session.scalar(select(StudioVersion.simulated)) is False
    assert "Licence" in _text(admin_client.get(response.headers["Location"]))


def test_importing_an_unknown_template_is_not_found(admin_client):
    assert _form(admin_client, "/template-market/studio/nope/import", {}).status_code == 404


def test_editor_shows_the_error_path_and_keeps_the_text(admin_client, draft_app):
    bad = sample_definition()
    bad["fields"][0]["required"] = "yes"
    text = json.dumps(bad)
    response = _form(admin_client, f"/extensions/{draft_app}/versions", {"definition": text})
    assert response.status_code == 422
    page = _text(response)
    assert "invalid_definition" in page and "fields[0].required" in page
    assert "&#34;yes&#34;" in page or "&quot;yes&quot;" in page
    assert db.session.scalar(select(func.count()).select_from(StudioVersion)) == 1


def test_editor_refuses_text_that_is_not_json(admin_client, draft_app):
    response = _form(admin_client, f"/extensions/{draft_app}/versions", {"definition": "{oops"})
    assert response.status_code == 422 and "invalid_json" in _text(response)


def test_editor_refuses_a_definition_naming_a_property_twice(admin_client, draft_app):
    text = json.dumps(sample_definition())[:-1] + ', "name": "Second name"}'
    response = _form(admin_client, f"/extensions/{draft_app}/versions", {"definition": text, "script": ""})
    assert response.status_code == 422 and "the text names &#34;name&#34; twice" in _text(response)
    assert db.session.scalar(select(func.count()).select_from(StudioVersion)) == 1


def test_editor_refuses_text_nested_too_deeply_without_a_server_error(admin_client, draft_app):
    text = json.dumps(sample_definition())[:-1] + ', "extra": ' + "[" * 5_000 + "]" * 5_000 + "}"
    response = _form(admin_client, f"/extensions/{draft_app}/versions", {"definition": text})
    assert response.status_code == 422 and "invalid_json" in _text(response)


def test_editor_names_a_property_with_a_lone_surrogate_without_a_server_error(admin_client, draft_app):
    text = json.dumps(sample_definition())[:-1] + ', "\\ud800": 1}'
    response = _form(admin_client, f"/extensions/{draft_app}/versions", {"definition": text})
    assert response.status_code == 422 and " at <code>\\ud800</code>" in _text(response)
    assert db.session.scalar(select(func.count()).select_from(StudioVersion)) == 1


def test_editor_saves_a_new_version(admin_client, draft_app):
    text = json.dumps(sample_definition(name="Edited"))
    response = _form(admin_client, f"/extensions/{draft_app}/versions", {"definition": text})
    assert response.status_code == 302 and "version=2" in response.headers["Location"]
    assert "Edited" in _text(admin_client.get(response.headers["Location"]))


def test_simulation_form_widgets_follow_field_types(admin_client, draft_app):
    page = _text(admin_client.get(f"/extensions/{draft_app}"))
    assert 'type="number"' in page and 'type="date"' in page and 'type="checkbox"' in page
    assert "<select" in page and 'name="f_title"' in page


def test_simulation_form_shows_data_after_rules_and_trace(admin_client, draft_app):
    response = _form(admin_client, f"/extensions/{draft_app}/simulate",
                     {"version": "1", "f_title": "Refund", "f_amount": "150"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    page = _text(response)
    assert "Big orders are high priority" in page and "matched" in page and '"high"' in page
    assert 'id="publish-section"' in page and 'hx-swap-oob="true"' in page
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 0


def test_simulation_form_error_names_the_field(admin_client, draft_app):
    response = _form(admin_client, f"/extensions/{draft_app}/simulate", {"version": "1", "f_amount": "3"},
                     headers={"HX-Request": "true"})
    assert response.status_code == 422 and "input.title" in _text(response)


@pytest.mark.parametrize("version", ["١", "²", "9" * 5000, "1_0"])
def test_a_version_in_other_digits_or_too_long_is_not_found_not_version_1(admin_client, draft_app, version):
    response = _form(admin_client, f"/extensions/{draft_app}/simulate", {"version": version, "f_title": "Refund"},
                     headers={"HX-Request": "true"})
    assert response.status_code == 404  # int("١") would have simulated version 1
    assert admin_client.get(f"/extensions/{draft_app}?version={version}").status_code == 200


@pytest.mark.parametrize("amount", ["١٥٠", "150²", "1" * 5000])
def test_a_number_field_takes_ascii_digits_only(admin_client, draft_app, amount):
    response = _form(admin_client, f"/extensions/{draft_app}/simulate",
                     {"version": "1", "f_title": "Refund", "f_amount": amount}, headers={"HX-Request": "true"})
    assert response.status_code == 422 and "input.amount" in _text(response)


def test_publish_dialog_shows_the_exact_permission_array(api, admin_client, draft_app):
    api.simulate(draft_app)
    page = _text(admin_client.get(f"/extensions/{draft_app}"))
    assert re.search(r"extension\.records\.read.*extension\.records\.create.*extension\.records\.transform",
                     page, re.S)
    assert 'name="confirm_permissions"' in page and "<dialog" in page


def test_publish_without_confirmation_is_refused(api, admin_client, draft_app):
    api.simulate(draft_app)
    response = _form(admin_client, f"/extensions/{draft_app}/publish", {"version": "1", "expected_active_version": ""})
    assert "confirm the permissions" in _text(admin_client.get(response.headers["Location"]))
    assert db.session.scalar(select(StudioApp.enabled)) is False


def test_publish_with_confirmation_goes_live(api, admin_client, draft_app):
    api.simulate(draft_app)
    _form(admin_client, f"/extensions/{draft_app}/publish",
          {"version": "1", "expected_active_version": "", "confirm_permissions": "on"})
    db.session.expire_all()
    assert db.session.scalar(select(StudioApp.active_version)) == 1


def test_code_versions_show_the_script_and_a_separate_confirmation(api, admin_client, runner):
    app_id = api.create(sample_definition(code={"language": "javascript", "source": "return {title: 'x'};"}))
    assert api.simulate(app_id).status_code == 200
    page = _text(admin_client.get(f"/extensions/{app_id}"))
    dialog = page[page.index("<dialog"):page.index("</dialog>")]
    assert "return {title: &#39;x&#39;};" in dialog and 'name="code_confirmed"' in dialog
    assert 'name="confirm_permissions"' in dialog


def test_editor_shows_the_script_in_its_own_box(api, admin_client):
    app_id = api.create(sample_definition(code={"language": "javascript", "source": "return {};"}))
    page = _text(admin_client.get(f"/extensions/{app_id}"))
    definition_box = page[page.index('id="definition-editor"'):page.index("</textarea>", page.index('id="definition-editor"'))]
    script_box = page[page.index('id="script-editor"'):page.index("</textarea>", page.index('id="script-editor"'))]
    assert "&#34;code&#34;" not in definition_box and "return {};" in script_box
    assert 'data-editor="json"' in definition_box and 'data-editor="javascript"' in script_box  # the code editors
    assert 'data-editor-limit="8000"' in script_box and "10 of 8,000 characters" in page


def test_editor_saves_the_script_box_as_the_versions_code(admin_client, draft_app):
    response = _form(admin_client, f"/extensions/{draft_app}/versions",
                     {"definition": json.dumps(sample_definition()), "script": "const a = 1;\r\nreturn {amount: a};"})
    assert response.status_code == 302
    saved = db.session.scalar(select(StudioVersion.definition).where(StudioVersion.version == 2))
    assert saved["code"] == {"language": "javascript", "source": "const a = 1;\nreturn {amount: a};"}


def test_an_empty_script_box_saves_a_version_without_code(api, admin_client):
    app_id = api.create(sample_definition(code={"language": "javascript", "source": "return {};"}))
    _form(admin_client, f"/extensions/{app_id}/versions", {"definition": json.dumps(sample_definition()), "script": " \r\n"})
    saved = db.session.scalar(select(StudioVersion.definition).where(StudioVersion.version == 2))
    assert "code" not in saved


def test_code_in_both_the_json_and_the_script_box_is_refused(admin_client, draft_app):
    text = json.dumps(sample_definition(code={"language": "javascript", "source": "return {};"}))
    response = _form(admin_client, f"/extensions/{draft_app}/versions", {"definition": text, "script": "return {};"})
    page = _text(response)
    assert response.status_code == 422 and "invalid_definition" in page and "<code>code</code>" in page
    assert db.session.scalar(select(func.count()).select_from(StudioVersion)) == 1


def test_a_failing_script_names_its_line_in_the_simulation(api, admin_client, runner):
    app_id = api.create(sample_definition(code={"language": "javascript", "source": "const a = 1;\nnull.boom;"}))
    response = _form(admin_client, f"/extensions/{app_id}/simulate", {"version": "1", "f_title": "T"},
                     headers={"HX-Request": "true"})
    page = _text(response)
    assert response.status_code == 422 and "The script failed on line 2" in page
    assert 'data-goto-line="2"' in page


def test_record_form_saves_and_the_ledger_shows_table_columns_in_order(admin_client, live_app):
    page = _text(admin_client.get(f"/extensions/{live_app}"))
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page).group(1)
    data = {"f_title": "Lost parcel", "f_amount": "300", "idempotency_key": key}
    response = _form(admin_client, f"/extensions/{live_app}/records", data)
    assert response.status_code == 302
    ledger = _text(admin_client.get(f"/extensions/{live_app}")).split('id="ledger"')[1]
    headers = re.findall(r'<th scope="col">([^<]+)</th>', ledger)
    assert headers[:3] == ["Title", "Priority", "Amount"]
    assert "Lost parcel" in ledger and "high" in ledger
    again = _form(admin_client, f"/extensions/{live_app}/records", data)
    assert "already saved" in _text(admin_client.get(again.headers["Location"]))
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 1


def test_record_form_error_is_shown_next_to_the_field(admin_client, live_app):
    response = _form(admin_client, f"/extensions/{live_app}/records",
                     {"f_amount": "3", "idempotency_key": str(uuid.uuid4())})
    assert response.status_code == 422 and "This field is required." in _text(response)


def test_disable_and_reenable_from_the_page(api, admin_client, live_app):
    key = re.search(r'name="idempotency_key" value="([^"]+)"', _text(admin_client.get(f"/extensions/{live_app}"))).group(1)
    _form(admin_client, f"/extensions/{live_app}/disable", {})
    page = _text(admin_client.get(f"/extensions/{live_app}"))
    assert "Re-enable v1" in page
    refused = _form(admin_client, f"/extensions/{live_app}/records", {"f_title": "While off", "idempotency_key": key})
    assert refused.status_code == 422
    _form(admin_client, f"/extensions/{live_app}/publish",
          {"version": "1", "expected_active_version": "1", "confirm_permissions": "on"})
    saved = _form(admin_client, f"/extensions/{live_app}/records", {"f_title": "Live again", "idempotency_key": key})
    assert saved.status_code == 302
    assert "Live again" in _text(admin_client.get(f"/extensions/{live_app}")).split('id="ledger"')[1]


def test_roll_back_to_an_older_version_from_the_page_keeps_records(api, admin_client, live_app):
    api.post(f"/{live_app}/records", {"version": 1, "input": {"title": "kept"}, "idempotency_key": str(uuid.uuid4())})
    api.post(f"/{live_app}/versions", {"definition": sample_definition(name="v2")})
    api.simulate(live_app, version=2)
    api.publish(live_app, version=2, expected=1)
    page = _text(admin_client.get(f"/extensions/{live_app}?version=1"))
    assert "Roll back to v1" in page
    response = _form(admin_client, f"/extensions/{live_app}/publish",
                     {"version": "1", "expected_active_version": "2", "confirm_permissions": "on"})
    assert "Version 1 is live." in _text(admin_client.get(response.headers["Location"]))
    db.session.expire_all()
    assert db.session.scalar(select(StudioApp.active_version)) == 1
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 1


def test_charts_render_as_svg_for_the_selected_version(api, admin_client):
    charts = [{"key": "by_priority", "title": "Requests by priority", "type": "bar", "group_by": "priority",
               "metric": "count"}]
    app_id = api.create(sample_definition(charts=charts))
    api.simulate(app_id)
    api.publish(app_id)
    api.post(f"/{app_id}/records", {"version": 1, "input": {"title": "a", "amount": 200},
                                    "idempotency_key": str(uuid.uuid4())})
    page = _text(admin_client.get(f"/extensions/{app_id}"))
    assert "<svg" in page and "Requests by priority" in page and "<rect" in page


def test_foreign_app_page_is_not_found(app, admin_client, other_tenant):
    other = StudioApp(tenant_id=other_tenant.id, name="Theirs")
    db.session.add(other)
    db.session.commit()
    assert admin_client.get(f"/extensions/{other.id}").status_code == 404


def test_switched_off_extensions_close_the_pages(app, admin_client):
    app.config["EXTENSIONS_ENABLED"] = False
    try:
        response = admin_client.get("/extensions")
        assert response.status_code == 503 and "switched off" in _text(response)
    finally:
        app.config["EXTENSIONS_ENABLED"] = True


def test_record_form_with_a_tampered_key_is_refused(admin_client, live_app):
    response = _form(admin_client, f"/extensions/{live_app}/records", {"f_title": "x", "idempotency_key": "nope"})
    assert response.status_code == 422 and "invalid_idempotency_key" in _text(response)
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 0


def test_ledger_shows_checkboxes_as_yes_or_no_and_numbers_readably_and_who_submitted(api, admin_client, admin):
    app_id = api.create(sample_definition(table_columns=["title", "urgent", "amount"]))
    api.simulate(app_id)
    api.publish(app_id)
    for data in ({"title": "A", "urgent": True, "amount": 1234.5}, {"title": "B", "urgent": False}):
        api.post(f"/{app_id}/records", {"version": 1, "input": data, "idempotency_key": str(uuid.uuid4())})
    ledger = _text(admin_client.get(f"/extensions/{app_id}")).split('id="ledger"')[1]
    cells = re.findall(r"<td>([^<]*)</td>", ledger)
    assert cells[:5] == ["B", "No", "", admin.display_name, "—"]  # a console submission has no conversation
    assert cells[6:9] == ["A", "Yes", "1,234.5"]


@pytest.mark.parametrize("key,shown", [("\\ud800", "output.\\ud800"), ("a\\u0000b", "output.a\\x00b")])
def test_an_unprintable_output_key_is_shown_escaped_on_the_simulation_page(admin_client, api, runner, key,
                                                                          shown):
    from tests.support.studio import sample_definition

    app_id = api.create(sample_definition(code={"language": "javascript",
                                                "source": f'return {{"{key}": 1}};'}))
    response = _form(admin_client, f"/extensions/{app_id}/simulate", {"version": "1", "f_title": "T"},
                     headers={"HX-Request": "true"})
    assert response.status_code == 422
    assert "does not accept" in _text(response) and shown in _text(response)
    answer = api.simulate(app_id, data={"title": "T"})
    assert answer.get_json()["error"] == {"code": "code_invalid_output", "detail": shown}


ATTACK = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'


def test_definition_texts_and_record_values_are_shown_as_text_not_markup(admin_client, api):
    from tests.support.studio import sample_definition

    fields = sample_definition()["fields"]
    fields[0]["label"] = ATTACK
    app_id = api.create(sample_definition(name=ATTACK, description=ATTACK, fields=fields))
    assert api.simulate(app_id, data={"title": ATTACK}).status_code == 200
    assert api.publish(app_id).status_code == 200
    saved = api.post(f"/{app_id}/records", {"version": 1, "input": {"title": ATTACK},
                                             "idempotency_key": str(uuid.uuid4())})
    assert saved.status_code == 200
    for path in ("/extensions", f"/extensions/{app_id}"):
        page = _text(admin_client.get(path))
        assert "<script>alert(1)" not in page and "<img src=x" not in page
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
