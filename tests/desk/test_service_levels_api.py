"""The console JSON API of service levels (issue 36): the default before anything is saved, a round
trip of policies and weekly hours replaced together, every refusal `400 invalid_policy` at its path
(a channel of another tenant or named twice included), unknown properties `400 invalid_json`, and
who may read and change them (administrators' console sessions of the tenant only)."""
import pytest
from sqlalchemy import select

from core.audit import AuditEntry
from core.db import db
from desk.channels import create_channel
from desk.handoff import issue_link_token
from desk.service_level_models import ServiceLevelSettings
from desk.sessions import ASSISTANT, IMPERSONATION
from tests.conftest import seat
from tests.support.desk import browser_of
from tests.support.studio import ExtensionsApi

PATH = "/service-levels"
DEFAULT = {"channel_id": None, "first_response_minutes": 30, "next_response_minutes": 60,
           "resolution_minutes": 2880, "hours": "business"}
HOURS = [{"weekdays": [1, 2, 3, 4, 5], "start": "09:00", "end": "18:00"},
         {"weekdays": [6], "start": "22:00", "end": "06:00"}]


def code(response) -> tuple[int, str, str | None]:
    error = response.get_json()["error"]
    return response.status_code, error["code"], error.get("detail")


@pytest.fixture
def api(admin_client) -> ExtensionsApi:
    return ExtensionsApi(admin_client)


@pytest.fixture
def chat(tenant):
    found, _ = create_channel(tenant.id, "Website chat")
    db.session.commit()
    return str(found.id)


def saved() -> list:
    db.session.expire_all()
    return list(db.session.scalars(select(ServiceLevelSettings)))


def test_before_anything_is_saved_the_default_policy_has_no_targets_and_there_are_no_hours(api):
    response = api.get(PATH)
    assert response.status_code == 200
    assert response.get_json()["data"] == {"policies": [{"channel_id": None, "first_response_minutes": None,
                                                         "next_response_minutes": None, "resolution_minutes": None,
                                                         "hours": "business"}], "hours": []}


def test_policies_and_hours_are_replaced_together_and_read_back_default_first(api, chat, tenant, admin):
    override = {**DEFAULT, "channel_id": chat.upper(), "first_response_minutes": 5, "hours": "calendar"}
    response = api.post(PATH, {"policies": [override, DEFAULT], "hours": HOURS})
    assert response.status_code == 200, response.get_json()
    expected = {"policies": [DEFAULT, {**override, "channel_id": chat}], "hours": HOURS}
    assert response.get_json()["data"] == expected
    assert api.get(PATH).get_json()["data"] == expected
    assert api.post(PATH, {"policies": [DEFAULT], "hours": []}).get_json()["data"] == {"policies": [DEFAULT],
                                                                                       "hours": []}
    [row] = saved()
    assert (row.tenant_id, row.policies, row.hours) == (tenant.id, [DEFAULT], [])
    entries = db.session.scalars(select(AuditEntry).where(AuditEntry.action == "service_levels.saved")
                                 .order_by(AuditEntry.created_at)).all()
    assert [(e.actor_id, e.summary) for e in entries] == [(admin.user_id, {"policies": 2, "hours": 2}),
                                                          (admin.user_id, {"policies": 1, "hours": 0})]


@pytest.mark.parametrize("policies, hours, detail", [
    ([], [], "policies"),
    ([{**DEFAULT, "channel_id": "00000000-0000-0000-0000-000000000001"}], [], "policies"),  # no default
    ([DEFAULT, DEFAULT], [], "policies[1]"),
    ([{**DEFAULT, "first_response_minutes": 0}], [], "policies[0].first_response_minutes"),
    ([{**DEFAULT, "resolution_minutes": 43_201}], [], "policies[0].resolution_minutes"),
    ([{**DEFAULT, "next_response_minutes": 1.5}], [], "policies[0].next_response_minutes"),
    ([{**DEFAULT, "next_response_minutes": "30"}], [], "policies[0].next_response_minutes"),
    ([{**DEFAULT, "hours": "office"}], [], "policies[0].hours"),
    ([DEFAULT, {**DEFAULT, "channel_id": "not-a-uuid"}], [], "policies[1].channel_id"),
    ([DEFAULT, {**DEFAULT, "channel_id": 7}], [], "policies[1].channel_id"),
    ([{k: v for k, v in DEFAULT.items() if k != "hours"}], [], "policies[0].hours"),
    ([DEFAULT], [{"weekdays": [], "start": "09:00", "end": "18:00"}], "hours[0].weekdays"),
    ([DEFAULT], [{"weekdays": [1], "start": "24:00", "end": "18:00"}], "hours[0].start"),
    ([DEFAULT], [HOURS[0]] * 15, "hours"),
])
def test_each_bad_policy_or_weekly_hours_is_invalid_policy_at_its_path(api, policies, hours, detail):
    response = api.post(PATH, {"policies": policies, "hours": hours})
    assert code(response) == (400, "invalid_policy", detail)
    assert saved() == []


def test_another_tenants_channel_or_one_named_twice_is_refused(api, chat, other_tenant):
    foreign, _ = create_channel(other_tenant.id, "Theirs")
    db.session.commit()
    for policies in ([DEFAULT, {**DEFAULT, "channel_id": str(foreign.id)}],
                     [DEFAULT, {**DEFAULT, "channel_id": chat}, {**DEFAULT, "channel_id": chat}]):
        response = api.post(PATH, {"policies": policies, "hours": []})
        assert code(response)[:2] == (400, "invalid_policy")
        assert code(response)[2] in ("policies[1].channel_id", "policies[2].channel_id")
    assert saved() == []


def test_at_most_twenty_overrides(api, tenant):
    channels = [str(create_channel(tenant.id, f"Chat {n}")[0].id) for n in range(21)]
    db.session.commit()
    overrides = [{**DEFAULT, "channel_id": channel} for channel in channels]
    assert api.post(PATH, {"policies": [DEFAULT, *overrides[:20]], "hours": []}).status_code == 200
    assert code(api.post(PATH, {"policies": [DEFAULT, *overrides], "hours": []})) == (400, "invalid_policy",
                                                                                      "policies")


def test_unknown_properties_are_invalid_json(api):
    assert code(api.post(PATH, {"policies": [DEFAULT], "hours": [], "extra": 1}))[:2] == (400, "invalid_json")
    response = api.post(PATH, {"policies": [{**DEFAULT, "color": "red"}], "hours": []})
    assert code(response) == (400, "invalid_json", "policies[0].color")
    assert saved() == []


@pytest.mark.parametrize("role", ["agent", "supervisor"])
def test_agents_and_supervisors_are_forbidden(app, tenant, role):
    api = ExtensionsApi(browser_of(app, seat(tenant, role)))
    assert code(api.get(PATH))[:2] == (403, "forbidden")
    assert code(api.post(PATH, {"policies": [DEFAULT], "hours": []}))[:2] == (403, "forbidden")
    assert saved() == []


def test_restricted_sessions_anonymous_browsers_and_other_origins_are_refused(app, client, admin, api):
    for kind, route in ((IMPERSONATION, "staff/impersonate"), (ASSISTANT, "assistant/login")):
        browser = app.test_client()
        browser.get(f"/{route}/{issue_link_token(kind, admin)}")
        assert code(browser.get("/api/extensions/service-levels"))[:2] == (403, "session_scope_forbidden")
    assert code(client.get("/api/extensions/service-levels"))[:2] == (401, "unauthorized")
    response = api.client.post("/api/extensions/service-levels", json={"policies": [DEFAULT], "hours": []},
                               headers={"Origin": "https://evil.example"})
    assert code(response)[:2] == (403, "forbidden")
    assert saved() == []


def test_each_tenant_reads_its_own(app, api, other_tenant):
    assert api.post(PATH, {"policies": [DEFAULT], "hours": HOURS}).status_code == 200
    theirs = ExtensionsApi(browser_of(app, seat(other_tenant, "admin")))
    assert theirs.get(PATH).get_json()["data"]["hours"] == []
