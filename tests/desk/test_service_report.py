"""The service-level report (issue 36) against a hand-built set of timers: per kind, per member and
per channel, measured = met + breached (a breach nobody answered yet included, a running or closed
timer not), achieved % to two decimals, nearest-rank median and 90th percentile of the minutes
taken; the 7- and 30-day windows in Beijing days; another tenant's timers never counted; and the
console JSON API's `days` (7 or 30, else `400 invalid_days`) for administrators only. On both
databases, as every test."""
import re
from datetime import datetime, timedelta, timezone

import pytest

from core.db import db
from desk.channels import create_channel
from desk.service_level_models import ServiceLevelTimer
from desk.service_report import daily, report
from tests.conftest import customer_conversation, seat
from tests.support.desk import browser_of, stop_the_clock
from tests.support.studio import ExtensionsApi

NOW = datetime(2026, 3, 10, 16, 30, tzinfo=timezone.utc)  # 2026-03-11 00:30 in Beijing: the day has just begun
TODAY = datetime(2026, 3, 11).date()
NOTHING = {"measured": 0, "met": 0, "breached": 0, "achieved_percent": None, "median_minutes": None,
           "p90_minutes": None}


def numbers(measured, met, breached, achieved, median, p90) -> dict:
    return {"measured": measured, "met": met, "breached": breached, "achieved_percent": achieved,
            "median_minutes": median, "p90_minutes": p90}


class Timers:
    """Adds decided (or running) timers to one conversation of a tenant."""

    def __init__(self, tenant):
        self.tenant = tenant
        self.conversation = customer_conversation(tenant, name="Wang Fang")

    def add(self, kind, outcome, elapsed=None, member=None, channel=None, days_ago=0):
        started = NOW - timedelta(days=days_ago)
        db.session.add(ServiceLevelTimer(
            tenant_id=self.tenant.id, conversation_id=self.conversation.id, channel_id=channel.id, kind=kind,
            hours="business", target_minutes=30, started_at=started, started_on=TODAY - timedelta(days=days_ago),
            due_at=started, outcome=outcome, elapsed_minutes=elapsed, member_id=member and member.id,
            stopped_at=started if elapsed is not None else None,
            breached_at=started if outcome == "breached" else None))


@pytest.fixture
def data(tenant, other_tenant):
    """Two members on two channels; see each test for the figures."""
    web, _ = create_channel(tenant.id, "Web")
    app_channel, _ = create_channel(tenant.id, "App")
    foreign, _ = create_channel(other_tenant.id, "Elsewhere")
    ada, bo = seat(tenant, "agent"), seat(tenant, "agent")
    timers = Timers(tenant)
    timers.add("first_response", "met", 10, ada, web)
    timers.add("first_response", "met", 20, ada, web, days_ago=6)
    timers.add("first_response", "met", 30, bo, app_channel)
    timers.add("first_response", "breached", 40, bo, app_channel)
    timers.add("first_response", "breached", None, None, web)  # unanswered past its due time
    timers.add("first_response", None, None, None, web)  # running, not yet due: not measured
    timers.add("first_response", "closed", 5, None, web)  # resolved without a reply: not measured
    timers.add("resolution", "met", 100.5, ada, web)
    timers.add("resolution", "met", 200.25, ada, web)
    timers.add("resolution", "breached", 300, bo, app_channel)
    timers.add("resolution", "met", 1, ada, web, days_ago=7)  # the eighth day back: 30 days only
    timers.add("next_response", "met", 3, bo, web, days_ago=29)
    timers.add("next_response", "met", 4, bo, web, days_ago=30)  # outside both windows
    Timers(other_tenant).add("first_response", "breached", 99, seat(other_tenant, "agent"), foreign)
    db.session.commit()
    return {"web": str(web.id), "app": str(app_channel.id), "ada": str(ada.id), "bo": str(bo.id)}


def test_seven_days_per_kind(tenant, data):
    found = report(tenant.id, 7, NOW)
    assert found["days"] == 7
    assert found["kinds"] == {
        # 10, 20, 30, 40 taken: median rank 2 of 4, 90th rank 4 of 4
        "first_response": numbers(5, 3, 2, 60.0, 20.0, 40.0),
        "next_response": NOTHING,
        "resolution": numbers(3, 2, 1, 66.67, 200.25, 300.0)}


def test_seven_days_per_member_and_channel(tenant, data):
    found = report(tenant.id, 7, NOW)
    members = {row["member_id"]: row for row in found["members"]}
    assert set(members) == {data["ada"], data["bo"]} and [row["member_id"] for row in found["members"]] == sorted(members)
    assert members[data["ada"]] == {"member_id": data["ada"], "first_response": numbers(2, 2, 0, 100.0, 10.0, 20.0),
                                    "next_response": NOTHING, "resolution": numbers(2, 2, 0, 100.0, 100.5, 200.25)}
    assert members[data["bo"]] == {"member_id": data["bo"], "first_response": numbers(2, 1, 1, 50.0, 30.0, 40.0),
                                   "next_response": NOTHING, "resolution": numbers(1, 0, 1, 0.0, 300.0, 300.0)}
    channels = {row["channel_id"]: row for row in found["channels"]}
    assert channels[data["web"]]["first_response"] == numbers(3, 2, 1, 66.67, 10.0, 20.0)  # the unanswered: no time
    assert channels[data["app"]]["resolution"] == numbers(1, 0, 1, 0.0, 300.0, 300.0)


def test_thirty_days_take_the_older_timers_and_never_the_thirty_first_day(tenant, data):
    found = report(tenant.id, 30, NOW)
    assert found["kinds"]["resolution"] == numbers(4, 3, 1, 75.0, 100.5, 300.0)
    assert found["kinds"]["next_response"] == numbers(1, 1, 0, 100.0, 3.0, 3.0)


def test_the_daily_series_for_the_chart(tenant, data):
    series = daily(tenant.id, 7, NOW)
    assert [row["day"] for row in series] == [TODAY - timedelta(days=6 - n) for n in range(7)]
    assert series[0] == {"day": TODAY - timedelta(days=6), "measured": 1, "achieved_percent": 100.0}
    assert series[-1] == {"day": TODAY, "measured": 7, "achieved_percent": 57.14}
    assert series[3] == {"day": TODAY - timedelta(days=3), "measured": 0, "achieved_percent": None}


def test_another_tenants_report_holds_none_of_these(other_tenant, data):
    found = report(other_tenant.id, 7, NOW)
    assert found["kinds"]["first_response"] == numbers(1, 0, 1, 0.0, 99.0, 99.0)
    assert data["ada"] not in str(found) and data["web"] not in str(found)


@pytest.mark.parametrize("days", ["14", "", "7.0", "x", None])
def test_days_other_than_7_or_30_are_invalid_days(admin_client, days):
    path = "/api/extensions/service-levels/report" + ("" if days is None else f"?days={days}")
    response = admin_client.get(path)
    assert response.status_code == 400 and response.get_json()["error"]["code"] == "invalid_days"


def test_the_report_api_answers_the_numbers(admin_client, data):
    response = ExtensionsApi(admin_client).get("/service-levels/report?days=30")
    assert response.status_code == 200
    body = response.get_json()["data"]
    assert set(body) == {"days", "kinds", "members", "channels"} and body["days"] == 30
    assert set(body["kinds"]) == {"first_response", "next_response", "resolution"}


def test_agents_and_supervisors_may_not_read_the_report(app, tenant):
    for role in ("agent", "supervisor"):
        response = browser_of(app, seat(tenant, role)).get("/api/extensions/service-levels/report?days=7")
        assert response.status_code == 403


def page_text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


@pytest.fixture
def page(admin_client, monkeypatch):
    """The report page at NOW, as HTML."""
    stop_the_clock(monkeypatch, NOW)

    def read(query: str = "", **headers) -> str:
        response = admin_client.get(f"/reports/service-levels{query}", headers=headers)
        assert response.status_code == 200
        return response.get_data(as_text=True)
    return read


def test_the_page_shows_the_numbers_by_target_member_and_channel(page, data):
    html = page()
    text = page_text(html)
    assert "90th percentile minutes First response 5 3 2 60 % 20 40" in text
    assert "Next response 0 0 0 — — —" in text and "Resolution 3 2 1 66.67 % 200.25 300" in text
    assert "By channel · Resolution Channel Measured Met Breached Achieved Median minutes 90th percentile minutes" \
           " App 1 0 1 0 % 300 300 Web 2 2 0 100 % 100.5 200.25" in text  # by name
    assert "Agent Person 2 1 1 50 % 30 40" in text  # bo's first responses (both members are named so)
    assert 'aria-current="page">Last 7 days<' in html


def test_the_chart_has_a_bar_for_each_day_with_a_measured_target(page, data):
    html = page()
    titles = re.findall(r"<rect [^>]*class=\"bar\"><title>(.*?)</title>", html)
    assert titles == ["2026-03-05: 100 % of 1 target", "2026-03-11: 57.14 % of 7 targets"]
    assert re.search(r'<svg role="img" aria-labelledby="achieved-h" viewBox="0 0 640 200"', html)
    thirty = page("?days=30")
    assert len(re.findall(r'class="bar"><title>', thirty)) == 4 and 'aria-current="page">Last 30 days<' in thirty
    assert page("?days=14").count('class="bar"><title>') == 2  # anything else shows 7 days


def test_the_page_in_chinese(page, data):
    text = page_text(page(**{"Accept-Language": "zh-CN"}))
    assert "服务水平报告" in text and "首次响应 5 3 2 60% 20 40" in text and "最近 7 天" in text


def test_without_measured_targets_the_page_says_so(page):
    assert "No target was measured in these days." in page_text(page())


def test_only_administrators_see_the_page(app, tenant):
    for role in ("agent", "supervisor"):
        assert browser_of(app, seat(tenant, role)).get("/reports/service-levels").status_code == 403
