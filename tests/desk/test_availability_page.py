"""The availability console page `/availability` (issue 35), as an administrator uses it: the policy form,
each member's capacity, shifts and leave typed as text, the calendar's CSV import and clearing, the
waiting queue; every refusal is a message at its field with nothing saved; agents, supervisors and
other tenants see and change nothing; the page speaks Chinese too."""
import codecs
import io
import re
import uuid
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from core.audit import AuditEntry
from core.db import db
from desk.availability import calendar_of, policy_of
from desk.availability_models import POLICY_DEFAULTS, AvailabilityPolicy, CalendarException, WaitingConversation
from desk.handoff import issue_link_token
from desk.models import Member
from desk.schedule_text import leave_text, read_leave, read_shifts, shifts_text
from desk.sessions import IMPERSONATION
from tests.conftest import csrf_from, customer_conversation, seat
from tests.support.desk import HX, browser_of, stop_the_clock

NOW = datetime(2026, 10, 5, 2, 0, tzinfo=timezone.utc)  # Monday 10:00 in Beijing
POLICY_FORM = {"enabled": "on", "default_capacity": "3", "fallback_after_minutes": "0", "no_reply_minutes": "15",
               "offline_policy": "release_after", "release_after_minutes": "30"}
SAVED_POLICY = {"enabled": True, "default_capacity": 3, "fallback_after_minutes": 0, "no_reply_minutes": 15,
                "offline_policy": "release_after", "release_after_minutes": 30}
CSV = ("date,kind,name,as_weekday\r\n2026-10-01,holiday,国庆节,\r\n2026-10-10,workday,国庆节调休,5\r\n"
       '2026-10-02,holiday,"国庆节, 第二天",\r\n').encode()
CALENDAR = [{"date": "2026-10-01", "kind": "holiday", "name": "国庆节", "as_weekday": None},
            {"date": "2026-10-02", "kind": "holiday", "name": "国庆节, 第二天", "as_weekday": None},
            {"date": "2026-10-10", "kind": "workday", "name": "国庆节调休", "as_weekday": 5}]


@pytest.fixture
def now(monkeypatch) -> datetime:
    """The app's clock stands at NOW (Monday 10:00 in Beijing)."""
    return stop_the_clock(monkeypatch, NOW)


def page(browser, path: str = "/availability") -> str:
    response = browser.get(path)
    assert response.status_code == 200
    return response.get_data(as_text=True)


def post(browser, path: str, data: dict, headers: dict | None = None):
    """POST a form of the page with the session's CSRF token."""
    return browser.post(path, data={"csrf_token": csrf_from(page(browser)), **data}, headers=headers)


def upload(browser, content: bytes, name: str = "holidays.csv"):
    """Send a file through the "Import calendar (CSV)" form."""
    return post(browser, "/availability/calendar", {"calendar": (io.BytesIO(content), name)})


def field_error(html: str, field_id: str) -> str:
    """The message shown at a field (its aria-invalid control names it)."""
    assert re.search(rf'id="{re.escape(field_id)}"[^>]*aria-invalid="true"', html, re.S), field_id
    found = re.search(rf'<p class="field-error" id="{re.escape(field_id)}-error" role="alert">([^<]*)</p>', html)
    return found.group(1)


def audits(action: str) -> list[AuditEntry]:
    db.session.expire_all()
    return list(db.session.scalars(select(AuditEntry).where(AuditEntry.action == action)))


def fresh(member: Member) -> Member:
    db.session.expire_all()
    return db.session.get(Member, member.id)


# --- the page and who may see it -------------------------------------------------------------------

def test_an_administrator_sees_the_policy_members_calendar_and_queue(admin_client, admin, agent, now):
    html = page(admin_client)
    for heading in ("Availability", "Policy", "Members", "Calendar", "Waiting queue"):
        assert re.search(rf"<h[12][^>]*>{heading}</h[12]>", html), heading
    assert '<label for="calendar-file">Import calendar (CSV)</label>' in html
    assert 'type="file" id="calendar-file" name="calendar"' in html and 'enctype="multipart/form-data"' in html
    for control, label in (("policy-default_capacity", "Default capacity"), ("policy-offline_policy", "Offline policy"),
                           (f"shifts-{agent.id}", "Shifts"), (f"leave-{agent.id}", "Leave"),
                           (f"capacity-{agent.id}", "Capacity")):
        assert f'<label for="{control}">{label}</label>' in html
    assert 'value="8"' in html and "Keep them assigned" in html  # the defaults, nothing saved
    assert "<span class=\"badge\">Off</span>" in html
    assert html.count('<h3>Agent Person <span class="badge">agent</span></h3>') == 1
    assert "0 / 8 (the default)" in html and "2026-10-05 10:00 Beijing time" in html
    assert "No holidays or make-up workdays" in html and "No conversation is waiting." in html
    assert 'href="/availability" aria-current="page"' in html  # the console's navigation
    assert db.session.get(AvailabilityPolicy, admin.tenant_id) is None


def test_members_show_presence_availability_and_load_in_words(admin_client, tenant, agent, now):
    db.session.get(Member, agent.id).last_seen_at = NOW - timedelta(seconds=10)
    db.session.get(Member, agent.id).presence = "away"
    db.session.get(Member, agent.id).capacity = 4
    db.session.commit()
    customer_conversation(tenant, name="Wang Fang").assignee_member_id = agent.id
    db.session.commit()
    section = page(admin_client).split(f'id="member-{agent.id}"')[1].split("</dl>")[0]
    assert "<dd>Away</dd>" in section and '<span class="badge badge-warn">Away</span>' in section
    assert "<dd>1 / 4</dd>" in section


@pytest.mark.parametrize("role", ["agent", "supervisor"])
def test_agents_and_supervisors_are_refused_and_change_nothing(app, tenant, agent, role):
    browser = browser_of(app, agent if role == "agent" else seat(tenant, role))
    assert browser.get("/availability").status_code == 403
    token = csrf_from(browser.get("/workbench").get_data(as_text=True))
    for path, data in (("/availability/policy", POLICY_FORM), ("/availability/calendar/clear", {}),
                       (f"/availability/members/{agent.id}", {"capacity": "2", "shifts": "", "leave": ""}),
                       ("/availability/calendar", {"calendar": (io.BytesIO(CSV), "holidays.csv")})):
        assert browser.post(path, data={"csrf_token": token, **data}).status_code == 403
    assert policy_of(tenant.id) == POLICY_DEFAULTS and fresh(agent).capacity is None and calendar_of(tenant.id) == []
    assert "/availability" not in browser.get("/workbench").get_data(as_text=True)  # no link to it either


def test_an_anonymous_browser_is_sent_to_the_login(client):
    response = client.get("/availability")
    assert response.status_code == 302 and "/login" in response.headers["Location"]


def test_an_impersonation_session_of_an_administrator_is_refused(app, admin):
    browser = app.test_client()
    browser.get(f"/staff/impersonate/{issue_link_token(IMPERSONATION, admin)}")
    assert browser.get("/availability").status_code == 403


def test_the_extensions_switch_closes_the_page_as_it_closes_the_api(app, admin_client, monkeypatch):
    monkeypatch.setitem(app.config, "EXTENSIONS_ENABLED", False)
    assert admin_client.get("/availability").status_code == 503


# --- the policy -------------------------------------------------------------------------------------

def test_a_saved_policy_is_read_back_in_its_form(admin_client, tenant, admin):
    response = post(admin_client, "/availability/policy", POLICY_FORM)
    assert response.status_code == 302 and response.headers["Location"].endswith("/availability#policy-h")
    assert policy_of(tenant.id) == SAVED_POLICY
    html = page(admin_client)
    assert "Saved the availability policy." in html and '<span class="badge badge-live">On</span>' in html
    assert 'name="enabled" value="on" aria-describedby="policy-enabled-help" checked' in html
    for name, value in POLICY_FORM.items():
        if name not in ("enabled", "offline_policy"):
            assert re.search(rf'name="{name}" value="{value}"', html), name
    assert '<option value="release_after" selected>' in html
    assert [(a.actor_id, a.summary) for a in audits("availability.policy_saved")] == [(admin.user_id, SAVED_POLICY)]


def test_empty_minutes_are_never_and_off_and_unchecked_is_off(admin_client, tenant):
    form = {**POLICY_FORM, "fallback_after_minutes": " ", "no_reply_minutes": ""}
    del form["enabled"]
    assert post(admin_client, "/availability/policy", form).status_code == 302
    assert policy_of(tenant.id) == {**SAVED_POLICY, "enabled": False, "fallback_after_minutes": None,
                                    "no_reply_minutes": None}


def test_the_release_delay_is_read_only_with_release_after(admin_client, tenant):
    for offline in ("keep", "release_on_customer_reply"):
        form = {**POLICY_FORM, "offline_policy": offline, "release_after_minutes": "not read"}
        assert post(admin_client, "/availability/policy", form).status_code == 302
        assert policy_of(tenant.id) == {**SAVED_POLICY, "offline_policy": offline, "release_after_minutes": None}


@pytest.mark.parametrize("field, value, message", [
    ("default_capacity", "0", "Default capacity: a whole number from 1 to 100."),
    ("default_capacity", "101", "Default capacity: a whole number from 1 to 100."),
    ("default_capacity", "", "Default capacity: a whole number from 1 to 100."),
    ("default_capacity", "８", "Default capacity: a whole number from 1 to 100."),
    ("fallback_after_minutes", "1441", "Fallback after minutes: leave it empty for never, or a whole number from 0 to "
                                       "1,440."),
    ("fallback_after_minutes", "-1", "Fallback after minutes: leave it empty for never, or a whole number from 0 to "
                                     "1,440."),
    ("no_reply_minutes", "0", "No-reply minutes: leave it empty for off, or a whole number from 1 to 1,440."),
    ("no_reply_minutes", "5.5", "No-reply minutes: leave it empty for off, or a whole number from 1 to 1,440."),
    ("offline_policy", "sometimes", "Choose one of the offline policies listed."),
    ("release_after_minutes", "", "Release after minutes: a whole number from 1 to 1,440, needed when conversations "
                                  "are released after a delay."),
    ("release_after_minutes", "1441", "Release after minutes: a whole number from 1 to 1,440, needed when "
                                      "conversations are released after a delay."),
])
def test_each_refused_policy_value_is_named_at_its_field_and_nothing_is_saved(admin_client, tenant, field, value,
                                                                             message):
    response = post(admin_client, "/availability/policy", {**POLICY_FORM, field: value})
    assert response.status_code == 422
    html = response.get_data(as_text=True)
    assert field_error(html, f"policy-{field}") == message
    assert "Nothing was saved: correct the field marked below." in html
    if field != "offline_policy":
        assert f'name="{field}" value="{value}"' in html  # what was typed stays to be corrected
    assert db.session.get(AvailabilityPolicy, tenant.id) is None and audits("availability.policy_saved") == []


# --- a member's capacity, shifts and leave --------------------------------------------------------------

SCHEDULE_FORM = {"capacity": "2", "shifts": "1-5 09:00-18:00\r\n\r\n6，7 22:00 - 6:00\r\n",
                 "leave": "2026-10-20 2026-10-23\n2026/11/2\n"}
SAVED_SHIFTS = [{"weekdays": [1, 2, 3, 4, 5], "start": "09:00", "end": "18:00"},
                {"weekdays": [6, 7], "start": "22:00", "end": "06:00"}]
SAVED_LEAVE = [{"from": "2026-10-20", "to": "2026-10-23"}, {"from": "2026-11-02", "to": "2026-11-02"}]


def test_a_schedule_typed_as_text_is_saved_and_shown_back_the_same_way(admin_client, admin, agent, now):
    response = post(admin_client, f"/availability/members/{agent.id}", SCHEDULE_FORM)
    assert response.status_code == 302 and response.headers["Location"].endswith(f"/availability#member-{agent.id}")
    saved = fresh(agent)
    assert (saved.capacity, saved.shifts, saved.leave) == (2, SAVED_SHIFTS, SAVED_LEAVE)
    html = page(admin_client)
    assert "Saved the schedule of Agent Person." in html

    assert '-help">1-5 09:00-18:00\n6,7 22:00-06:00</textarea>' in html
    assert ">2026-10-20 2026-10-23\n2026-11-02</textarea>" in html and f'id="capacity-{agent.id}" name="capacity" ' \
        'value="2"' in html
    assert "Mon–Fri 09:00–18:00; Sat, Sun 22:00–06:00" in html and "2026-10-20 – 2026-10-23; 2026-11-02" in html
    assert [a.summary for a in audits("availability.schedule_saved")] == [{"capacity": 2, "shifts": 2, "leave": 2}]
    cleared = post(admin_client, f"/availability/members/{agent.id}", {"capacity": "", "shifts": "", "leave": ""})
    assert cleared.status_code == 302 and (fresh(agent).capacity, fresh(agent).shifts, fresh(agent).leave) == \
        (None, [], [])


def test_htmx_saves_a_schedule_and_gets_the_members_section_alone(admin_client, agent, now):
    response = post(admin_client, f"/availability/members/{agent.id}", SCHEDULE_FORM, headers=HX)
    html = response.get_data(as_text=True)
    assert response.status_code == 200 and "<html" not in html
    assert html.strip().startswith(f'<li id="member-{agent.id}">')
    assert '<p class="muted" role="status">Saved.</p>' in html
    assert "<details open>" in html and "1-5 09:00-18:00\n6,7 22:00-06:00</textarea>" in html
    assert fresh(agent).shifts == SAVED_SHIFTS


@pytest.mark.parametrize("field, text, message", [
    ("shifts", "1-5 09:00-18:00\nweekdays 9-6", "Shifts, line 2: write the weekdays (1 Monday to 7 Sunday, like 1-5 "
                                               "or 1,3,5), a space, then the start and the end, like 1-5 09:00-18:00."),
    ("shifts", "5-1 09:00-18:00", "Shifts, line 1: write the weekdays (1 Monday to 7 Sunday, like 1-5 or 1,3,5), a "
                                  "space, then the start and the end, like 1-5 09:00-18:00."),
    ("shifts", "\n\n1-8 09:00-18:00", "Shifts, line 3: weekdays are 1 (Monday) to 7 (Sunday), each at most once."),
    ("shifts", "1,3,1 09:00-18:00", "Shifts, line 1: weekdays are 1 (Monday) to 7 (Sunday), each at most once."),
    ("shifts", "1 08:00-12:00\n2 24:00-12:00", "Shifts, line 2: the start is a time from 00:00 to 23:59."),
    ("shifts", "1 08:00-24:30", "Shifts, line 1: the end is a time from 00:00 to 24:00 (an end not after the start is "
                                "on the next day)."),
    ("shifts", "1 08:00-12:00\n" * 15, "At most 14 shifts."),
    ("shifts", "1 08:00-12:00" + " " * 100 + "x", "Shifts, line 1: write the weekdays (1 Monday to 7 Sunday, like 1-5 "
                                                  "or 1,3,5), a space, then the start and the end, like 1-5 "
                                                  "09:00-18:00."),
    ("leave", "2026-10-01 2026-10-07\n2026-10-09 2026-10-08", "Leave, line 2: the last day is not a date written "
                                                              "YYYY-MM-DD, or comes before the first."),
    ("leave", "2026-02-30", "Leave, line 1: the first day is not a date written YYYY-MM-DD."),
    ("leave", "from Monday", "Leave, line 1: write the first and the last day, like 2026-10-01 2026-10-07, or one "
                             "day."),
    ("leave", "2026-10-01\n" * 51, "At most 50 leave ranges."),
    ("capacity", "0", "Capacity: leave it empty for the policy's default, or a whole number from 1 to 100."),
    ("capacity", "two", "Capacity: leave it empty for the policy's default, or a whole number from 1 to 100."),
])
def test_a_refused_schedule_names_its_field_and_line_and_saves_nothing(admin_client, agent, field, text, message):
    form = {"capacity": "3", "shifts": "1-5 09:00-18:00", "leave": "", field: text}
    for headers in (None, HX):
        response = post(admin_client, f"/availability/members/{agent.id}", form, headers=headers)
        assert response.status_code == 422
        html = response.get_data(as_text=True)
        assert field_error(html, f"{field}-{agent.id}") == message.replace("'", "&#39;")
        assert ("<html" in html) == (headers is None)
    saved = fresh(agent)
    assert (saved.capacity, saved.shifts, saved.leave) == (None, [], []) and audits("availability.schedule_saved") == []


def test_unreadable_shifts_and_leave_are_both_named_at_once(admin_client, agent):
    response = post(admin_client, f"/availability/members/{agent.id}", {"capacity": "", "shifts": "nights",
                                                                        "leave": "soon"})
    html = response.get_data(as_text=True)
    assert field_error(html, f"shifts-{agent.id}").startswith("Shifts, line 1:")
    assert field_error(html, f"leave-{agent.id}").startswith("Leave, line 1:")


def test_another_tenants_inactive_or_missing_member_is_not_found(admin_client, tenant, other_tenant):
    foreign, inactive = seat(other_tenant, "agent"), seat(tenant, "agent")
    db.session.get(Member, inactive.id).active = False
    db.session.commit()
    html = page(admin_client)
    assert str(foreign.id) not in html and str(inactive.id) not in html
    for member_id in (foreign.id, inactive.id, uuid.uuid4()):
        for form in ({"capacity": "2", "shifts": "", "leave": ""}, {"capacity": "", "shifts": "bad", "leave": ""}):
            assert post(admin_client, f"/availability/members/{member_id}", form).status_code == 404
    assert fresh(foreign).capacity is None and fresh(inactive).capacity is None


# --- the calendar -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("content", [CSV, codecs.BOM_UTF8 + CSV], ids=["without BOM", "with BOM"])
def test_an_uploaded_csv_replaces_the_calendar(admin_client, tenant, admin, content):
    assert upload(admin_client, "date,kind,name,as_weekday\n2027-02-06,holiday,春节,\n".encode()).status_code == 302
    response = upload(admin_client, content)
    assert response.status_code == 302 and response.headers["Location"].endswith("/availability#calendar-h")
    assert calendar_of(tenant.id) == CALENDAR
    html = page(admin_client)
    assert "Imported the calendar: it holds the file&#39;s 3 entries now." in html
    assert "<tr><td>2026-10-01</td><td>Holiday</td><td>国庆节</td><td>—</td></tr>" in html
    assert "<tr><td>2026-10-02</td><td>Holiday</td><td>国庆节, 第二天</td><td>—</td></tr>" in html
    assert "<tr><td>2026-10-10</td><td>Make-up workday</td><td>国庆节调休</td><td>Fri</td></tr>" in html
    assert "春节" not in html
    assert {"holiday": 2, "workday": 1} in [a.summary for a in audits("availability.calendar_replaced")]


@pytest.mark.parametrize("content, message", [
    (CSV + b"2026-10-11,workday,Make-up,\n",
     "Line 5 of the file: as_weekday must be 1 (Monday) to 7 (Sunday) for a workday and empty for a holiday."),
    (CSV.replace(b"holiday,\xe5\x9b\xbd\xe5\xba\x86\xe8\x8a\x82,\r", b"day off,x,\r"),
     "Line 2 of the file: the kind must be holiday or workday."),
    (CSV + b"2026-10-01,holiday,Again,\n",
     "Line 5 of the file: the date must be a real date written YYYY-MM-DD, and each date may appear only once."),
    (CSV + b"2026-10-12,holiday,,\n", "Line 5 of the file: the name must be 1 to 60 characters."),
    (CSV + b"2026-10-12,holiday\n", "Line 5 of the file could not be read: each line holds the four columns "
                                    "date,kind,name,as_weekday in UTF-8, and a calendar at most 200 entries."),
    (CSV + b"2026-10-12,holiday,\xff,\n", "Line 5 of the file could not be read: each line holds the four columns "
                                          "date,kind,name,as_weekday in UTF-8, and a calendar at most 200 entries."),
    (b"day,kind,name,as_weekday\n2026-10-01,holiday,x,\n",
     "Line 1 of the file must be the header date,kind,name,as_weekday, and the file UTF-8 text."),
    (b"", "Line 1 of the file must be the header date,kind,name,as_weekday, and the file UTF-8 text."),
])
def test_a_refused_file_names_its_line_and_keeps_the_calendar(admin_client, tenant, content, message):
    assert upload(admin_client, CSV).status_code == 302
    response = upload(admin_client, content)
    assert response.status_code == 422
    assert field_error(response.get_data(as_text=True), "calendar-file") == message
    assert calendar_of(tenant.id) == CALENDAR and len(audits("availability.calendar_replaced")) == 1


def test_a_file_over_64_kb_is_refused_before_it_is_read(admin_client, tenant):
    too_big = CSV + b"\n" * (64 * 1024 - len(CSV) + 1)
    response = upload(admin_client, too_big)
    assert response.status_code == 413
    assert field_error(response.get_data(as_text=True), "calendar-file") == \
        "The file is larger than 64 KB: a year&#39;s calendar is far smaller. Check that it is the right file."
    assert upload(admin_client, CSV + b"\n" * (64 * 1024 - len(CSV))).status_code == 302  # exactly the limit fits
    assert calendar_of(tenant.id) == CALENDAR


def test_importing_without_a_file_asks_for_one(admin_client, tenant):
    response = post(admin_client, "/availability/calendar", {})
    assert response.status_code == 422
    assert field_error(response.get_data(as_text=True), "calendar-file") == "Choose a CSV file to import."


def test_clearing_empties_the_calendar(admin_client, tenant):
    assert upload(admin_client, CSV).status_code == 302
    assert "Clear the calendar" in page(admin_client)
    response = post(admin_client, "/availability/calendar/clear", {})
    assert response.status_code == 302 and calendar_of(tenant.id) == []
    html = page(admin_client)
    assert "Cleared the calendar: every day follows the weekly shifts." in html
    assert "No holidays or make-up workdays" in html and "Clear the calendar" not in html
    assert {"holiday": 0, "workday": 0} in [a.summary for a in audits("availability.calendar_replaced")]


# --- the waiting queue --------------------------------------------------------------------------------------

def test_the_waiting_queue_shows_each_conversation_oldest_first(admin_client, tenant, other_tenant, agent):
    first = customer_conversation(tenant, name="Wang Fang")
    second = customer_conversation(tenant, name="Li Lei")
    foreign = customer_conversation(other_tenant, name="Zhao Min")
    db.session.add_all([
        WaitingConversation(tenant_id=tenant.id, conversation_id=second.id, reason_code="agent_offline",
                            preferred_member_id=agent.id, waiting_since=NOW),
        WaitingConversation(tenant_id=tenant.id, conversation_id=first.id, reason_code="no_reply",
                            waiting_since=NOW - timedelta(minutes=3)),
        WaitingConversation(tenant_id=other_tenant.id, conversation_id=foreign.id, reason_code="holiday",
                            waiting_since=NOW)])
    db.session.commit()
    html = page(admin_client)
    queue = html.split('id="queue-h"')[1]
    rows = re.findall(r"<tr>\s*(.*?)\s*</tr>", queue.split("<tbody>")[1], re.S)
    assert [re.sub(r"\s+", " ", row) for row in rows] == [
        f'<td><a href="/workbench/conversations/{first.id}">Wang Fang</a></td> <td>Anyone available</td> '
        "<td>No reply</td> <td>2026-10-05 09:57</td>",
        f'<td><a href="/workbench/conversations/{second.id}">Li Lei</a></td> <td>Agent Person</td> '
        "<td>Offline</td> <td>2026-10-05 10:00</td>"]
    assert "Waiting since (Beijing time)" in queue and "2 conversations wait for someone available" in queue
    assert "Zhao Min" not in html and "No conversation is waiting." not in html


# --- tenants and languages ------------------------------------------------------------------------------------

def test_another_tenants_availability_never_shows(app, admin_client, tenant, other_tenant, agent):
    other_admin = seat(other_tenant, "admin")
    theirs = browser_of(app, other_admin)
    assert post(theirs, "/availability/policy", POLICY_FORM).status_code == 302
    assert upload(theirs, CSV).status_code == 302
    db.session.get(Member, other_admin.id).display_name = "Zhou Theirs"
    db.session.commit()
    html = page(admin_client)
    assert "Zhou Theirs" not in html and "国庆节调休</td>" not in html
    assert "No holidays or make-up workdays" in html and 'value="8"' in html
    assert policy_of(tenant.id) == POLICY_DEFAULTS and calendar_of(tenant.id) == []
    assert post(theirs, f"/availability/members/{agent.id}", {"capacity": "2", "shifts": "", "leave": ""}
                ).status_code == 404
    assert db.session.scalars(select(CalendarException.tenant_id)).all() == [other_tenant.id] * 3


def test_the_page_and_its_messages_speak_chinese(admin_client, agent, now):
    admin_client.environ_base["HTTP_ACCEPT_LANGUAGE"] = "zh-CN"
    html = page(admin_client)
    for text in ("<h1>可用状态</h1>", ">导入日历（CSV）</label>", ">可用性策略</h2>", ">成员</h2>", ">日历</h2>", ">等待队列</h2>",
                 "保持分配", "暂无等待中的会话。", "2026-10-05 10:00 北京时间", "0 / 8（默认）"):
        assert text in html, text
    response = post(admin_client, "/availability/policy", {**POLICY_FORM, "default_capacity": "0"})
    assert field_error(response.get_data(as_text=True), "policy-default_capacity") == "默认容量：1 到 100 之间的整数。"
    response = post(admin_client, f"/availability/members/{agent.id}", {"capacity": "", "shifts": "x", "leave": ""})
    assert field_error(response.get_data(as_text=True), f"shifts-{agent.id}").startswith("班次第 1 行：")
    response = upload(admin_client, CSV + b"2026-10-11,workday,x,\n")
    assert field_error(response.get_data(as_text=True), "calendar-file").startswith("文件第 5 行：")


# --- the text format ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("shifts", [[], SAVED_SHIFTS,
                                    [{"weekdays": [7, 1, 2, 3, 5], "start": "00:00", "end": "24:00"}]])
def test_shifts_written_back_read_as_the_same_shifts(shifts):
    assert read_shifts(shifts_text(shifts))[0] == shifts


def test_leave_written_back_reads_as_the_same_ranges():
    assert read_leave(leave_text(SAVED_LEAVE)) == (SAVED_LEAVE, [1, 2])
    assert read_leave("2026-10-01 至 2026-10-07\n\n2026-10-09 - 2026-10-10\n2026.10.12~2026.10.13")[1] == [1, 3, 4]
