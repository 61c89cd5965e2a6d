"""The service-level policies page (issue 36), `/service-levels`: the default policy, per-channel
overrides and the weekly business hours in one form, saved together; a refusal names the field it
concerns (422) and saves nothing; administrators only; both languages."""
import re

import pytest

from core.db import db
from desk.channels import create_channel
from desk.service_levels import settings_of
from tests.conftest import csrf_from, seat
from tests.support.desk import browser_of

ZH = {"Accept-Language": "zh-CN"}


@pytest.fixture
def chats(tenant) -> list[str]:
    found = [create_channel(tenant.id, name)[0] for name in ("App", "Web")]
    db.session.commit()
    return [str(channel.id) for channel in found]


def form(page: str, rows: list[dict], hours_text: str) -> dict:
    """The posted form: each row's channel (the first row's hidden and empty), targets and hours."""
    return {"csrf_token": csrf_from(page), "hours_text": hours_text,
            "channel": [row.get("channel", "") for row in rows],
            **{field: [row.get(field, "") for row in rows] for field in ("first", "next", "resolution")},
            "hours": [row.get("hours", "business") for row in rows]}


def saved(tenant) -> dict:
    db.session.expire_all()
    return settings_of(tenant.id)


def test_a_new_tenant_sees_the_default_without_targets_and_two_blank_overrides(admin_client):
    page = admin_client.get("/service-levels").get_data(as_text=True)
    assert "Default policy" in page and "Channel override 1" in page and "Channel override 2" in page
    assert "Channel override 3" not in page
    assert re.search(r'<input type="text" inputmode="numeric" autocomplete="off" id="row-0-first" name="first" value=""',
                     page)


def test_policies_and_hours_are_saved_together(admin_client, tenant, chats):
    page = admin_client.get("/service-levels").get_data(as_text=True)
    rows = [{"first": "30", "next": "60", "resolution": "2880"},
            {"channel": chats[1], "first": "5", "hours": "calendar"}, {}]
    response = admin_client.post("/service-levels", data=form(page, rows, "1-5 09:00-18:00\n6 10:00-16:00"))
    assert response.status_code == 302
    assert saved(tenant) == {
        "policies": [{"channel_id": None, "first_response_minutes": 30, "next_response_minutes": 60,
                      "resolution_minutes": 2880, "hours": "business"},
                     {"channel_id": chats[1], "first_response_minutes": 5, "next_response_minutes": None,
                      "resolution_minutes": None, "hours": "calendar"}],
        "hours": [{"weekdays": [1, 2, 3, 4, 5], "start": "09:00", "end": "18:00"},
                  {"weekdays": [6], "start": "10:00", "end": "16:00"}]}
    again = admin_client.get("/service-levels").get_data(as_text=True)
    assert "1-5 09:00-18:00" in again and f'<option value="{chats[1]}" selected>Web</option>' in again
    assert "Channel override 3" in again  # the saved override and two blank ones


@pytest.mark.parametrize(("rows", "hours_text", "field", "message"), [
    ([{"first": "0"}], "", "row-0-first", "whole minutes from 1 to 43,200"),
    ([{"resolution": "1.5"}], "", "row-0-resolution", "whole minutes from 1 to 43,200"),
    ([{}, {"channel": "CHAT", "first": "5"}, {"channel": "CHAT", "first": "9"}], "", "row-2-channel",
     "Choose each channel once"),
    ([{"hours": "weekly"}], "", "row-0-hours", "Choose business hours or every hour"),
    ([{}], "1-5 09:00-18:00\nMondays", "hours", "Business hours, line 2"),
    ([{}], "1-5 09:00-18:00\n\n8 09:00-18:00", "hours", "Business hours, line 3"),
])
def test_a_refusal_names_its_field_and_saves_nothing(admin_client, tenant, chats, rows, hours_text, field, message):
    rows = [{**row, "channel": chats[0]} if row.get("channel") == "CHAT" else row for row in rows]
    page = admin_client.get("/service-levels").get_data(as_text=True)
    response = admin_client.post("/service-levels", data=form(page, rows, hours_text))
    html = response.get_data(as_text=True)
    assert response.status_code == 422 and "Nothing was saved" in html
    assert re.search(rf'<p class="field-error" id="{field}-error" role="alert">[^<]*{re.escape(message)}', html)
    assert 'aria-invalid="true"' in html
    assert saved(tenant)["policies"][0]["first_response_minutes"] is None


def test_another_tenants_channel_is_refused(admin_client, tenant, other_tenant):
    foreign, _ = create_channel(other_tenant.id, "Elsewhere")
    db.session.commit()
    page = admin_client.get("/service-levels").get_data(as_text=True)
    response = admin_client.post("/service-levels", data=form(page, [{}, {"channel": str(foreign.id), "first": "5"}],
                                                              ""))
    assert response.status_code == 422 and 'id="row-1-channel-error"' in response.get_data(as_text=True)
    assert len(saved(tenant)["policies"]) == 1


def test_only_administrators_see_the_page(app, tenant):
    for role in ("agent", "supervisor"):
        browser = browser_of(app, seat(tenant, role))
        assert browser.get("/service-levels").status_code == 403
        token = csrf_from(browser.get("/workbench").get_data(as_text=True))
        assert browser.post("/service-levels", data={"csrf_token": token, "hours_text": ""}).status_code == 403


def test_the_page_in_chinese(admin_client):
    page = admin_client.get("/service-levels", headers=ZH).get_data(as_text=True)
    assert "服务水平策略" in page and "默认策略" in page and "每周工作时间" in page
