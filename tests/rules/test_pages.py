"""The automation console pages, driven through their forms."""
import re
import uuid

import pytest
from sqlalchemy import func, select

from core.db import db
from core.queue_names import GENERATION
from rules import forms
from rules.models import AutomationGrant, AutomationRule, AutomationRuleRevision
from studio.models import StudioGeneration
from tests.conftest import csrf_from, login, seat
from tests.support.generation import UNSUPPORTED, rule_answer
from tests.support.jobs import work
from tests.support.rule_pages import BASE, HTMX, bound, editor, page_text, post_form, publish

KEYWORD_DRAFT = {"schema_version": 1, "name": "Refund desk", "timezone": "Asia/Shanghai", "trigger": "message_received",
                 "slots": [], "assignee_ref": "Billing team", "keywords": ["refund", "退款"],
                 "statuses": ["open"], "overwrite_assigned": False, "max_actions": 10}


def error_paragraph(page: str, element_id: str) -> str:
    """The text of the error paragraph with this id (empty when there is none)."""
    found = re.search(rf'<p class="field-error" id="{element_id}"[^>]*>(.*?)</p>', page, re.S)
    return re.sub(r"<[^>]+>", "", found[1]) if found else ""


# --- access -------------------------------------------------------------------------------------

def test_agents_are_refused_and_anonymous_visitors_sent_to_log_in(agent_client, client):
    for path in (BASE, f"{BASE}/new"):
        assert agent_client.get(path).status_code == 403
        response = client.get(path)
        assert response.status_code == 302 and "/login" in response.headers["Location"]
    token = csrf_from(page_text(agent_client.get("/workbench")))
    assert agent_client.post(f"{BASE}/new", data={"csrf_token": token, **editor()}).status_code == 403
    assert db.session.scalar(select(func.count()).select_from(AutomationRule)) == 0


def test_forms_without_the_csrf_token_are_refused(admin_client, agents):
    assert admin_client.post(f"{BASE}/new", data=bound(*agents)).status_code == 400
    assert db.session.scalar(select(func.count()).select_from(AutomationRule)) == 0


# --- list ---------------------------------------------------------------------------------------

def test_empty_list_explains_how_to_start_from_the_rotation_template(admin_client):
    page = page_text(admin_client.get(BASE))
    assert "No automation rules yet" in page
    assert "New rule from the rotation template" in page and f'href="{BASE}/new"' in page
    assert "Planning</dt><dd>off" in page


def test_list_shows_name_trigger_state_revisions_and_grant(admin_client, saved_rule, agents, planning):
    post_form(admin_client, f"{BASE}/{saved_rule}/revisions", bound(*agents, name="Late shift", expected_revision="1"))
    publish(admin_client, saved_rule, "scheduled", revision=1)  # scheduled execution is off: refused
    publish(admin_client, saved_rule, "plan_only", revision=1)
    page = page_text(admin_client.get(BASE))
    row = re.search(r"<tbody>(.*?)</tbody>", page, re.S)[1]
    assert f'href="{BASE}/{saved_rule}"' in row and "Late shift" in row and "Weekly slots" in row
    assert "published r1" in row and "<td>r2</td>" in row and "<td>r1</td>" in row
    assert "Read-only plans" in row and "Beijing time" in row


# --- the editor ---------------------------------------------------------------------------------

def test_the_new_rule_page_starts_from_the_template_with_bindable_agents(admin_client, agents, tenant):
    seat(tenant, "supervisor")
    page = page_text(admin_client.get(f"{BASE}/new"))
    assert 'value="Weekday rotation"' in page and 'value="Agent A"' in page and 'value="Agent B"' in page
    assert 'name="slots-0-time" value="09:00"' in page
    assert re.search(r'name="slots-0-weekdays" value="3" checked', page)
    assert not re.search(r'name="slots-1-weekdays" value="3" checked', page)
    for agent in agents:
        assert f'<option value="{agent.id}" >' in page
    assert "Supervisor Person" not in page  # only active, synchronized agents can be bound
    assert 'type="datetime-local"' in page and "Beijing time, UTC+08:00" in page


def test_saving_unbound_placeholders_asks_for_a_binding_at_the_slot(admin_client, agents):
    response = post_form(admin_client, f"{BASE}/new", editor())
    assert response.status_code == 422
    page = page_text(response)
    message = error_paragraph(page, "slots-0-error")
    assert "Bind this assignee" in message and "definition.slots[0].assignee_ref" in message
    assert 'id="slots-0-member" name="slots-0-member" aria-invalid="true"' in page
    assert 'value="Agent A"' in page  # the form keeps what was typed
    assert db.session.scalar(select(func.count()).select_from(AutomationRule)) == 0


@pytest.mark.parametrize(("changes", "element_id", "path"), [
    ({"slots-1-time": "25:00"}, "slots-1-time-error", "slots[1].time"),
    ({"slots-1-weekdays": []}, "slots-1-weekdays-error", "slots[1].weekdays"),
    ({"slots-1-weekdays": ["1"], "slots-1-time": "09:00"}, "slots-1-weekdays-error", "slots[1].weekdays[0]"),
    ({"name": "  "}, "name-error", "name"),
    ({"max_actions": "101"}, "max-actions-error", "max_actions"),
    ({"statuses": []}, "statuses-error", "statuses"),
    ({"filter": "keywords", "keywords": ", ".join(f"k{i}" for i in range(11))}, "keywords-error", "keywords"),
    ({"filter": "semantic", "labels": "无法判断"}, "labels-error", "semantic.labels[0]"),
    ({"filter": "semantic", "labels": "billing", "min_confidence": "0.5"}, "confidence-error",
     "semantic.min_confidence"),
])
def test_errors_are_shown_next_to_the_control_of_their_path(admin_client, agents, changes, element_id, path):
    response = post_form(admin_client, f"{BASE}/new", bound(*agents, **changes))
    assert response.status_code == 422
    assert f"at {path}" in error_paragraph(page_text(response), element_id)


def test_a_manual_rule_needs_one_filter_and_its_own_assignee(admin_client, agents):
    manual = bound(*agents, trigger="manual_sample")
    response = post_form(admin_client, f"{BASE}/new", manual)
    assert response.status_code == 422  # the weekly slots do not count for it: no assignee
    assert "at assignee_ref" in error_paragraph(page_text(response), "assignee-error")
    response = post_form(admin_client, f"{BASE}/new", {**manual, "assignee-member": str(agents[0].id)})
    assert "at keywords" in error_paragraph(page_text(response), "keywords-error")


def test_a_message_rule_saves_its_keywords_comma_or_line_separated(admin_client, agents):
    response = post_form(admin_client, f"{BASE}/new", bound(
        *agents, trigger="message_received", **{"assignee-member": str(agents[1].id)},
        filter="keywords", keywords="refund, 退款\nreturn，exchange\n\n", overwrite_assigned="on", max_actions="5"))
    assert response.status_code == 302
    definition = db.session.scalar(select(AutomationRuleRevision.definition))
    assert definition["slots"] == [] and definition["assignee_ref"] == str(agents[1].id)
    assert definition["keywords"] == ["refund", "退款", "return", "exchange"]
    assert (definition["overwrite_assigned"], definition["max_actions"]) == (True, 5)
    assert "semantic" not in definition


def test_saving_the_bound_form_creates_revision_1_and_opens_the_rule(admin_client, agents):
    response = post_form(admin_client, f"{BASE}/new", bound(*agents))
    assert response.status_code == 302
    revision = db.session.scalar(select(AutomationRuleRevision))
    assert revision.revision == 1
    assert [slot["assignee_ref"] for slot in revision.definition["slots"]] == [str(a.id) for a in agents]
    assert revision.definition["slots"][0]["weekdays"] == [1, 3, 5]
    page = page_text(admin_client.get(response.headers["Location"]))
    assert "Saved revision 1 as a draft" in page and "draft" in page
    assert 'name="expected_revision" value="1"' in page
    assert f'<option value="{agents[0].id}" selected>' in page


def test_a_save_creates_a_new_revision_and_a_stale_page_gets_a_version_conflict(admin_client, agents, saved_rule):
    path = f"{BASE}/{saved_rule}/revisions"
    first = post_form(admin_client, path, bound(*agents, name="Evening rotation", expected_revision="1"))
    assert first.status_code == 302
    stale = post_form(admin_client, path, bound(*agents, name="Someone else's idea", expected_revision="1"))
    assert stale.status_code == 409
    stale_page = page_text(stale)
    assert "Someone saved a newer revision" in stale_page and 'value="Someone else&#39;s idea"' in stale_page
    found = db.session.get(AutomationRule, uuid.UUID(saved_rule))
    assert (found.latest_revision, found.name) == (2, "Evening rotation")
    page = page_text(admin_client.get(f"{BASE}/{saved_rule}?revision=1"))
    assert 'value="Weekday rotation"' in page and "from r1; saving creates r3" in page


def test_rule_page_of_another_tenant_is_not_found(admin_client, other_tenant, saved_rule):
    other = seat(other_tenant, "admin")
    browser = admin_client.application.test_client()
    login(browser, other.user.email)
    assert browser.get(f"{BASE}/{saved_rule}").status_code == 404


# --- slot and sample rows -----------------------------------------------------------------------

def test_slot_rows_are_added_and_removed_as_a_partial_for_htmx(admin_client):
    added = post_form(admin_client, f"{BASE}/editor", editor(op="add_slot"), headers=HTMX)
    assert added.status_code == 200
    partial = page_text(added)
    assert partial.lstrip().startswith('<fieldset id="slots"')
    assert "Slot 3" in partial and 'name="slots_count" value="3"' in partial and "<html" not in partial
    removed = page_text(post_form(admin_client, f"{BASE}/editor", editor(op="remove_slot:0"), headers=HTMX))
    assert "Slot 2" not in removed and 'value="Agent B"' in removed and 'value="Agent A"' not in removed


def test_at_most_seven_slot_rows(admin_client):
    data = editor(slots_count="7", op="add_slot")
    page = page_text(post_form(admin_client, f"{BASE}/editor", data, headers=HTMX))
    assert "Slot 7" in page and "Slot 8" not in page and "7 slots is the most" in page


def test_rows_change_without_javascript_by_rendering_the_whole_page(admin_client):
    response = post_form(admin_client, f"{BASE}/editor", editor(op="add_sample"))
    page = page_text(response)
    assert response.status_code == 200 and "<html" in page and 'name="samples_count" value="1"' in page


# --- preview ------------------------------------------------------------------------------------

def test_preview_shows_each_reason_the_planned_count_and_beijing_times(admin_client):
    response = post_form(admin_client, f"{BASE}/preview", editor(**{
        "samples_count": "2", "samples-0-id": "", "samples-0-text": "Where is my parcel?", "samples-0-status": "open",
        "samples-0-assignee": "", "samples-1-id": "done", "samples-1-text": "Thanks!", "samples-1-status": "resolved",
        "samples-1-assignee": "", "samples_paste": "pending\tRefund please\nopen\tMy kettle broke\n",
        "instant": "2026-11-23T08:30"}), headers=HTMX)  # a Monday, before the 09:00 slot
    assert response.status_code == 200
    page = page_text(response)
    assert "Executed: no</strong> — nothing was read or changed" in page and "Real conversations read: 0" in page
    assert "Planned: 3</strong> of 4" in page
    rows = re.findall(r"<tr>\s*<td>([^<]+)</td>.*?</tr>", page, re.S)
    assert rows == ["s1", "done", "p1", "p2"]
    assert "resolved_excluded" in page and "slot_matched" in page and "slot Fri 09:00" in page  # last week's last slot
    assert "Agent A" in page
    times = re.findall(r'<time datetime="([^"]+)">([^<]+)</time>', page)
    assert times[0] == ("2026-11-23T09:00:00+08:00", "2026-11-23 Mon 09:00")
    assert "Beijing time, UTC+08:00" in page


def test_preview_refusals_name_the_sample_row_or_the_confirmation(admin_client):
    duplicate = editor(**{"samples_count": "2", "samples-0-id": "a", "samples-0-text": "one", "samples-0-status": "open",
                          "samples-0-assignee": "", "samples-1-id": "a", "samples-1-text": "two",
                          "samples-1-status": "open", "samples-1-assignee": ""})
    response = post_form(admin_client, f"{BASE}/preview", duplicate, headers=HTMX)
    assert response.status_code == 422 and "The sample row 2 is not valid" in page_text(response)
    semantic = editor(filter="semantic", labels="billing", min_confidence="0.9")
    response = post_form(admin_client, f"{BASE}/preview", semantic, headers=HTMX)
    assert response.status_code == 422 and "semantic_confirmation_required" in page_text(response)
    broken = editor(**{"slots-0-time": "9am"})
    page = page_text(post_form(admin_client, f"{BASE}/preview", broken, headers=HTMX))
    assert "The rule in the editor is not valid" in page and "definition.slots[0].time" in page


def test_preview_without_javascript_renders_the_page_with_the_result(admin_client):
    page = page_text(post_form(admin_client, f"{BASE}/preview", editor()))
    assert "<html" in page and "Executed: no" in page and 'value="Agent A"' in page


def test_the_instant_is_read_as_beijing_time():
    assert forms.instant_to_utc("2026-11-23T00:00") == "2026-11-22T16:00:00Z"
    assert forms.instant_to_utc("not a time") == "not a time"


@pytest.mark.parametrize("instant", ["0001-01-01T00:00", "9999-12-31T23:59", "1999-06-01T12:00", "2200-01-01T08:00"])
def test_a_far_instant_is_the_preview_s_own_message_not_an_error(admin_client, instant):
    response = post_form(admin_client, f"{BASE}/preview", editor(instant=instant), headers=HTMX)
    assert response.status_code == 422
    assert "invalid_instant" in page_text(response) and "from 2000 to 2199" in page_text(response)


@pytest.mark.parametrize("op, slots", [("add_slot:²", 3), ("remove_slot:" + "9" * 5000, 2), ("remove_slot:١", 2),
                                       ("remove_slot:", 2), ("remove_sample:-1", None)])
def test_row_buttons_with_odd_numbers_never_fail_and_remove_no_row(admin_client, op, slots):
    response = post_form(admin_client, f"{BASE}/editor", editor(op=op), headers=HTMX)
    assert response.status_code == 200
    if slots:
        page = page_text(response)
        assert f'name="slots-{slots - 1}-time"' in page and f'name="slots-{slots}-time"' not in page


@pytest.mark.parametrize("op", ["", "add_row", "add_slot\x00", "\u202e"])
def test_an_unknown_row_button_is_invalid_operation(admin_client, op):
    response = post_form(admin_client, f"{BASE}/editor", editor(op=op), headers=HTMX)
    assert response.status_code == 400 and "invalid_operation" in page_text(response)


@pytest.mark.parametrize("expected", ["²", "9" * 5000, "١", "1_0", " "])
def test_an_odd_expected_revision_is_refused_on_the_page(admin_client, saved_rule, agents, expected):
    response = post_form(admin_client, f"{BASE}/{saved_rule}/revisions", bound(*agents, expected_revision=expected))
    assert response.status_code in (409, 422)
    assert db.session.scalar(select(AutomationRule.latest_revision).where(
        AutomationRule.id == uuid.UUID(saved_rule))) == 1


@pytest.mark.parametrize("expected", ["²", "9" * 5000, "١"])
def test_an_odd_expected_active_revision_is_refused_with_a_message(admin_client, saved_rule, planning, expected):
    page = page_text(publish(admin_client, saved_rule, expected=expected))
    assert "Publishing failed: invalid_version" in page
    assert db.session.scalar(select(AutomationRule.state).where(AutomationRule.id == uuid.UUID(saved_rule))) == "draft"


def test_other_scripts_digits_never_name_a_revision(admin_client, saved_rule, planning):
    page = page_text(publish(admin_client, saved_rule, revision="١"))  # int("١") would read 1
    assert db.session.scalar(select(AutomationRule.state).where(AutomationRule.id == uuid.UUID(saved_rule))) == "draft"
    assert admin_client.get(f"{BASE}/{saved_rule}?revision=%C2%B2").status_code == 200 and page


def test_pasted_samples_take_an_optional_status_before_a_tab():
    assert forms.pasted_samples("pending\tRefund\r\n\nHello\tthere\n") == [
        {"id": "p1", "text": "Refund", "status": "pending", "assignee_ref": None},
        {"id": "p2", "text": "Hello\tthere", "status": "open", "assignee_ref": None}]


# --- publishing and pause -----------------------------------------------------------------------

def test_the_publish_dialog_lists_the_exact_permissions_of_each_mode(admin_client, saved_rule, agents):
    post_form(admin_client, f"{BASE}/{saved_rule}/revisions",
              bound(*agents, filter="keywords", keywords="refund", expected_revision="1"))
    page = page_text(admin_client.get(f"{BASE}/{saved_rule}"))
    dialog = re.search(r'<dialog id="publish-dialog".*?</dialog>', page, re.S)[0]
    lists = dict(re.findall(r'id="permissions-(\w+)".*?<pre class="permissions">(.*?)</pre>', dialog, re.S))
    assert set(lists) == {"plan_only", "scheduled"}  # message_event is for message rules only
    plan_only = re.findall(r'"([\w.]+)"', lists["plan_only"])
    assert plan_only == ["conversation.read_for_plan", "automation.schedule_plan", "conversation.keyword_routing"]
    scheduled = re.findall(r'"([\w.]+)"', lists["scheduled"])
    assert scheduled == ["conversation.read_for_plan", "automation.schedule_plan", "conversation.assign_scheduled",
                         "conversation.keyword_routing"]
    assert re.search(r'value="message_event"\s+disabled', dialog)
    assert 'name="confirm" required' in dialog and 'name="expected_active_revision" value=""' in dialog


def test_publishing_needs_the_confirmation(admin_client, saved_rule, planning):
    page = page_text(publish(admin_client, saved_rule, confirm=False))
    assert "Tick the box to confirm exactly the permissions" in page
    assert db.session.scalar(select(func.count()).select_from(AutomationGrant)) == 0
    page = page_text(publish(admin_client, saved_rule))
    assert "Revision 1 is published: read-only plans." in page and "published r1" in page
    grant = db.session.scalar(select(AutomationGrant))
    assert (grant.execution_mode, grant.permissions) == (
        "plan_only", ["conversation.read_for_plan", "automation.schedule_plan"])
    assert 'name="expected_active_revision" value="1"' in page


def test_publishing_is_refused_while_planning_is_switched_off(admin_client, saved_rule):
    page = page_text(admin_client.get(f"{BASE}/{saved_rule}"))
    assert "Planning is switched off on this platform" in page
    page = page_text(publish(admin_client, saved_rule))
    assert "Publishing is refused: planning is switched off" in page
    assert db.session.scalar(select(AutomationRule.state)) == "draft"


def test_a_stale_publish_dialog_is_refused(admin_client, saved_rule, planning):
    publish(admin_client, saved_rule)
    page = page_text(publish(admin_client, saved_rule, expected=""))  # the dialog still saw no live revision
    assert "Someone published or paused this rule meanwhile" in page


def test_a_scheduled_publish_needs_scheduled_execution_switched_on(app, admin_client, saved_rule, planning,
                                                                     monkeypatch):
    page = page_text(publish(admin_client, saved_rule, "scheduled"))
    assert "scheduled execution is switched off" in page
    monkeypatch.setitem(app.config, "AUTOMATION_SCHEDULE_EXECUTION_ENABLED", True)
    page = page_text(publish(admin_client, saved_rule, "scheduled"))
    assert "Revision 1 is published: scheduled assignment" in page
    assert db.session.scalar(select(AutomationGrant.permissions))[-1] == "conversation.assign_scheduled"


def test_pause_revokes_the_grant_and_only_a_published_rule_pauses(admin_client, saved_rule, planning):
    page = page_text(admin_client.get(f"{BASE}/{saved_rule}"))
    assert "Pause rule…" not in page
    page = page_text(post_form(admin_client, f"{BASE}/{saved_rule}/pause", {}, follow_redirects=True))
    assert "Only a published rule can be paused." in page
    page = page_text(publish(admin_client, saved_rule))
    assert 'data-open-dialog="pause-dialog"' in page and '<dialog id="pause-dialog"' in page
    page = page_text(post_form(admin_client, f"{BASE}/{saved_rule}/pause", {}, follow_redirects=True))
    assert "The rule is paused" in page and "paused (r1 kept)" in page
    found = db.session.scalar(select(AutomationRule))
    db.session.refresh(found)
    assert (found.state, found.grant_id) == ("paused", None)
    assert db.session.scalar(select(AutomationGrant.revoked_at)) is not None


# --- AI drafts ----------------------------------------------------------------------------------

def test_an_ai_draft_fills_the_editor_and_saves_nothing(app, admin_client, model_server, redis_conn):
    model_server.answer_json(rule_answer(KEYWORD_DRAFT))
    started = post_form(admin_client, f"{BASE}/draft", {"prompt": "Send refund questions to the billing desk."},
                        headers=HTMX)
    assert started.status_code == 200 and "The model is drafting a rule" in page_text(started)
    poll = re.search(r'hx-get="([^"]+)"', page_text(started))[1]
    work(app, redis_conn, GENERATION)
    done = admin_client.get(poll, headers=HTMX)
    target = done.headers["HX-Redirect"]
    page = page_text(admin_client.get(target))
    assert "AI draft — review it" in page and 'value="Refund desk"' in page
    assert re.search(r'<option value="message_received" selected>', page)
    assert 'value="Billing team"' in page and ">refund\n退款</textarea>" in page
    assert db.session.scalar(select(func.count()).select_from(AutomationRule)) == 0


def test_an_ai_draft_naming_a_real_agent_is_refused_and_the_editor_binds_nobody(app, admin_client, model_server,
                                                                                redis_conn, agents):
    member = str(agents[0].id)
    model_server.answer_json(rule_answer({**KEYWORD_DRAFT, "assignee_ref": member}))
    started = post_form(admin_client, f"{BASE}/draft", {"prompt": "Send refund questions to Lin."}, headers=HTMX)
    generation_id = re.search(r'hx-get="[^"]*/draft/([0-9a-f-]+)"', page_text(started))[1]
    work(app, redis_conn, GENERATION)
    done = admin_client.get(f"{BASE}/draft/{generation_id}", headers=HTMX)
    assert "HX-Redirect" not in done.headers and "model_invalid_definition" in page_text(done)
    page = page_text(admin_client.get(f"{BASE}/new?draft={generation_id}"))  # the failed draft fills nothing
    assert "Refund desk" not in page and f'<option value="{member}" selected' not in page


def test_a_stored_draft_naming_a_member_is_shown_as_placeholder_text_never_a_chosen_agent(admin_client, tenant,
                                                                                        agents, admin):
    member = str(agents[0].id)
    generation = StudioGeneration(tenant_id=tenant.id, created_by=admin.user_id, prompt="Route refunds to Lin",
                                  status="succeeded", draft_kind="automation_preview",  # as saved before issue 20
                                  preview_draft={**KEYWORD_DRAFT, "assignee_ref": member})
    db.session.add(generation)
    db.session.commit()
    page = page_text(admin_client.get(f"{BASE}/new?draft={generation.id}"))
    assert "AI draft — review it" in page and f'value="{member}"' in page  # typed in the placeholder box
    assert f'<option value="{member}" selected' not in page


def test_an_ai_draft_refused_by_the_model_is_explained(app, admin_client, model_server, redis_conn):
    model_server.answer_json(UNSUPPORTED)
    started = post_form(admin_client, f"{BASE}/draft", {"prompt": "Refund every angry customer."}, headers=HTMX)
    work(app, redis_conn, GENERATION)
    page = page_text(admin_client.get(re.search(r'hx-get="([^"]+)"', page_text(started))[1], headers=HTMX))
    assert "Refund the customer&#39;s payment" in page and "nothing was created" in page


def test_without_a_model_the_ai_draft_is_not_offered(admin_client):
    page = page_text(admin_client.get(f"{BASE}/new?ai=1"))
    assert "AI drafts are not available" in page and 'name="prompt"' not in page
