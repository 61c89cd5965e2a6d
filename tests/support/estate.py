"""The estate the page walks stand on: one of everything (in two tenants), so every page shows
every form, and everyone who walks it; and the app's routes with their paths filled in from it."""
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote_from_bytes

from rq import Queue

from core.clock import utcnow
from core.config import AUTOMATION_SWITCHES
from core.db import db
from core.queue_names import DEFAULT
from desk import waiting
from desk.availability import replace_calendar, save_policy, save_schedule
from desk.availability_models import POLICY_DEFAULTS
from desk.channels import create_channel
from desk.conversations import mark_sending, resolve_uncertain
from desk.handoff import issue_link_token
from desk.knowledge import create_document, publish, save_version
from desk.models import ChannelDelivery, Conversation, Customer, Message, OfficialAccount
from desk.outbound import set_endpoint
from desk.quick_replies import add_reply
from desk.service_level_models import ServiceLevelTimer
from desk.service_levels import save_settings
from desk.sessions import IMPERSONATION
from desk.tenancy import add_member
from openapi.apps import CONFIRMED_SCOPES, SCOPES, create_app as create_open_app
from rules.execution import command_key
from studio.apps import get_app
from studio.catalog import PUBLISH_PERMISSIONS
from studio.workbench import add_to_workbench, open_entry, set_grants
from tests.conftest import PASSWORD, csrf_from, login, seat
from tests.support.rule_runs import CONFIRM, complete_plan, make_conversations
from tests.support.rules import weekly_rule
from tests.support.studio import ORIGIN, sample_definition


def long(text: str, limit: int) -> str:
    """`text` lengthened to `limit` characters, the most the product takes for it: words, Chinese
    and an unbroken token, as administrators write them (the phone walk shows each of them)."""
    filler = " 季度企业客户满意度回访 ORDER-FOLLOWUP-REVIEW-2026 escalated enterprise-customers"
    return (text + filler * (limit // len(filler) + 1))[:limit - 1] + "."


LOW, HIGH = long("low", 60), long("high", 60)  # the estate's select options, as long as options go


def long_definition(**changes) -> dict:
    """The sample definition with every text it shows at its longest."""
    definition = sample_definition(**{"name": long("Service request", 60), **changes})
    definition["page"] = {**definition["page"], "title": long("New request", 80), "submit_label": long("Save", 30),
                          "description": long("Fill in the request.", 400)}
    for field in definition["fields"]:
        field["label"] = long(field["label"], 60)
    definition["fields"][2]["options"] = [LOW, HIGH]
    rule = definition["workflow"]["rules"][0]
    rule["name"], rule["then"]["value"] = long(rule["name"], 80), HIGH
    return definition


@dataclass
class Estate:
    """What the walk fills route arguments with, and who walks: the administrator (in two tenants),
    a supervisor, an agent, an impersonation session of that agent, and nobody."""
    values: dict
    admin: object
    anonymous: object
    channel_secret: str
    open_token: str
    supervisor: object = None
    agent: object = None
    impersonation: object = None

    def walkers(self) -> list:
        """Everyone who walks the query arguments."""
        return [self.admin, self.supervisor, self.agent, self.impersonation, self.anonymous]


def build_estate(app, tenant, other_tenant, admin, monkeypatch, redis_conn, dns) -> Estate:
    """The administrator (seated in two tenants, so the tenant choice shows) with a live
    application and a newer simulated draft, a published rule with a fresh plan and an uncertain
    command, a knowledge document published and edited again, a signed channel, conversations, an
    open application and a generation; every switch on and a model named (it is never called: the
    walk runs no jobs), so a 5xx can only be a fault. The live version has an http action bound to
    an address (its DNS answered by the test) and a campaign action already run on a record."""
    for name in AUTOMATION_SWITCHES:
        monkeypatch.setitem(app.config, name, True)
    monkeypatch.setitem(app.config, "OPEN_API_RATE_LIMIT", 10 ** 9)
    monkeypatch.setitem(app.config, "MODEL_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setitem(app.config, "MODEL_NAME", "unused")
    monkeypatch.setitem(app.config, "GENERATION_WAIT_SECONDS", 0)
    tenant.name, other_tenant.name = long("Acme", 120), long("Other Co", 120)
    admin.display_name = long("Admin Person", 80)
    add_member(other_tenant.id, admin.user.email, PASSWORD, "admin")
    first, second = add_member(tenant.id, "first@test.example", PASSWORD, "agent", long("First Agent", 80)), \
        add_member(tenant.id, "second@test.example", PASSWORD, "agent", long("Second Agent", 80))
    channel, channel_secret = create_channel(tenant.id, long("Website chat", 80))
    title = long("Refunds", 200)
    doc = create_document(tenant.id, admin.user_id, title, "Check the receipt.")
    publish(doc, admin.user_id, 1)
    save_version(doc, admin.user_id, 1, title, "Check the receipt twice.")
    opened = create_open_app(tenant.id, admin.user_id, long("Partner CRM", 80), list(SCOPES), None,
                             processing_confirmed=True, confirmed_scopes=CONFIRMED_SCOPES)
    db.session.commit()

    browser = app.test_client()
    assert login(browser, admin.user.email).status_code == 302
    select = browser.get("/tenants/select")
    token = csrf_from(select.get_data(as_text=True))
    assert browser.post("/tenants/select", data={"csrf_token": token, "tenant_id": str(tenant.id)}).status_code == 302
    tool = {"title": long("Desk tool", 60), "theme": "violet", "tools_position": "before_profile"}
    dns["crm.example.com"] = [["93.184.216.34"]]
    app_id = created(browser.post("/api/extensions/", json={"definition": long_definition(
        workbench=tool, actions=ESTATE_ACTIONS)}, headers=ORIGIN), "extension_id")
    for path, body in ((f"/{app_id}/simulate", {"version": 1, "input": {"title": "Sample"}}),
                       (f"/{app_id}/publish", {"version": 1, "expected_active_version": None,
                                               "permissions": PUBLISH_PERMISSIONS}),
                       (f"/{app_id}/versions", {"definition": sample_definition(name="Second")}),
                       (f"/{app_id}/simulate", {"version": 2, "input": {"title": "Sample"}})):
        assert browser.post(f"/api/extensions{path}", json=body, headers=ORIGIN).status_code < 300
    rule_id = created(browser.post("/api/extensions/automation-rules", json={"definition": weekly_rule(
        first, second, name=long("Weekday rotation", 80))}, headers=ORIGIN), "rule_id")
    assert browser.post(f"/api/extensions/{rule_id}/rule-publish", headers=ORIGIN, json={
        "revision": 1, "expected_active_revision": None, "confirm": True, "execution_mode": "plan_only",
        "permissions": ["conversation.read_for_plan", "automation.schedule_plan"]}).status_code == 200
    in_workbench = workbench_tool(browser, tenant, admin, tool)
    record_id, action_run_id = record_with_actions(browser, tenant, app_id)
    generation_id = created(browser.post("/api/extensions/generate", json={"prompt": "A returns form."},
                                          headers=ORIGIN), "generation_id")
    conversations = make_conversations(tenant, 2)
    for conversation in conversations:
        found = db.session.get(Customer, conversation.customer_id)
        found.name, found.phone = long("Wang Fang", 120), long("+86 138 0013 8000", 40)
        found.email, found.support_note = f"{'x' * 200}@example.com", long("Prefers e-mail.", 2000)
    complete_plan(tenant, rule_id, first, conversations[:1])  # fresh and complete: the execute form shows
    uncertain = complete_plan(tenant, rule_id, second, conversations[1:])
    assert browser.post(f"/api/extensions/{uncertain.id}/execute-plan", json=CONFIRM, headers=ORIGIN
                        ).status_code == 202
    assert mark_sending(tenant.id, command_key(uncertain.id), conversations[1].id)
    db.session.commit()
    assert resolve_uncertain(tenant.id, command_key(uncertain.id), conversations[1].id) == "uncertain"
    db.session.commit()
    reply = add_reply(tenant.id, long("Greeting", 80), long("Hello!", 2000))
    db.session.commit()
    chat = db.session.get(Conversation, conversations[1].id)
    dns["replies.example.com"] = [["93.184.216.34"]]
    set_endpoint(tenant.id, chat.channel_id, "https://replies.example.com/hook")
    sent = Message(tenant_id=tenant.id, conversation_id=chat.id, channel_id=chat.channel_id, direction="outbound",
                   author_member_id=first.id, text="Your parcel left today.")
    db.session.add(sent)
    db.session.flush()
    db.session.add(ChannelDelivery(tenant_id=tenant.id, channel_id=chat.channel_id, message_id=sent.id, body="{}",
                                   status="failed", attempts=8))  # the retry form shows
    db.session.commit()
    availability(tenant, first, chat)
    Queue(DEFAULT, connection=redis_conn).empty()  # the walk runs no jobs

    seat(tenant, "supervisor", "supervisor@test.example")
    walkers = [app.test_client() for _ in range(3)]
    for walker, email in zip(walkers, ("supervisor@test.example", "first@test.example")):
        assert login(walker, email).status_code == 302
    assert walkers[2].get(f"/staff/impersonate/{issue_link_token(IMPERSONATION, first)}").status_code == 302

    values = {"app_id": app_id, "in_workbench": in_workbench, "rule_id": rule_id, "run_id": str(uncertain.id),
              "conversation_id": str(conversations[1].id), "document_id": str(doc.id),
              "generation_id": generation_id, "channel_id": str(channel.id),
              "customer_id": str(conversations[0].customer_id), "slug": "de-escalation",
              "once": "a-used-or-unknown-once-key", "reply_id": str(reply.id), "message_id": str(sent.id),
              "token": "an-unknown-token", "filename": "app.css",
              "record_id": record_id, "action_key": "crm", "action_run_id": action_run_id, "tag": "zh-CN",
              "admin_email": admin.user.email, "tenant_id": str(tenant.id), "member_id": str(first.id)}
    return Estate(values, browser, app.test_client(), channel_secret, opened.token, *walkers)


def availability(tenant, member, conversation) -> None:
    """The tenant's availability policy on, a member's night shift and leave, a holiday and a
    make-up workday, the conversation waiting for that member (its thread's line included), and
    service-level policies with weekly hours: the availability page, the team board and the thread
    show every part."""
    save_policy(tenant.id, None, {**POLICY_DEFAULTS, "enabled": True, "no_reply_minutes": 10,
                                  "offline_policy": "release_after", "release_after_minutes": 30})
    save_schedule(tenant.id, None, member.id, 3, [{"weekdays": [1, 2, 3, 4, 5], "start": "22:00", "end": "06:00"}],
                  [{"from": "2026-01-30", "to": "2026-02-02"}], utcnow())
    replace_calendar(tenant.id, None, [{"date": "2026-10-01", "kind": "holiday", "name": "国庆节"},
                                       {"date": "2026-10-10", "kind": "workday", "name": "国庆节调休", "as_weekday": 5}])
    waiting.join(tenant.id, conversation.id, member.id, "agent_offline", conversation.assignee_member_id, utcnow())
    save_settings(tenant.id, None, [{"channel_id": None, "first_response_minutes": 30, "next_response_minutes": 60,
                                     "resolution_minutes": 2880, "hours": "business"}],
                  [{"weekdays": [1, 2, 3, 4, 5], "start": "09:00", "end": "18:00"}])
    service_levels_of(conversation, member, utcnow())
    db.session.commit()


def service_levels_of(conversation, member, now: datetime) -> None:
    """A first response met, a next response breached and still running, a resolution paused: the
    list's badge, "Breaching soon" and the thread's targets and breach line show every part."""
    hour, ids = timedelta(hours=1), {"tenant_id": conversation.tenant_id, "conversation_id": conversation.id,
                                     "channel_id": conversation.channel_id, "hours": "business"}
    db.session.add_all([
        ServiceLevelTimer(**ids, kind="first_response", target_minutes=30, started_at=now - 3 * hour,
                          started_on=now.date(), used_minutes=12.0, due_at=now - 2 * hour, stopped_at=now - 2.5 * hour,
                          elapsed_minutes=12.0, member_id=member.id, outcome="met"),
        ServiceLevelTimer(**ids, kind="next_response", target_minutes=60, started_at=now - 2 * hour,
                          started_on=now.date(), counted_since=now - 2 * hour, due_at=now - hour,
                          breached_at=now - hour, outcome="breached"),
        ServiceLevelTimer(**ids, kind="resolution", target_minutes=2880, started_at=now - 3 * hour,
                          started_on=now.date(), used_minutes=60.0)])


def workbench_tool(browser, tenant, admin, settings: dict) -> str:
    """A live application with intent labels in the workbench, its customer data shared by the
    administrator: the panel shows every form (the index page its removal)."""
    definition = long_definition(name=long("Desk tool", 60), workbench=settings,
                                 intent={"labels": ["退款", long("投诉 late-delivery", 30)]})
    app_id = created(browser.post("/api/extensions/", json={"definition": definition}, headers=ORIGIN),
                      "extension_id")
    for path, body in ((f"/{app_id}/simulate", {"version": 1, "input": {"title": "Sample"}}),
                       (f"/{app_id}/publish", {"version": 1, "expected_active_version": None,
                                               "permissions": PUBLISH_PERMISSIONS})):
        assert browser.post(f"/api/extensions{path}", json=body, headers=ORIGIN).status_code < 300
    found = get_app(tenant.id, uuid.UUID(app_id))
    add_to_workbench(found, admin.user_id)
    set_grants(admin, open_entry(admin, found.id, 1), {"name", "contact", "note"}, restricted=False)
    db.session.commit()
    return app_id


ESTATE_ACTIONS = [{"key": "crm", "title": long("Send to CRM", 80), "kind": "http", "fields": ["title", "amount"]},
                  {"key": "promo", "title": long("Promotion draft", 80), "kind": "campaign", "name_field": "title",
                   "content_field": "priority"}]


def record_with_actions(browser, tenant, app_id: str) -> tuple[str, str]:
    """A record of the live version whose campaign action ran (its outcome shows) and whose http
    action, bound to an address, waits to be run (its form shows)."""
    db.session.add(OfficialAccount(tenant_id=tenant.id, name=long("Acme official", 120), kind="independent"))
    db.session.commit()
    assert browser.post(f"/api/extensions/{app_id}/actions", headers=ORIGIN, json={
        "operation": "bind", "version": 1, "action_key": "crm", "endpoint": "https://crm.example.com/hook",
        "bearer_token": "estate-token", "confirm": True}).status_code == 201
    record_id = created(browser.post(f"/api/extensions/{app_id}/records", headers=ORIGIN, json={
        "version": 1, "input": {"title": long("Spring sale", 200), "amount": 5, "priority": LOW},
        "idempotency_key": str(uuid.uuid4())}), "record_id", 200)
    campaign = browser.post(f"/api/extensions/{app_id}/actions", headers=ORIGIN, json={
        "operation": "run", "version": 1, "record_id": record_id, "action_key": "promo", "confirm": True})
    return record_id, created(campaign, "run_id", 200)


def created(response, name: str, status: int | None = None) -> str:
    """The id `name` a creating request answered (with `status`, else 201 or 202)."""
    assert response.status_code in ((status,) if status else (201, 202)), response.get_data(as_text=True)
    return response.get_json()["data"][name]


def url_rules(app, method: str) -> list:
    """The app's URL rules that answer `method`, in path order."""
    return sorted((r for r in app.url_map.iter_rules() if method in r.methods), key=lambda r: r.rule)


def rule_path(rule, values: dict, hostile: tuple[str, str] | None = None) -> str:
    """The rule's path with the estate's values, one argument replaced by percent-encoded text."""
    def segment(match):
        name = match[1].split(":")[-1]
        text = hostile[1] if hostile and hostile[0] == name else values[name]
        return quote_from_bytes(text.encode("utf-8", "surrogatepass"), safe="")
    return re.sub(r"<([^>]+)>", segment, rule.rule)
