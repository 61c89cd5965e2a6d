"""Service levels in the workbench (issue 36): each list row shows its nearest due target in words
and colour ("Due in 12 min", "Due now", "Breached 5 min ago"), the "Breaching soon" view lists what
is due within 15 minutes or breached, oldest due first, and only the tenant's own; the thread shows
each target with its due time in Beijing time and "Met" or "Breached", and a breach in its history.
Both languages."""
import re
import uuid
from datetime import timedelta

import pytest

from desk import service_timers
from tests.conftest import seat
from tests.support.channels import payload, send
from tests.support.desk import browser_of
from tests.support.service_levels import Desk, beijing, levels, policy

START = beijing("2026-03-02 10:00")
ZH = {"Accept-Language": "zh-CN"}


def rows(page: str) -> list[str]:
    """The list's rows as text, in order, blanks folded."""
    found = re.findall(r'<li>\s*<a href="[^"]*" data-conversation-id="[^"]*">(.*?)</a>', page, re.S)
    return [" ".join(re.sub(r"<[^>]+>", " ", row).split()) for row in found]


def customers(desk: Desk, *names: str) -> None:
    """One conversation per customer name, each with a first message now."""
    for name in names:
        response = send(desk.client, desk.channel, payload(message_id=uuid.uuid4().hex, external_id=name, name=name))
        assert response.status_code == 201


@pytest.fixture
def timed(desk, tenant, admin) -> Desk:
    """Three customers whose first responses (30 min, calendar hours) fell due 10:30, 10:40 and
    10:50; then one without a target running."""
    levels(tenant, admin, policy(first=30, hours="calendar"))
    for minute, name in ((0, "Zhao"), (10, "Qian"), (20, "Sun")):
        desk.at(START + timedelta(minutes=minute))
        customers(desk, name)
    levels(tenant, admin, policy())
    desk.at(START + timedelta(minutes=25))
    customers(desk, "Li")
    return desk


def test_each_row_shows_its_nearest_due_target_in_words_and_colour(app, timed, agent):
    timed.at(beijing("2026-03-02 10:35"))
    service_timers.sweep()
    page = browser_of(app, agent).get("/workbench?view=all").get_data(as_text=True)
    assert rows(page)[0].startswith("Li") and "Due" not in rows(page)[0]
    words = {row.split()[0]: row for row in rows(page)}
    assert "Breached 5 min ago" in words["Zhao"] and "Due in 5 min" in words["Qian"] and "Due in 15 min" in words["Sun"]
    assert re.search(r'class="due due-breached">Breached 5 min ago<', page)
    assert re.search(r'class="due due-soon">Due in 5 min<', page) and 'every 60s' in page


def test_due_now_within_a_minute_either_side(app, timed, agent):
    timed.at(beijing("2026-03-02 10:40") + timedelta(seconds=30))
    page = browser_of(app, agent).get("/workbench?view=all").get_data(as_text=True)
    assert "Due now" in {row.split()[0]: row for row in rows(page)}["Qian"]


def test_breaching_soon_lists_what_is_due_within_15_minutes_or_breached_oldest_due_first(app, timed, agent):
    timed.at(beijing("2026-03-02 10:34"))  # Sun is due at 10:50: 16 minutes away
    browser = browser_of(app, agent)
    page = browser.get("/workbench?view=breaching").get_data(as_text=True)
    assert [row.split()[0] for row in rows(page)] == ["Zhao", "Qian"]
    assert 'aria-current="page">Breaching soon<' in page
    timed.at(beijing("2026-03-02 10:36"))
    page = browser.get("/workbench?view=breaching").get_data(as_text=True)
    assert [row.split()[0] for row in rows(page)] == ["Zhao", "Qian", "Sun"]


def test_breaching_soon_is_empty_with_a_clear_line_and_never_shows_another_tenants(timed, other_tenant, app):
    stranger = browser_of(app, seat(other_tenant, "supervisor"))
    timed.at(beijing("2026-03-03 10:00"))
    page = stranger.get("/workbench?view=breaching").get_data(as_text=True)
    assert rows(page) == [] and "Nothing here is due within 15 minutes or breached." in page


def test_the_thread_shows_each_target_with_its_due_time_and_met_or_breached(app, desk, tenant, admin, agent):
    levels(tenant, admin, policy(first=30, following=10, resolution=600, hours="calendar"))
    desk.at(START).customer().at(beijing("2026-03-02 10:20")).reply()
    desk.at(beijing("2026-03-02 10:30")).customer("And the invoice?")
    desk.at(beijing("2026-03-02 10:45"))
    service_timers.sweep()
    page = " ".join(browser_of(app, agent).get(f"/workbench/conversations/{desk.conversation_id}")
                    .get_data(as_text=True).split())
    targets = re.search(r'<ul class="service-levels" aria-label="Service levels">(.*?)</ul>', page).group(1)
    lines = [" ".join(re.sub(r"<[^>]+>", " ", item).split()) for item in re.findall(r"<li>(.*?)</li>", targets)]
    assert lines == ["First response · due 2026-03-02 10:30 Beijing time · Met",
                     "Resolution · due 2026-03-02 20:00 Beijing time · Due in 9 hr",
                     "Next response · due 2026-03-02 10:40 Beijing time · Breached 5 min ago"]
    assert "Next response target breached" in page


def test_pending_shows_the_resolution_paused(app, desk, tenant, admin, agent):
    levels(tenant, admin, policy(resolution=600))
    desk.at(START).customer().status("pending")
    page = browser_of(app, agent).get(f"/workbench/conversations/{desk.conversation_id}").get_data(as_text=True)
    assert "Paused while pending" in page


def test_the_targets_read_in_chinese_with_beijing_time(app, desk, tenant, admin, agent):
    levels(tenant, admin, policy(first=30, hours="calendar"))
    desk.at(START).customer()
    desk.at(beijing("2026-03-02 10:35"))
    service_timers.sweep()
    browser = browser_of(app, agent)
    thread = browser.get(f"/workbench/conversations/{desk.conversation_id}", headers=ZH).get_data(as_text=True)
    assert "首次响应" in thread and "2026-03-02 10:30 北京时间" in thread and "已超时 5分钟" in thread
    assert "首次响应目标已超时" in thread
    listed = browser.get("/workbench?view=breaching", headers=ZH).get_data(as_text=True)
    assert "即将超时" in listed and "已超时 5分钟" in listed
