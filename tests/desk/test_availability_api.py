"""The console JSON API of availability (issue 35): defaults before anything is saved, round trips of
the policy, a member's schedule and the calendar, the waiting queue, the load that counts, and who
may read and change them (administrators' console sessions of the tenant only)."""
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import func, select

from core.audit import AuditEntry
from core.db import db
from desk.availability_models import POLICY_DEFAULTS, AvailabilityPolicy, WaitingConversation
from desk.handoff import issue_link_token
from desk.models import Conversation, Customer, Member
from desk.sessions import ASSISTANT, IMPERSONATION
from desk.tenancy import add_member
from tests.conftest import PASSWORD, csrf_from, login, seat
from tests.support.concurrency import PARALLEL, at_once, browsers_of
from tests.support.desk import browser_of, stop_the_clock
from tests.support.studio import ORIGIN, ExtensionsApi

NOW = datetime(2026, 10, 5, 2, 0, tzinfo=timezone.utc)  # Monday 10:00 in Beijing
POLICY = {"enabled": True, "default_capacity": 3, "fallback_after_minutes": 0, "no_reply_minutes": 15,
          "offline_policy": "release_after", "release_after_minutes": 30}
SCHEDULE = {"capacity": 2, "shifts": [{"weekdays": [1, 2, 3, 4, 5], "start": "09:00", "end": "18:00"},
                                      {"weekdays": [6], "start": "22:00", "end": "06:00"}],
            "leave": [{"from": "2026-10-20", "to": "2026-10-23"}]}
CALENDAR = [{"date": "2026-10-10", "kind": "workday", "name": "国庆节调休", "as_weekday": 5},
            {"date": "2026-10-01", "kind": "holiday", "name": "国庆节", "as_weekday": None}]


def code(response) -> tuple[int, str, str | None]:
    """(status, error code, detail) of a refusal."""
    error = response.get_json()["error"]
    return response.status_code, error["code"], error.get("detail")


class AvailabilityApi(ExtensionsApi):
    """An administrator's browser on /api/extensions/availability."""

    def overview(self) -> dict:
        response = self.get("/availability")
        assert response.status_code == 200, response.get_json()
        return response.get_json()["data"]

    def entry(self, member: Member) -> dict:
        return next(m for m in self.overview()["members"] if m["member_id"] == str(member.id))


@pytest.fixture
def availability(admin_client) -> AvailabilityApi:
    return AvailabilityApi(admin_client)


@pytest.fixture
def now(monkeypatch) -> datetime:
    """The app's clock stands at NOW (Monday 10:00 in Beijing)."""
    return stop_the_clock(monkeypatch, NOW)


def open_for(tenant, member: Member | None, status: str = "open") -> Conversation:
    """A conversation of a new customer with that status and assignee; committed."""
    customer = Customer(tenant_id=tenant.id, name="Wang Fang")
    db.session.add(customer)
    db.session.flush()
    found = Conversation(tenant_id=tenant.id, customer_id=customer.id, status=status,
                         assignee_member_id=member.id if member else None)
    db.session.add(found)
    db.session.commit()
    return found


def seen_at(member: Member, instant: datetime) -> None:
    """The member's workbench was last requested at `instant`."""
    db.session.get(Member, member.id).last_seen_at = instant
    db.session.commit()


def audits(action: str) -> list[AuditEntry]:
    db.session.expire_all()
    return list(db.session.scalars(select(AuditEntry).where(AuditEntry.action == action)))


# --- reading ------------------------------------------------------------------------------------

def test_a_tenant_that_saved_nothing_has_the_default_policy_and_empty_lists(availability, tenant, admin, agent,
                                                                           now):
    data = availability.overview()
    assert data["policy"] == POLICY_DEFAULTS == {
        "enabled": False, "default_capacity": 8, "fallback_after_minutes": 5, "no_reply_minutes": None,
        "offline_policy": "keep", "release_after_minutes": None}
    assert data["calendar"] == [] and data["queue"] == []
    assert {m["member_id"] for m in data["members"]} == {str(admin.id), str(agent.id)}
    assert next(m for m in data["members"] if m["member_id"] == str(agent.id)) == {
        "member_id": str(agent.id), "display_name": "Agent Person", "role": "agent", "presence": "offline",
        "available": False, "reason_code": "agent_offline", "open_count": 0, "capacity": None, "shifts": [],
        "leave": []}
    assert db.session.get(AvailabilityPolicy, tenant.id) is None  # reading writes no row


def test_members_are_listed_by_name_without_inactive_ones(availability, tenant, admin):
    later, earlier, gone = seat(tenant, "agent"), seat(tenant, "supervisor"), seat(tenant, "agent")
    for member, name in ((later, "Zhou"), (earlier, "An"), (gone, "Gone"), (admin, "Ma")):
        db.session.get(Member, member.id).display_name = name
    db.session.get(Member, gone.id).active = False
    db.session.commit()
    names = [(m["display_name"], m["role"]) for m in availability.overview()["members"]]
    assert names == [("An", "supervisor"), ("Ma", "admin"), ("Zhou", "agent")]


def test_a_member_seen_within_ninety_seconds_shows_the_saved_presence(availability, agent, now):
    seen_at(agent, NOW - timedelta(seconds=89))
    assert (availability.entry(agent)["presence"], availability.entry(agent)["available"]) == ("online", True)
    db.session.get(Member, agent.id).presence = "away"
    db.session.commit()
    assert availability.entry(agent)["reason_code"] == "agent_away"
    seen_at(agent, NOW - timedelta(seconds=90))
    assert (availability.entry(agent)["presence"], availability.entry(agent)["reason_code"]) == \
        ("offline", "agent_offline")


def test_only_open_conversations_assigned_to_the_member_count_as_load(availability, tenant, agent, now):
    other = seat(tenant, "agent")
    seen_at(agent, NOW)
    assert availability.post(f"/availability/members/{agent.id}", {**SCHEDULE, "leave": []}).status_code == 200
    first, _ = open_for(tenant, agent), open_for(tenant, agent)
    for status in ("pending", "resolved"):
        open_for(tenant, agent, status)
    open_for(tenant, other)
    open_for(tenant, None)
    entry = availability.entry(agent)
    assert (entry["open_count"], entry["capacity"], entry["reason_code"]) == (2, 2, "agent_at_capacity")
    db.session.get(Conversation, first.id).status = "resolved"
    db.session.commit()
    entry = availability.entry(agent)
    assert (entry["open_count"], entry["available"], entry["reason_code"]) == (1, True, None)


def test_the_policy_default_capacity_applies_to_members_without_their_own(availability, tenant, agent, now):
    seen_at(agent, NOW)
    assert availability.post("/availability", {"policy": {**POLICY, "default_capacity": 1}}).status_code == 200
    open_for(tenant, agent)
    assert availability.entry(agent)["reason_code"] == "agent_at_capacity"


def test_shifts_leave_and_the_calendar_decide_the_reason_shown(availability, agent, monkeypatch):
    seen_at(agent, NOW)
    availability.post(f"/availability/members/{agent.id}", SCHEDULE)
    availability.post("/availability/calendar", {"calendar": CALENDAR})
    for instant, reason in ((NOW, None), (datetime(2026, 10, 5, 11, 0, tzinfo=timezone.utc), "outside_shift"),
                            (datetime(2026, 10, 1, 2, 0, tzinfo=timezone.utc), "holiday"),
                            (datetime(2026, 10, 20, 2, 0, tzinfo=timezone.utc), "agent_on_leave")):
        stop_the_clock(monkeypatch, instant)
        seen_at(agent, instant)
        assert availability.entry(agent)["reason_code"] == reason, instant


def test_the_waiting_queue_is_shown_oldest_first(availability, tenant, other_tenant, agent):
    first, second, foreign = open_for(tenant, None), open_for(tenant, None), open_for(other_tenant, None)
    db.session.add_all([
        WaitingConversation(tenant_id=tenant.id, conversation_id=second.id, reason_code="agent_offline",
                            preferred_member_id=agent.id, waiting_since=NOW),
        WaitingConversation(tenant_id=tenant.id, conversation_id=first.id, reason_code="no_reply",
                            waiting_since=NOW - timedelta(minutes=3)),
        WaitingConversation(tenant_id=other_tenant.id, conversation_id=foreign.id, reason_code="holiday",
                            waiting_since=NOW - timedelta(minutes=9))])
    db.session.commit()
    assert availability.overview()["queue"] == [
        {"conversation_id": str(first.id), "preferred_member_id": None, "reason_code": "no_reply",
         "waiting_since": "2026-10-05T01:57:00.000000Z"},
        {"conversation_id": str(second.id), "preferred_member_id": str(agent.id), "reason_code": "agent_offline",
         "waiting_since": "2026-10-05T02:00:00.000000Z"}]


# --- the policy -------------------------------------------------------------------------------------

def test_a_saved_policy_is_answered_and_read_back(availability, tenant, admin):
    response = availability.post("/availability", {"policy": POLICY})
    assert response.status_code == 200 and response.get_json()["data"] == {"policy": POLICY}
    assert availability.overview()["policy"] == POLICY
    changed = {**POLICY, "offline_policy": "keep", "release_after_minutes": None, "enabled": False}
    assert availability.post("/availability", {"policy": changed}).get_json()["data"]["policy"] == changed
    assert availability.overview()["policy"] == changed
    saved = audits("availability.policy_saved")
    assert {(a.tenant_id, a.actor_id, a.target) for a in saved} == {(tenant.id, admin.user_id, f"tenant:{tenant.id}")}
    assert sorted((a.summary for a in saved), key=lambda s: s["enabled"]) == [changed, POLICY]


def test_first_saves_at_once_all_succeed_with_one_row(app, tenant, admin):
    answers = at_once(browsers_of(app, admin.user.email, PARALLEL), "/api/extensions/availability", {"policy": POLICY})
    assert [answer.status_code for answer in answers] == [200] * PARALLEL
    assert db.session.scalar(select(func.count()).select_from(AvailabilityPolicy)) == 1
    assert len(audits("availability.policy_saved")) == PARALLEL


def test_calendar_replacements_at_once_leave_one_of_them_whole(app, tenant, admin):
    answers = at_once(browsers_of(app, admin.user.email, PARALLEL), "/api/extensions/availability/calendar",
                      {"calendar": CALENDAR})
    assert [answer.status_code for answer in answers] == [200] * PARALLEL
    assert AvailabilityApi(browsers_of(app, admin.user.email, 1)[0]).overview()["calendar"] == [CALENDAR[1],
                                                                                                CALENDAR[0]]


def test_the_policys_optional_minutes_default_to_null(availability):
    given = {key: POLICY[key] for key in ("enabled", "default_capacity", "fallback_after_minutes")}
    response = availability.post("/availability", {"policy": {**given, "offline_policy": "keep"}})
    assert response.get_json()["data"]["policy"] == {**given, "offline_policy": "keep", "no_reply_minutes": None,
                                                     "release_after_minutes": None}


@pytest.mark.parametrize("body, refused", [
    ({"policy": {**POLICY, "default_capacity": 101}}, (400, "invalid_policy", "policy.default_capacity")),
    ({"policy": {**POLICY, "release_after_minutes": None}}, (400, "invalid_policy", "policy.release_after_minutes")),
    ({"policy": {**POLICY, "colour": "blue"}}, (400, "invalid_json", "policy.colour")),
    ({"policy": POLICY, "colour": "blue"}, (400, "invalid_json", "colour")),
    ({}, (400, "required_field_missing", "policy")),
])
def test_a_refused_policy_changes_nothing(availability, tenant, body, refused):
    assert code(availability.post("/availability", body)) == refused
    assert db.session.get(AvailabilityPolicy, tenant.id) is None and audits("availability.policy_saved") == []


# --- a member's schedule ----------------------------------------------------------------------------

def test_a_members_schedule_is_replaced_and_read_back(availability, tenant, admin, agent, now):
    response = availability.post(f"/availability/members/{agent.id}", SCHEDULE)
    assert response.status_code == 200
    entry = response.get_json()["data"]
    assert entry == availability.entry(agent)
    assert {key: entry[key] for key in SCHEDULE} == SCHEDULE and entry["member_id"] == str(agent.id)
    cleared = {"capacity": None, "shifts": [], "leave": []}
    answered = availability.post(f"/availability/members/{agent.id}", cleared).get_json()["data"]
    assert {key: answered[key] for key in cleared} == cleared
    saved = audits("availability.schedule_saved")
    assert sorted(a.summary["shifts"] for a in saved) == [0, 2]
    assert {(a.target, a.actor_id) for a in saved} == {(f"member:{agent.id}", admin.user_id)}
    assert next(a.summary for a in saved if a.summary["shifts"]) == {"capacity": 2, "shifts": 2, "leave": 1}


def test_a_foreign_missing_or_inactive_member_is_not_found(availability, tenant, other_tenant):
    foreign, inactive = seat(other_tenant, "agent"), seat(tenant, "agent")
    db.session.get(Member, inactive.id).active = False
    db.session.commit()
    for member_id in (foreign.id, inactive.id, uuid.uuid4()):
        assert code(availability.post(f"/availability/members/{member_id}", SCHEDULE)) == (404, "not_found", None)
    assert code(availability.post("/availability/members/not-a-uuid", SCHEDULE))[:2] == (404, "not_found")
    assert db.session.get(Member, foreign.id).capacity is None


@pytest.mark.parametrize("body, refused", [
    ({**SCHEDULE, "capacity": 0}, (400, "invalid_schedule", "capacity")),
    ({**SCHEDULE, "shifts": [{"weekdays": [], "start": "09:00", "end": "18:00"}]},
     (400, "invalid_schedule", "shifts[0].weekdays")),
    ({**SCHEDULE, "leave": [{"from": "2026-02-03", "to": "2026-02-02"}]}, (400, "invalid_schedule", "leave[0].to")),
    ({**SCHEDULE, "shifts": SCHEDULE["shifts"] * 7 + SCHEDULE["shifts"][:1]}, (400, "invalid_schedule", "shifts")),
    ({**SCHEDULE, "leave": SCHEDULE["leave"] * 51}, (400, "invalid_schedule", "leave")),
    ({**SCHEDULE, "note": "x"}, (400, "invalid_json", "note")),
    ({"capacity": 2, "shifts": []}, (400, "required_field_missing", "leave")),
])
def test_a_refused_schedule_changes_nothing(availability, agent, body, refused):
    assert code(availability.post(f"/availability/members/{agent.id}", body)) == refused
    db.session.expire_all()
    assert db.session.get(Member, agent.id).capacity is None and audits("availability.schedule_saved") == []


# --- the calendar -----------------------------------------------------------------------------------

def test_the_calendar_is_replaced_and_read_back_by_date(availability, tenant):
    response = availability.post("/availability/calendar", {"calendar": CALENDAR})
    by_date = [CALENDAR[1], CALENDAR[0]]
    assert response.status_code == 200 and response.get_json()["data"] == {"calendar": by_date}
    assert availability.overview()["calendar"] == by_date
    spring = [{"date": "2027-02-06", "kind": "holiday", "name": "春节"}]
    assert availability.post("/availability/calendar", {"calendar": spring}).status_code == 200
    assert availability.overview()["calendar"] == [{**spring[0], "as_weekday": None}]
    assert availability.post("/availability/calendar", {"calendar": []}).status_code == 200
    assert availability.overview()["calendar"] == []
    assert sorted((a.summary["holiday"], a.summary["workday"]) for a in audits("availability.calendar_replaced")) \
        == [(0, 0), (1, 0), (1, 1)]


@pytest.mark.parametrize("body, refused", [
    ({"calendar": CALENDAR + [CALENDAR[0]]}, (400, "invalid_calendar", "calendar[2].date")),
    ({"calendar": [{**CALENDAR[0], "as_weekday": None}]}, (400, "invalid_calendar", "calendar[0].as_weekday")),
    ({"calendar": [{**CALENDAR[1], "as_weekday": 4}]}, (400, "invalid_calendar", "calendar[0].as_weekday")),
    ({"calendar": [{**CALENDAR[1], "name": ""}]}, (400, "invalid_calendar", "calendar[0].name")),
    ({"calendar": [{**CALENDAR[1], "note": ""}]}, (400, "invalid_json", "calendar[0].note")),
    ({"calendar": "2026-10-01"}, (400, "invalid_calendar", "calendar")),
    ({"entries": []}, (400, "invalid_json", "entries")),
])
def test_a_refused_calendar_keeps_the_one_saved(availability, body, refused):
    availability.post("/availability/calendar", {"calendar": CALENDAR})
    assert code(availability.post("/availability/calendar", body)) == refused
    assert len(availability.overview()["calendar"]) == 2


def test_two_hundred_calendar_entries_fit_the_body_limit(availability):
    entries = [{"date": f"2026-{1 + n // 28:02d}-{1 + n % 28:02d}", "kind": "workday", "name": "国庆节调休",
                "as_weekday": 1 + n % 7} for n in range(200)]
    assert availability.post("/availability/calendar", {"calendar": entries}).status_code == 200
    too_big = availability.client.post("/api/extensions/availability/calendar", headers=ORIGIN,
                                       data=b'{"calendar": [' + b" " * 32_000 + b"]}", content_type="application/json")
    assert code(too_big)[:2] == (413, "request_too_large")


# --- tenants and who may ------------------------------------------------------------------------------

def test_another_tenants_availability_never_shows(app, availability, tenant, other_tenant, admin, agent):
    other_admin = seat(other_tenant, "admin")
    other_agent = seat(other_tenant, "agent")
    theirs = AvailabilityApi(browser_of(app, other_admin))
    assert theirs.post("/availability", {"policy": POLICY}).status_code == 200
    assert theirs.post("/availability/calendar", {"calendar": CALENDAR}).status_code == 200
    assert theirs.post(f"/availability/members/{other_agent.id}", SCHEDULE).status_code == 200
    open_for(other_tenant, other_agent)
    ours = availability.overview()
    assert ours["policy"] == POLICY_DEFAULTS and ours["calendar"] == []
    assert {m["member_id"] for m in ours["members"]} == {str(admin.id), str(agent.id)}
    assert code(theirs.post(f"/availability/members/{agent.id}", SCHEDULE))[:2] == (404, "not_found")
    assert availability.post("/availability/calendar", {"calendar": CALENDAR[:1]}).status_code == 200
    theirs_now = theirs.overview()
    assert {m["member_id"] for m in theirs_now["members"]} == {str(other_admin.id), str(other_agent.id)}
    assert len(theirs_now["calendar"]) == 2 and theirs_now["policy"] == POLICY
    assert next(m for m in theirs_now["members"] if m["member_id"] == str(other_agent.id))["open_count"] == 1


def test_anonymous_browsers_are_unauthorized(client):
    assert code(client.get("/api/extensions/availability"))[:2] == (401, "unauthorized")
    for path in ("", "/calendar", f"/members/{uuid.uuid4()}"):
        response = client.post(f"/api/extensions/availability{path}", json={}, headers=ORIGIN)
        assert code(response)[:2] == (401, "unauthorized")


@pytest.mark.parametrize("role", ["agent", "supervisor"])
def test_agents_and_supervisors_are_forbidden(app, tenant, agent, role):
    browser = browser_of(app, agent if role == "agent" else seat(tenant, role))
    api = AvailabilityApi(browser)
    assert code(api.get("/availability"))[:2] == (403, "forbidden")
    for path, body in (("", {"policy": POLICY}), ("/calendar", {"calendar": CALENDAR}),
                       (f"/members/{agent.id}", SCHEDULE)):
        assert code(api.post(f"/availability{path}", body))[:2] == (403, "forbidden")
    db.session.expire_all()
    assert db.session.get(Member, agent.id).shifts == [] and audits("availability.schedule_saved") == []


def test_restricted_sessions_of_an_administrator_are_refused(app, admin):
    for kind, route in ((IMPERSONATION, "staff/impersonate"), (ASSISTANT, "assistant/login")):
        browser = app.test_client()
        browser.get(f"/{route}/{issue_link_token(kind, admin)}")
        assert code(browser.get("/api/extensions/availability"))[:2] == (403, "session_scope_forbidden")
        response = browser.post("/api/extensions/availability", json={"policy": POLICY}, headers=ORIGIN)
        assert code(response)[:2] == (403, "session_scope_forbidden")


def test_posts_need_the_same_origin(availability, agent):
    for origin in ({}, {"Origin": "https://evil.example"}):
        response = availability.client.post("/api/extensions/availability", json={"policy": POLICY}, headers=origin)
        assert code(response)[:2] == (403, "forbidden")
    assert audits("availability.policy_saved") == []


def test_the_extensions_switch_closes_the_api(app, availability, monkeypatch):
    monkeypatch.setitem(app.config, "EXTENSIONS_ENABLED", False)
    assert code(availability.get("/availability"))[:2] == (503, "extensions_disabled")


def test_a_login_with_two_tenants_changes_the_one_selected(app, tenant, other_tenant, admin):
    add_member(other_tenant.id, admin.user.email, PASSWORD, "admin")
    db.session.commit()
    browser = app.test_client()
    login(browser, admin.user.email)
    token = csrf_from(browser.get("/tenants/select").get_data(as_text=True))
    browser.post("/tenants/select", data={"csrf_token": token, "tenant_id": str(other_tenant.id)})
    api = AvailabilityApi(browser)
    assert api.post("/availability/calendar", {"calendar": CALENDAR}).status_code == 200
    assert AvailabilityApi(browser_of(app, seat(tenant, "admin"))).overview()["calendar"] == []
