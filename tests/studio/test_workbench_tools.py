"""Studio in the workbench: adding apps, the panel's form, per-item customer-data grants, the
intent tool and workbench styles, as agents and administrators use them over HTTP."""
import json
import re
import uuid
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from core.audit import AuditEntry
from core.clock import utcnow
from core.db import db
from desk.models import AiPointsEntry, Conversation, ConversationEvent, Customer, Member, Message
from studio.models import StudioDataGrant, StudioRecord, StudioWorkbenchEntry
from studio.workbench import MAX_APPS
from desk.handoff import issue_link_token
from desk.sessions import ASSISTANT, IMPERSONATION
from tests.conftest import csrf_from, customer_conversation, login, seat
from tests.support.sql import statements
from tests.support.studio import sample_definition
from tests.support.workbench_tools import OTHER, PROFILE, WORKBENCH, publish_live


@pytest.fixture
def conversation(tenant) -> Conversation:
    return customer_conversation(tenant, "I want my money back", **PROFILE)


def _add(admin_client, app_id: str):
    page = admin_client.get(f"/extensions/{app_id}").get_data(as_text=True)
    return admin_client.post(f"/extensions/{app_id}/workbench", data={"csrf_token": csrf_from(page)})


@pytest.fixture
def tool(api, admin_client) -> str:
    """A live application with workbench settings, added to the workbench."""
    app_id = publish_live(api, sample_definition(workbench=WORKBENCH))
    assert _add(admin_client, app_id).status_code == 302
    return app_id


def _panel(client, conversation) -> str:
    return client.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)


def _tool_html(page: str, app_id: str) -> str:
    """One application's tool out of a workbench page or answer."""
    start = page.index(f'id="tool-{app_id}"')
    return page[start:page.index("</section>", start)]


def _key(html: str) -> str:
    return re.search(r'name="idempotency_key" value="([^"]+)"', html).group(1)


def _post(client, path: str, page: str, conversation, version: int = 1, **fields):
    data = {"csrf_token": csrf_from(page), "conversation_id": str(conversation.id), "version": str(version), **fields}
    return client.post(path, data=data, headers={"HX-Request": "true"})


def _submit(client, app_id, page, conversation, version=1, key=None, **fields):
    return _post(client, f"/workbench/apps/{app_id}/records", page, conversation, version,
                 idempotency_key=key or _key(_tool_html(page, app_id)), **fields)


def _grant(client, app_id, page, conversation, items, version=1):
    data = {"csrf_token": csrf_from(page), "conversation_id": str(conversation.id), "version": str(version),
            "items": list(items)}
    return client.post(f"/workbench/apps/{app_id}/grants", data=data, headers={"HX-Request": "true"})


def _count(model) -> int:
    return db.session.scalar(select(func.count()).select_from(model))


# --- Adding apps to the workbench -------------------------------------------------------------------

def test_an_administrator_adds_a_live_app_to_the_workbench_and_removes_it(api, admin_client, tenant):
    app_id = publish_live(api, sample_definition(workbench=WORKBENCH))
    page = admin_client.get(f"/extensions/{app_id}").get_data(as_text=True)
    assert "Add to workbench" in page and "Remove from workbench" not in page  # off by default
    assert _add(admin_client, app_id).status_code == 302
    page = admin_client.get(f"/extensions/{app_id}").get_data(as_text=True)
    assert "Remove from workbench" in page and "Add to workbench" not in page
    assert _count(StudioWorkbenchEntry) == 1
    admin_client.post(f"/extensions/{app_id}/workbench/remove", data={"csrf_token": csrf_from(page)})
    assert _count(StudioWorkbenchEntry) == 0
    actions = db.session.scalars(select(AuditEntry.action).where(AuditEntry.tenant_id == tenant.id))
    assert {"studio.workbench_added", "studio.workbench_removed"} <= set(actions)


@pytest.mark.parametrize("state,says", [
    ("draft", "Publish the application to add it to the workbench."),
    ("no_settings", "The live version has no workbench settings."),
])
def test_only_a_live_version_with_workbench_settings_can_be_added(api, admin_client, state, says):
    if state == "draft":
        app_id = api.create(sample_definition(workbench=WORKBENCH))
    else:
        app_id = publish_live(api, sample_definition())
    assert says in admin_client.get(f"/extensions/{app_id}").get_data(as_text=True)
    refused = admin_client.get(_add(admin_client, app_id).location).get_data(as_text=True)
    assert "Could not add" not in refused and _count(StudioWorkbenchEntry) == 0
    assert ("Publish the application before" if state == "draft" else "has no workbench settings") in refused


def test_the_workbench_holds_at_most_ten_apps_in_the_order_they_were_added(api, admin_client, agent_client,
                                                                           conversation):
    app_ids = [publish_live(api, sample_definition(name=f"App {n}", workbench={"title": f"Tool {n:02d}"}))
               for n in range(MAX_APPS + 1)]
    for app_id in app_ids:
        _add(admin_client, app_id)
    assert _count(StudioWorkbenchEntry) == MAX_APPS
    refused = admin_client.get(_add(admin_client, app_ids[-1]).location).get_data(as_text=True)
    assert "The workbench already holds 10 applications" in refused and "Add to workbench" in refused
    titles = re.findall(r'<h3 id="tool-[^"]+-h">(Tool \d+)</h3>', _panel(agent_client, conversation))
    assert titles == [f"Tool {n:02d}" for n in range(MAX_APPS)]


def test_agents_cannot_add_or_remove_apps(api, admin_client, agent_client, tool):
    page = agent_client.get("/workbench").get_data(as_text=True)
    for path in (f"/extensions/{tool}/workbench", f"/extensions/{tool}/workbench/remove"):
        assert agent_client.post(path, data={"csrf_token": csrf_from(page)}).status_code == 403
    assert _count(StudioWorkbenchEntry) == 1


@pytest.mark.parametrize("position", ["before_profile", "after_profile"])
def test_the_form_shows_before_or_after_the_profile_as_the_live_version_says(api, admin_client, agent_client,
                                                                             conversation, position):
    app_id = publish_live(api, sample_definition(workbench={**WORKBENCH, "tools_position": position}))
    _add(admin_client, app_id)
    page = _panel(agent_client, conversation)
    tool_at, profile_at = page.index(f'id="tool-{app_id}"'), page.index('id="customer-details"')
    assert (tool_at < profile_at) == (position == "before_profile")


def test_a_supervisor_sees_and_uses_the_form_too(app, tenant, tool, conversation):
    supervisor = seat(tenant, "supervisor")
    client = app.test_client()
    login(client, supervisor.user.email)
    page = _panel(client, conversation)
    answer = _submit(client, tool, page, conversation, f_title="From a supervisor")
    assert answer.status_code == 200 and "Record saved." in answer.get_data(as_text=True)


# --- The panel's form ---------------------------------------------------------------------------------

def test_the_panel_form_is_the_console_form(admin_client, agent_client, tool, conversation):
    console = admin_client.get(f"/extensions/{tool}").get_data(as_text=True)
    console_form = console[console.index('id="record-form"'):console.index("</form>", console.index('id="record-form"'))]
    panel = _tool_html(_panel(agent_client, conversation), tool)
    strip = lambda html: re.sub(r'(id|for)="[^"]*"', "", html)  # noqa: E731  only the ids differ
    for name in ("f_title", "f_amount", "f_priority", "f_due", "f_urgent"):
        pattern = rf'<(?:input|select|textarea)[^>]*name="{name}"[^>]*>'
        assert strip(re.search(pattern, panel).group(0)) == strip(re.search(pattern, console_form).group(0))


def test_a_panel_submission_is_a_record_with_its_rules_agent_and_conversation(admin_client, agent_client, agent,
                                                                             tool, conversation):
    page = _panel(agent_client, conversation)
    answer = _submit(agent_client, tool, page, conversation, f_title="Refund", f_amount="150")
    assert answer.status_code == 200 and "Record saved." in answer.get_data(as_text=True)
    record = db.session.scalar(select(StudioRecord))
    assert record.data == {"title": "Refund", "amount": 150, "priority": "high", "urgent": False}  # the rule ran
    assert (record.created_by, record.conversation_id) == (agent.user_id, conversation.id)
    ledger = admin_client.get(f"/extensions/{tool}").get_data(as_text=True).split('id="ledger"')[1]
    assert agent.display_name in ledger and PROFILE["name"] in ledger
    assert f"/workbench/conversations/{conversation.id}" in ledger


def test_a_retried_form_instance_replays_and_a_new_instance_gets_a_new_key(agent_client, tool, conversation):
    page = _panel(agent_client, conversation)
    key = _key(_tool_html(page, tool))
    first = _submit(agent_client, tool, page, conversation, key=key, f_title="Once")
    again = _submit(agent_client, tool, page, conversation, key=key, f_title="Once")
    assert "This submission was already saved." in again.get_data(as_text=True)
    assert _count(StudioRecord) == 1
    assert _key(first.get_data(as_text=True)) != key  # the saved form starts a new instance
    other = _submit(agent_client, tool, page, conversation, key=key, f_title="Different")
    assert other.status_code == 422 and "already submitted with other values" in other.get_data(as_text=True)
    assert _count(StudioRecord) == 1


def test_every_page_view_is_a_new_form_instance_for_the_conversation_shown(agent_client, tool, conversation, tenant):
    other = customer_conversation(tenant, "I want my money back", **OTHER)
    first, again = (_tool_html(_panel(agent_client, conversation), tool) for _ in range(2))
    assert _key(first) != _key(again)
    for shown in (conversation, other, conversation):
        html = _tool_html(_panel(agent_client, shown), tool)
        ids = set(re.findall(r'name="conversation_id" value="([^"]+)"', html))
        assert ids == {str(shown.id)}


def test_invalid_input_is_refused_as_in_the_console_and_the_values_stay(agent_client, tool, conversation):
    page = _panel(agent_client, conversation)
    key = _key(_tool_html(page, tool))
    answer = _submit(agent_client, tool, page, conversation, key=key, f_title="", f_amount="12")
    html = answer.get_data(as_text=True)
    assert answer.status_code == 422 and "This field is required." in html
    assert 'name="f_amount" value="12"' in html and _key(html) == key and _count(StudioRecord) == 0


@pytest.mark.parametrize("ending", ["removed", "disabled", "version_without_workbench"])
def test_ending_the_run_entry_refuses_the_open_panels_next_submission(api, admin_client, agent_client, tool,
                                                                      conversation, ending):
    page = _panel(agent_client, conversation)
    console = admin_client.get(f"/extensions/{tool}").get_data(as_text=True)
    if ending == "removed":
        admin_client.post(f"/extensions/{tool}/workbench/remove", data={"csrf_token": csrf_from(console)})
    elif ending == "disabled":
        api.post(f"/{tool}/disable", {})
    else:
        publish_live(api, sample_definition(), app_id=tool)
    answer = _submit(agent_client, tool, page, conversation, f_title="Too late")
    assert answer.status_code == 422 and "no longer in the workbench" in answer.get_data(as_text=True)
    assert _count(StudioRecord) == 0
    assert f'id="tool-{tool}"' not in _panel(agent_client, conversation)


def test_an_open_panel_of_an_older_version_is_refused_after_a_new_live_version(api, agent_client, tool,
                                                                             conversation):
    page = _panel(agent_client, conversation)
    publish_live(api, sample_definition(workbench=WORKBENCH), app_id=tool)
    answer = _submit(agent_client, tool, page, conversation, f_title="Old form")
    assert answer.status_code == 422 and "no longer in the workbench" in answer.get_data(as_text=True)
    assert _count(StudioRecord) == 0


def test_agents_get_no_ledger_records_charts_or_console_page(agent_client, tool, conversation):
    _submit(agent_client, tool, _panel(agent_client, conversation), conversation, f_title="Mine")
    for path in (f"/extensions/{tool}", "/extensions", f"/api/extensions/{tool}", "/api/extensions/",
                 f"/extensions/{tool}?version=1#ledger"):
        response = agent_client.get(path)
        assert response.status_code in (403, 404) and "Mine" not in response.get_data(as_text=True)
    answer = agent_client.post(f"/api/extensions/{tool}/records", headers={"Origin": "http://localhost"},
                               json={"version": 1, "input": {"title": "x"}, "idempotency_key": str(uuid.uuid4())})
    assert answer.status_code == 403 and _count(StudioRecord) == 1


def test_no_variable_substitution_in_the_panel(api, admin_client, agent_client, conversation):
    fields = [{"key": "customer_name", "label": "{{ customer.name }}", "type": "text", "required": True}]
    app_id = publish_live(api, sample_definition(fields=fields, table_columns=["customer_name"], workflow={
        "trigger": "form.submitted", "rules": []}, workbench={"title": "{{ tenant.name }}"}),
                      sample={"customer_name": "x"})
    _add(admin_client, app_id)
    page = _panel(agent_client, conversation)
    tool_html = _tool_html(page, app_id)
    assert "{{ customer.name }}" in tool_html and "{{ tenant.name }}" in tool_html
    assert PROFILE["name"] not in tool_html  # never pre-filled, even for a field of that name
    _submit(agent_client, app_id, page, conversation, f_customer_name="typed by hand")
    assert db.session.scalar(select(StudioRecord.data)) == {"customer_name": "typed by hand"}


def test_another_tenants_app_or_conversation_is_never_reachable_from_the_panel(api, agent_client, tool, conversation,
                                                                              other_tenant):
    page = _panel(agent_client, conversation)
    foreign = customer_conversation(other_tenant, "I want my money back", **OTHER)
    answer = _submit(agent_client, tool, page, foreign, f_title="x")
    assert answer.status_code == 404 and OTHER["name"] not in answer.get_data(as_text=True)
    stranger = _submit(agent_client, uuid.uuid4(), page, conversation, key=str(uuid.uuid4()), f_title="x")
    assert stranger.status_code == 422 and _count(StudioRecord) == 0


# --- Customer-data authorization --------------------------------------------------------------------

def test_only_granted_items_of_the_selected_customer_show_beside_the_form(agent_client, tool, conversation, tenant):
    page = _panel(agent_client, conversation)
    plain = _tool_html(page, tool)
    assert not any(PROFILE[k] in plain for k in PROFILE)  # nothing before a grant: the plain form
    answer = _grant(agent_client, tool, page, conversation, ["name", "note"]).get_data(as_text=True)
    assert PROFILE["name"] in answer and PROFILE["support_note"] in answer
    assert PROFILE["phone"] not in answer and PROFILE["email"] not in answer
    assert "Copy name" in answer and "Copy internal note" in answer and "Copy contact data" not in answer
    other = customer_conversation(tenant, "I want my money back", **OTHER)
    swapped = _tool_html(_panel(agent_client, other), tool)
    assert OTHER["name"] in swapped and PROFILE["name"] not in swapped


def test_grants_are_per_agent(app, tenant, agent_client, tool, conversation):
    _grant(agent_client, tool, _panel(agent_client, conversation), conversation, ["name", "contact", "note"])
    colleague = seat(tenant, "agent")
    client = app.test_client()
    login(client, colleague.user.email)
    assert not any(PROFILE[k] in _tool_html(_panel(client, conversation), tool) for k in PROFILE)


def test_grants_are_per_application(api, admin_client, agent_client, tool, conversation):
    other = publish_live(api, sample_definition(name="Other", workbench={"title": "Other tool"}))
    _add(admin_client, other)
    _grant(agent_client, tool, _panel(agent_client, conversation), conversation, ["name", "contact", "note"])
    page = _panel(agent_client, conversation)
    assert PROFILE["name"] in _tool_html(page, tool)
    assert not any(PROFILE[k] in _tool_html(page, other) for k in PROFILE)


def test_a_grant_lapses_after_90_days(agent_client, tool, conversation):
    _grant(agent_client, tool, _panel(agent_client, conversation), conversation, ["name"])
    grant = db.session.scalar(select(StudioDataGrant))
    assert timedelta(days=89, hours=23) < grant.expires_at - grant.granted_at <= timedelta(days=90)
    db.session.execute(update(StudioDataGrant).values(expires_at=utcnow() - timedelta(seconds=1)))
    db.session.commit()
    assert PROFILE["name"] not in _tool_html(_panel(agent_client, conversation), tool)


def test_a_new_live_version_asks_for_a_new_grant(api, agent_client, tool, conversation):
    _grant(agent_client, tool, _panel(agent_client, conversation), conversation, ["name"])
    publish_live(api, sample_definition(workbench=WORKBENCH), app_id=tool)
    page = _panel(agent_client, conversation)
    assert PROFILE["name"] not in _tool_html(page, tool)
    answer = _grant(agent_client, tool, page, conversation, ["name"], version=2)
    assert PROFILE["name"] in answer.get_data(as_text=True)


def test_unticking_an_item_revokes_it_and_revoke_ends_every_grant_but_keeps_records(agent_client, tool, conversation):
    page = _panel(agent_client, conversation)
    _grant(agent_client, tool, page, conversation, ["name", "contact"])
    after = _grant(agent_client, tool, page, conversation, ["name"]).get_data(as_text=True)
    assert PROFILE["phone"] not in after and PROFILE["name"] in after
    _submit(agent_client, tool, page, conversation, f_title="Kept")
    revoked = _post(agent_client, f"/workbench/apps/{tool}/grants/revoke", page, conversation).get_data(as_text=True)
    assert PROFILE["name"] not in revoked and "Revoke data authorization" not in revoked
    assert db.session.scalar(select(func.count()).select_from(StudioDataGrant)
                             .where(StudioDataGrant.revoked_at.is_(None))) == 0
    assert _count(StudioRecord) == 1


def test_grants_and_revocations_are_audited_without_profile_values(agent_client, tool, conversation, tenant):
    page = _panel(agent_client, conversation)
    _grant(agent_client, tool, page, conversation, ["name", "contact", "note"])
    _post(agent_client, f"/workbench/apps/{tool}/grants/revoke", page, conversation)
    entries = list(db.session.scalars(select(AuditEntry).where(AuditEntry.action.like("studio.data_%"))
                                      .order_by(AuditEntry.created_at)))
    assert [e.action for e in entries] == ["studio.data_granted", "studio.data_revoked"]
    assert entries[0].summary["items"] == ["contact", "name", "note"]
    logged = json.dumps([e.summary for e in entries], ensure_ascii=False)
    assert not any(PROFILE[k] in logged for k in PROFILE)


def test_unknown_items_are_refused(agent_client, tool, conversation):
    answer = _grant(agent_client, tool, _panel(agent_client, conversation), conversation, ["name", "orders"])
    assert answer.status_code == 400 and _count(StudioDataGrant) == 0


def test_granted_profile_data_never_reaches_the_script_runner_or_the_model(api, admin_client, agent_client,
                                                                         conversation, runner, model_server):
    definition = sample_definition(workbench=WORKBENCH, intent={"labels": ["退款", "投诉"]},
                                   code={"language": "javascript",
                                         "source": "return {title: JSON.stringify(input).slice(0, 200)};"})
    app_id = publish_live(api, definition, code_confirmed=True)
    _add(admin_client, app_id)
    page = _panel(agent_client, conversation)
    _grant(agent_client, app_id, page, conversation, ["name", "contact", "note"])
    _submit(agent_client, app_id, page, conversation, f_title="by hand")
    seen_by_runner = db.session.scalar(select(StudioRecord.data))["title"]
    assert "by hand" in seen_by_runner and not any(PROFILE[k] in seen_by_runner for k in PROFILE)
    model_server.answer_json({"label": "退款", "confidence": 0.9})
    _post(agent_client, f"/workbench/apps/{app_id}/intent", page, conversation, confirmed="yes")
    (request,) = model_server.received
    sent = json.dumps(request.body, ensure_ascii=False)
    assert "I want my money back" in sent
    assert not any(part in sent for part in (PROFILE["name"], "Zebulon", "139 1234", "zeb.quax", "VIP-NOTE"))


# --- The intent tool ----------------------------------------------------------------------------------

@pytest.fixture
def intent_tool(api, admin_client) -> str:
    app_id = publish_live(api, sample_definition(workbench=WORKBENCH, intent={"labels": ["退款", "投诉"]}))
    _add(admin_client, app_id)
    return app_id


def _rows() -> tuple:
    return tuple(_count(model) for model in (Message, ConversationEvent, Conversation, Customer, StudioRecord))


def test_intent_asks_for_confirmation_each_time(agent_client, intent_tool, conversation, model_server):
    page = _panel(agent_client, conversation)
    tool = _tool_html(page, intent_tool)
    assert "Analyze intent" in tool and "Confirm analysis" in tool and "uses AI points" in tool
    unconfirmed = _post(agent_client, f"/workbench/apps/{intent_tool}/intent", page, conversation)
    assert unconfirmed.status_code == 422 and model_server.received == []
    model_server.answer_json({"label": "退款", "confidence": 0.9})
    answer = _post(agent_client, f"/workbench/apps/{intent_tool}/intent", page, conversation, confirmed="yes")
    html = answer.get_data(as_text=True)
    assert "Intent: 退款" in html and "Confirm analysis" in html  # the next analysis asks again


def test_intent_shows_label_and_confidence_for_review_and_writes_nothing(agent_client, intent_tool, conversation,
                                                                        model_server):
    page = _panel(agent_client, conversation)
    before, points = _rows(), _count(AiPointsEntry)
    assignee, status = conversation.assignee_member_id, conversation.status
    model_server.answer_json({"label": "退款", "confidence": 0.87})
    html = _post(agent_client, f"/workbench/apps/{intent_tool}/intent", page, conversation,
                 confirmed="yes").get_data(as_text=True)
    assert "Intent: 退款" in html and "confidence 0.87" in html and "Needs human review" in html
    assert _rows() == before and _count(AiPointsEntry) == points + 1
    db.session.refresh(conversation)
    assert (conversation.assignee_member_id, conversation.status) == (assignee, status)


def test_low_confidence_shows_the_reserved_label(agent_client, intent_tool, conversation, model_server):
    model_server.answer_json({"label": "投诉", "confidence": 0.59})
    html = _post(agent_client, f"/workbench/apps/{intent_tool}/intent", _panel(agent_client, conversation),
                 conversation, confirmed="yes").get_data(as_text=True)
    assert "Intent: 无法判断" in html


def test_model_errors_show_the_services_message_not_a_500(agent_client, intent_tool, conversation, model_server):
    model_server.answer_status(503)
    answer = _post(agent_client, f"/workbench/apps/{intent_tool}/intent", _panel(agent_client, conversation),
                   conversation, confirmed="yes")
    assert answer.status_code == 422 and "The AI service is unavailable right now" in answer.get_data(as_text=True)
    assert _count(AiPointsEntry) == 0


def test_an_unconfigured_model_is_said_plainly(agent_client, intent_tool, conversation):
    answer = _post(agent_client, f"/workbench/apps/{intent_tool}/intent", _panel(agent_client, conversation),
                   conversation, confirmed="yes")
    assert answer.status_code == 422 and "not configured" in answer.get_data(as_text=True)


def test_intent_analyses_are_limited_per_agent(agent_client, intent_tool, conversation, model_server, rate_window):
    page = _panel(agent_client, conversation)
    rate_window(60, 5)
    for _ in range(10):
        model_server.answer_json({"label": "退款", "confidence": 0.9})
        _post(agent_client, f"/workbench/apps/{intent_tool}/intent", page, conversation, confirmed="yes")
    answer = _post(agent_client, f"/workbench/apps/{intent_tool}/intent", page, conversation, confirmed="yes")
    assert answer.status_code == 422 and "You analyzed 10 conversations" in answer.get_data(as_text=True)
    assert len(model_server.received) == 10


def test_panel_submissions_are_limited_per_agent_with_a_429_shown_in_the_panel(app, agent_client, tool, conversation,
                                                                             rate_window):
    page = _panel(agent_client, conversation)
    rate_window(60, 5)
    limit = app.config["PANEL_RECORDS_PER_MEMBER_PER_MINUTE"]
    assert limit == 20
    for _ in range(limit):
        assert _submit(agent_client, tool, page, conversation, key=str(uuid.uuid4()), f_title="Fast").status_code == 200
    refused = _submit(agent_client, tool, page, conversation, key=str(uuid.uuid4()), f_title="One too many")
    assert refused.status_code == 429 and 1 <= int(refused.headers["Retry-After"]) <= 60
    assert "Too many forms submitted in this minute" in refused.get_data(as_text=True)
    assert 'value="One too many"' in refused.get_data(as_text=True)  # the form keeps what was typed
    assert _count(StudioRecord) == limit


def test_panel_submissions_are_limited_per_tenant_too(app, tenant, agent_client, tool, conversation, rate_window,
                                                      monkeypatch):
    assert app.config["PANEL_RECORDS_PER_TENANT_PER_MINUTE"] == 200
    monkeypatch.setitem(app.config, "PANEL_RECORDS_PER_TENANT_PER_MINUTE", 3)
    rate_window(60, 5)
    colleague = app.test_client()
    login(colleague, seat(tenant, "agent").user.email)
    for client in (agent_client, agent_client, colleague):
        page = _panel(client, conversation)
        assert _submit(client, tool, page, conversation, f_title="Shared").status_code == 200
    page = _panel(colleague, conversation)
    assert _submit(colleague, tool, page, conversation, f_title="Fourth").status_code == 429
    assert _count(StudioRecord) == 3


# --- Styles ---------------------------------------------------------------------------------------------

def _choose(client, style: str, page: str, **options):
    return client.post("/workbench/style", data={"csrf_token": csrf_from(page), "style": style}, **options)


def _root_classes(page: str) -> set[str]:
    return set(re.search(r'<div class="workbench([^"]*)" id="workbench"', page).group(1).split())


def test_the_style_selector_offers_added_apps_and_remembers_the_choice_per_agent(app, tenant, agent, agent_client,
                                                                               tool):
    page = agent_client.get("/workbench").get_data(as_text=True)
    assert 'id="workbench-style"' in page and "Refund desk" in page and _root_classes(page) == set()
    _choose(agent_client, tool, page)
    assert db.session.get(Member, agent.id).workbench_style == tool
    page = agent_client.get("/workbench").get_data(as_text=True)
    assert _root_classes(page) == {"wb-theme-emerald", "wb-density-compact", "wb-list-380", "wb-details-440"}
    colleague = seat(tenant, "agent")
    client = app.test_client()
    login(client, colleague.user.email)
    assert _root_classes(client.get("/workbench").get_data(as_text=True)) == set()
    _choose(agent_client, "", page)
    assert _root_classes(agent_client.get("/workbench").get_data(as_text=True)) == set()


def test_a_style_not_on_offer_is_refused_and_a_removed_apps_style_falls_back(admin_client, agent_client, agent, tool):
    page = agent_client.get("/workbench").get_data(as_text=True)
    refused = _choose(agent_client, str(uuid.uuid4()), page, follow_redirects=True)
    assert "That style is no longer on offer" in refused.get_data(as_text=True)
    assert db.session.get(Member, agent.id).workbench_style is None
    _choose(agent_client, tool, page)
    console = admin_client.get(f"/extensions/{tool}").get_data(as_text=True)
    admin_client.post(f"/extensions/{tool}/workbench/remove", data={"csrf_token": csrf_from(console)})
    page = agent_client.get("/workbench").get_data(as_text=True)
    assert _root_classes(page) == set() and 'id="workbench-style"' not in page


def _restricted(app, member, kind: str):
    """A browser in an impersonation or assistant session of `member`."""
    client = app.test_client()
    route = {IMPERSONATION: "staff/impersonate", ASSISTANT: "assistant/login"}[kind]
    assert client.get(f"/{route}/{issue_link_token(kind, member)}").status_code == 302
    return client


@pytest.mark.parametrize("kind", [IMPERSONATION, ASSISTANT])
def test_a_restricted_session_chooses_a_style_for_itself_only(app, agent, agent_client, tool, kind):
    _choose(agent_client, tool, agent_client.get("/workbench").get_data(as_text=True))
    restricted = _restricted(app, agent, kind)
    page = restricted.get("/workbench").get_data(as_text=True)
    assert "wb-theme-emerald" in _root_classes(page)  # it starts from the member's saved style
    assert _choose(restricted, "", page).status_code == 302
    assert _root_classes(restricted.get("/workbench").get_data(as_text=True)) == set()
    db.session.expire_all()
    assert db.session.get(Member, agent.id).workbench_style == tool
    assert "wb-theme-emerald" in _root_classes(agent_client.get("/workbench").get_data(as_text=True))


@pytest.mark.parametrize("kind", [IMPERSONATION, ASSISTANT])
def test_a_restricted_session_sees_the_members_data_sharing_but_cannot_change_it(app, agent, agent_client, tool,
                                                                               conversation, kind):
    _grant(agent_client, tool, _panel(agent_client, conversation), conversation, ["name"])
    restricted = _restricted(app, agent, kind)
    page = _panel(restricted, conversation)
    html = _tool_html(page, tool)
    assert PROFILE["name"] in html and "fieldset disabled" in html and "own consent" in html
    assert "Save data sharing" not in html and "Revoke data authorization" not in html
    assert _grant(restricted, tool, page, conversation, ["name", "contact", "note"]).status_code == 403
    revoked = _post(restricted, f"/workbench/apps/{tool}/grants/revoke", page, conversation)
    assert revoked.status_code == 403
    assert db.session.scalars(select(StudioDataGrant.item).where(StudioDataGrant.revoked_at.is_(None))).all() == ["name"]


HOSTILE = '</style><script>alert(1)</script>" style="display:none'


def test_hostile_titles_never_reach_a_style_attribute_stylesheet_or_script(api, admin_client, agent_client,
                                                                         conversation):
    app_id = publish_live(api, sample_definition(name="Hostile", workbench={**WORKBENCH, "title": HOSTILE}))
    _add(admin_client, app_id)
    page = agent_client.get("/workbench").get_data(as_text=True)
    _choose(agent_client, app_id, page)
    page = _panel(agent_client, conversation)
    assert HOSTILE not in page and "<script>alert(1)" not in page
    assert "&lt;/style&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown as text
    assert not re.search(r"<[^>]+\sstyle=", page) and "<style" not in page  # no style attribute, no stylesheet
    assert _root_classes(page) <= {"wb-theme-emerald", "wb-density-compact", "wb-list-380", "wb-details-440"}
    scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, re.S)
    assert all(script == "" for script in scripts)  # only external scripts


def test_styles_never_touch_the_login_tenant_or_sending_controls(agent_client, tool, conversation):
    page = _panel(agent_client, conversation)
    _choose(agent_client, tool, page)
    page = _panel(agent_client, conversation)
    workbench = page[page.index('id="workbench"'):]
    topbar = page[:page.index('id="workbench"')]
    assert "Log out" in topbar and 'class="tenant"' in topbar  # outside the styled element
    assert 'id="composer"' in workbench and ">Send</button>" in workbench


# --- Cost ----------------------------------------------------------------------------------------------

def test_the_workbench_page_costs_the_same_statements_with_none_one_or_ten_apps(app, api, admin_client, agent_client,
                                                                        conversation):
    _panel(agent_client, conversation)  # the first view marks the conversation read
    none = statements(app, lambda: _panel(agent_client, conversation))
    first = publish_live(api, sample_definition(workbench=WORKBENCH))
    _add(admin_client, first)
    _grant(agent_client, first, _panel(agent_client, conversation), conversation, ["name"])
    one = statements(app, lambda: _panel(agent_client, conversation))
    for n in range(MAX_APPS - 1):
        _add(admin_client, publish_live(api, sample_definition(name=f"App {n}", workbench=WORKBENCH)))
    ten = statements(app, lambda: _panel(agent_client, conversation))
    assert none == one == ten  # the tools and the member's grants are read in one statement either way
