"""The team board and the capacity-aware assignee typeahead (issue 35): supervisors and administrators
see every active member's presence in words, availability or its reason, open conversations against
their capacity and whether they are on shift, with the waiting queue's size and oldest wait, and only
their own tenant's; agents are refused. The typeahead shows each member's state and load; with the
availability policy on, choosing one who is unavailable or at capacity asks first, and "Assign anyway"
assigns; with it off nothing asks. In English and in Chinese."""
import re
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from core.db import db
from desk.availability import replace_calendar, save_policy
from desk.availability_models import WaitingConversation
from desk.handoff import issue_link_token
from desk.models import Conversation, Customer, Member, Tenant
from desk.service_level_models import ServiceLevelTimer
from desk.sessions import ASSISTANT, IMPERSONATION
from tests.conftest import csrf_from, seat
from tests.support.desk import HX, browser_of, fresh, stop_the_clock

NOW = datetime(2026, 11, 23, 2, 0, tzinfo=timezone.utc)  # Monday 10:00 in Beijing
ZH = {"Accept-Language": "zh-CN"}
ROW = re.compile(r"<tr>(.*?)</tr>", re.S)
CELL = re.compile(r"<t[hd][^>]*>(.*?)</t[hd]>", re.S)


def words(html: str) -> str:
    """The text of an HTML fragment, tags removed and spaces collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def board_rows(html: str) -> list[list[str]]:
    """The board table's rows, each its cells' text (member, presence, availability, load, shift)."""
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [[words(cell) for cell in CELL.findall(row)] for row in ROW.findall(body)]


def queue_text(html: str) -> str:
    """What the board says of the waiting queue."""
    return words(re.search(r'<section class="team-queue".*?</section>', html, re.S).group(0))


def person(tenant: Tenant, name: str, role: str = "agent", presence: str = "online",
           seen: timedelta | None = timedelta(seconds=10), **schedule) -> Member:
    """A member of `tenant` named `name` who chose `presence` and whose last workbench request was
    `seen` before NOW (None: never), with any capacity, shifts and leave; committed."""
    member = seat(tenant, role)
    member.display_name, member.presence = name, presence
    member.last_seen_at = None if seen is None else NOW - seen
    for field, value in schedule.items():
        setattr(member, field, value)
    db.session.commit()
    return member


def conversations_of(tenant: Tenant, member: Member | None, count: int, status: str = "open") -> list[Conversation]:
    """`count` conversations of the tenant with `status` assigned to `member` (None: nobody); committed."""
    customer = Customer(tenant_id=tenant.id, name="Wang Fang")
    db.session.add(customer)
    db.session.flush()
    found = [Conversation(tenant_id=tenant.id, customer_id=customer.id, status=status,
                          assignee_member_id=None if member is None else member.id) for _ in range(count)]
    db.session.add_all(found)
    db.session.commit()
    return found


def waiting(tenant: Tenant, *minutes_ago: float) -> None:
    """Conversations of the tenant in its waiting queue since so many minutes before NOW; committed."""
    for conversation, minutes in zip(conversations_of(tenant, None, len(minutes_ago)), minutes_ago):
        db.session.add(WaitingConversation(conversation_id=conversation.id, tenant_id=tenant.id,
                                           reason_code="agent_offline", waiting_since=NOW - timedelta(minutes=minutes)))
    db.session.commit()


def policy(tenant: Tenant, enabled: bool, default_capacity: int = 8) -> None:
    """Save the tenant's availability policy; committed."""
    save_policy(tenant.id, None, {"enabled": enabled, "default_capacity": default_capacity,
                                  "fallback_after_minutes": 5, "offline_policy": "keep"})
    db.session.commit()


@pytest.fixture
def supervisor(tenant) -> Member:
    return seat(tenant, "supervisor")


@pytest.fixture
def board(app, supervisor, monkeypatch):
    """The supervisor's board as HTML at NOW (or `at`), in English unless headers say otherwise."""
    stop_the_clock(monkeypatch, NOW)
    browser = browser_of(app, supervisor)

    def read(at: datetime = NOW, **headers) -> str:
        stop_the_clock(monkeypatch, at)
        response = browser.get("/workbench/team", headers=headers)
        assert response.status_code == 200
        return response.get_data(as_text=True)
    return read


def token_of(browser, conversation: Conversation) -> str:
    """The CSRF token of the browser's session, from the conversation's page."""
    return csrf_from(browser.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True))


def choose(browser, conversation: Conversation, target: Member, **fields):
    """Choose `target` in the typeahead of the conversation's details, as its htmx form posts."""
    current = fresh(conversation)
    token = token_of(browser, conversation)
    return browser.post(f"/workbench/conversations/{conversation.id}/assignee", headers=HX, data={
        "csrf_token": token, "assignee": str(target.id), "seen_assignee": str(current.assignee_member_id or ""),
        "seen_status": current.status, **fields})


# --- who sees it -------------------------------------------------------------------------------

@pytest.mark.parametrize("role", ["supervisor", "admin"])
def test_supervisors_and_administrators_see_the_board_in_the_workbench_layout(app, tenant, role):
    page = browser_of(app, seat(tenant, role)).get("/workbench/team")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "<caption>Team availability</caption>" in html
    assert "<legend>Availability</legend>" in html and 'id="workbench-changes"' in html  # header control, poll
    assert re.search(r'<a href="/workbench/team" class="team-link"\s+aria-current="page">Team</a>', html)


@pytest.mark.parametrize("headers", [{}, HX])
def test_an_agent_is_refused_with_team_forbidden(agent_client, headers):
    refused = agent_client.get("/workbench/team", headers=headers)
    assert refused.status_code == 403 and "team_forbidden" in refused.get_data(as_text=True)


def test_the_header_links_to_the_board_for_supervisors_and_administrators_only(app, tenant, agent_client):
    for role in ("supervisor", "admin"):
        assert 'href="/workbench/team"' in browser_of(app, seat(tenant, role)).get("/workbench").get_data(as_text=True)
    assert 'href="/workbench/team"' not in agent_client.get("/workbench").get_data(as_text=True)


@pytest.mark.parametrize("kind", [IMPERSONATION, ASSISTANT])
def test_a_restricted_session_of_a_supervisor_reads_the_board_like_the_rest_of_the_workbench(app, supervisor, kind):
    browser = app.test_client()
    route = "staff/impersonate" if kind == IMPERSONATION else "assistant/login"
    assert browser.get(f"/{route}/{issue_link_token(kind, supervisor)}").status_code == 302
    assert "<caption>Team availability</caption>" in browser.get("/workbench/team").get_data(as_text=True)
    db.session.expire_all()
    assert db.session.get(Member, supervisor.id).last_seen_at is None  # and keeps no one online


def test_for_htmx_the_board_alone_which_refreshes_on_the_changes_poll_and_every_minute(board):
    html = board(**HX)
    assert "<html" not in html and html.lstrip().startswith('<div id="team-board"')
    assert 'hx-trigger="conversations-changed from:body, every 60s"' in html and 'hx-get="/workbench/team"' in html


# --- the columns -------------------------------------------------------------------------------

def test_each_column_shows_presence_availability_load_and_shift(tenant, board):
    policy(tenant, False, default_capacity=5)
    ada = person(tenant, "Ada Online")
    conversations_of(tenant, ada, 2)
    conversations_of(tenant, ada, 3, status="pending")  # only open ones are load
    bo = person(tenant, "Bo Away", presence="away", capacity=3)
    conversations_of(tenant, bo, 3)
    person(tenant, "Cy Never", seen=None)
    person(tenant, "Di Evening", shifts=[{"weekdays": [1], "start": "18:00", "end": "24:00"}])
    person(tenant, "Ed Leave", leave=[{"from": "2026-11-20", "to": "2026-11-24"}])
    fay = person(tenant, "Fay Full", capacity=1, shifts=[{"weekdays": [1, 2, 3, 4, 5], "start": "09:00",
                                                           "end": "18:00"}])
    conversations_of(tenant, fay, 1)
    gone = person(tenant, "Gus Gone")
    gone.active = False
    db.session.commit()
    assert board_rows(board()) == [
        ["Ada Online agent", "Online", "Available", "2 / 5", "Yes"],
        ["Bo Away agent", "Away", "Away", "3 / 3", "Yes"],
        ["Cy Never agent", "Offline", "Offline", "0 / 5", "Yes"],
        ["Di Evening agent", "Online", "Outside shift", "0 / 5", "No"],
        ["Ed Leave agent", "Online", "On leave", "0 / 5", "No"],
        ["Fay Full agent", "Online", "At capacity", "1 / 1", "Yes"],
        ["Supervisor Person supervisor", "Online", "Available", "0 / 5", "Yes"],  # their own request: online
    ]


def test_a_holiday_takes_everyone_off_shift(tenant, board):
    replace_calendar(tenant.id, None, [{"date": "2026-11-23", "kind": "holiday", "name": "公司年假"}])
    db.session.commit()
    person(tenant, "Ada Online")
    assert [row[2:] for row in board_rows(board())] == [["Holiday", "0 / 8", "No"]] * 2


def test_a_member_is_offline_once_their_heartbeat_is_90_seconds_old_and_online_at_their_next_request(
        app, tenant, agent, board, monkeypatch):
    stop_the_clock(monkeypatch, NOW)
    agent_browser = browser_of(app, agent)
    assert agent_browser.get("/workbench").status_code == 200  # their heartbeat, at NOW
    assert board_rows(board(NOW + timedelta(seconds=89)))[0][:3] == ["Agent Person agent", "Online", "Available"]
    assert board_rows(board(NOW + timedelta(seconds=90)))[0][:3] == ["Agent Person agent", "Offline", "Offline"]
    stop_the_clock(monkeypatch, NOW + timedelta(seconds=120))
    agent_browser.get("/workbench/changes", query_string={"since": "2026-11-23T02:00:00Z"})
    assert board_rows(board(NOW + timedelta(seconds=121)))[0][1] == "Online"


@pytest.mark.parametrize("minutes_ago, said", [
    ((), "Nobody is waiting."),
    ((0.5,), "1 conversation waiting, for under a minute (since 2026-11-23 09:59 Beijing time)."),
    ((12, 5, 1), "3 conversations waiting; the oldest for 12 min (since 2026-11-23 09:48 Beijing time)."),
    ((65.5, 3), "2 conversations waiting; the oldest for 1 h 5 min (since 2026-11-23 08:54 Beijing time)."),
])
def test_the_waiting_queue_says_how_many_wait_and_the_oldest_wait(tenant, board, minutes_ago, said):
    waiting(tenant, *minutes_ago)
    assert queue_text(board()) == f"Waiting queue {said}"


def test_another_tenants_members_and_waiting_conversations_never_show(tenant, other_tenant, board):
    person(other_tenant, "Stranger Elsewhere")
    waiting(other_tenant, 30, 20)
    html = board()
    assert "Stranger" not in html and queue_text(html) == "Waiting queue Nobody is waiting."
    assert [row[0] for row in board_rows(html)] == ["Supervisor Person supervisor"]


def test_the_board_says_whether_the_policy_is_on(tenant, board):
    assert "Availability policy is off: assignment ignores presence, shifts and capacity." in board()
    policy(tenant, True)
    html = board()
    assert "Availability policy is on" in html and "Availability policy is off" not in html


def test_the_board_in_chinese(tenant, board):
    person(tenant, "Ada Online", presence="away")
    waiting(tenant, 12)
    html = board(**ZH)
    assert "<caption>团队可用状态</caption>" in html and "可用性策略已关闭" in html
    assert board_rows(html) == [["Ada Online 坐席", "离开", "离开", "0 / 8", "是"],
                                ["Supervisor Person 主管", "在线", "可用", "0 / 8", "是"]]
    assert queue_text(html) == "等待队列 1 个会话在等待，最久已等待 12 分钟（开始于 2026-11-23 09:48 北京时间）。"


# --- the typeahead -----------------------------------------------------------------------------

def test_the_typeahead_shows_each_members_presence_availability_and_load(app, tenant, supervisor, conversation,
                                                                         monkeypatch):
    stop_the_clock(monkeypatch, NOW)
    ada = person(tenant, "Ada Online")
    conversations_of(tenant, ada, 2)
    person(tenant, "Bo Offline", seen=None, capacity=3)
    person(tenant, "Cy Evening", shifts=[{"weekdays": [1], "start": "18:00", "end": "24:00"}])
    html = browser_of(app, supervisor).get(f"/workbench/conversations/{conversation.id}/assignees",
                                           headers=HX).get_data(as_text=True)
    states = {words(name): words(state) for name, state in re.findall(
        r'<button[^>]*aria-describedby="assignee-state-[^"]+"[^>]*>(.*?)</button>\s*'
        r'<span class="muted assignee-state"[^>]*>(.*?)</span>\s*</form>', html, re.S)}
    assert states == {"Assign to Ada Online": "agent · Online · Available · 2 / 8 open",
                      "Assign to Bo Offline": "agent · Offline · 0 / 3 open",
                      "Assign to Cy Evening": "agent · Online · Outside shift · 0 / 8 open",
                      "Assign to Supervisor Person": "supervisor · Online · Available · 0 / 8 open"}


@pytest.mark.parametrize("make, said", [
    (lambda tenant: conversations_of(tenant, person(tenant, "Fay Full", capacity=2), 2)[0].assignee,
     ["Over capacity: already 2 / 2 open"]),
    (lambda tenant: person(tenant, "Cy Never", seen=None), ["Offline"]),
    (lambda tenant: person(tenant, "Bo Away", presence="away"), ["Away"]),
    (lambda tenant: person(tenant, "Ed Leave", leave=[{"from": "2026-11-23", "to": "2026-11-23"}], seen=None),
     ["On leave", "Offline"]),
])
def test_with_the_policy_on_an_unavailable_or_full_member_is_confirmed_first_and_assign_anyway_assigns(
        app, tenant, supervisor, conversation, monkeypatch, make, said):
    policy(tenant, True)
    stop_the_clock(monkeypatch, NOW)
    target = make(tenant)
    browser = browser_of(app, supervisor)
    asked = choose(browser, conversation, target)
    html = asked.get_data(as_text=True)
    assert asked.status_code == 200 and "HX-Trigger" not in asked.headers
    assert (asked.headers["HX-Retarget"], asked.headers["HX-Reswap"]) == ("#assignee-options", "innerHTML")
    assert f"Assign to {target.display_name} anyway?" in html
    assert [words(item) for item in re.findall(r"<li>(.*?)</li>", html, re.S)] == said
    assert re.search(rf'<button type="submit" name="assignee" value="{target.id}"[^>]*>Assign anyway</button>', html)
    assert 'name="confirm" value="1"' in html and ">Cancel</a>" in html
    assert fresh(conversation).assignee_member_id is None  # nothing changed yet
    confirmed = browser.post(f"/workbench/conversations/{conversation.id}/assignee", headers=HX, data={
        "csrf_token": token_of(browser, conversation), "assignee": str(target.id), "confirm": "1", "seen_assignee": "",
        "seen_status": "open"})
    assert confirmed.status_code == 200 and confirmed.headers["HX-Trigger"] == "conversations-changed"
    assert fresh(conversation).assignee_member_id == target.id


def test_with_the_policy_on_an_available_member_is_assigned_at_once(app, tenant, supervisor, conversation, monkeypatch):
    policy(tenant, True)
    stop_the_clock(monkeypatch, NOW)
    target = person(tenant, "Ada Online")
    answer = choose(browser_of(app, supervisor), conversation, target)
    assert answer.status_code == 200 and answer.headers["HX-Trigger"] == "conversations-changed"
    assert "HX-Retarget" not in answer.headers and fresh(conversation).assignee_member_id == target.id


def test_with_the_policy_off_nothing_asks_whatever_the_member_state(app, tenant, supervisor, conversation,
                                                                     monkeypatch):
    stop_the_clock(monkeypatch, NOW)
    target = person(tenant, "Fay Full", seen=None, capacity=1)
    conversations_of(tenant, target, 1)
    answer = choose(browser_of(app, supervisor), conversation, target)
    assert answer.status_code == 200 and "Assign anyway" not in answer.get_data(as_text=True)
    assert fresh(conversation).assignee_member_id == target.id


def test_assign_anyway_still_refuses_a_conversation_changed_meanwhile(app, tenant, supervisor, conversation,
                                                                       monkeypatch):
    policy(tenant, True)
    stop_the_clock(monkeypatch, NOW)
    target, other = person(tenant, "Cy Never", seen=None), person(tenant, "Ada Online")
    browser = browser_of(app, supervisor)
    html = choose(browser, conversation, target).get_data(as_text=True)
    assert choose(browser, conversation, other).status_code == 200  # someone else's choice lands first
    late = browser.post(f"/workbench/conversations/{conversation.id}/assignee", headers=HX, data={
        "csrf_token": token_of(browser, conversation), "assignee": str(target.id), "confirm": "1",
        **dict(re.findall(r'name="(seen_assignee|seen_status)" value="([^"]*)"', html))})
    assert late.status_code == 422 and "Someone changed this conversation meanwhile" in late.get_data(as_text=True)
    assert fresh(conversation).assignee_member_id == other.id


def test_an_agent_choosing_another_member_gets_the_usual_refusal_not_their_state(app, tenant, agent, conversation,
                                                                                monkeypatch):
    policy(tenant, True)
    stop_the_clock(monkeypatch, NOW)
    answer = choose(browser_of(app, agent), conversation, person(tenant, "Cy Never", seen=None))
    html = answer.get_data(as_text=True)
    assert answer.status_code == 422 and "ask a supervisor" in html and "Assign anyway" not in html
    assert fresh(conversation).assignee_member_id is None


def test_a_member_of_another_tenant_is_refused_as_before_without_a_question(app, tenant, other_tenant, supervisor,
                                                                           conversation):
    policy(tenant, True)
    stranger = person(other_tenant, "Stranger Elsewhere", seen=None)
    answer = choose(browser_of(app, supervisor), conversation, stranger)
    html = answer.get_data(as_text=True)
    assert answer.status_code == 422 and "inactive or not in this workspace" in html and "Stranger" not in html
    assert db.session.scalar(select(Conversation.assignee_member_id).where(Conversation.id == conversation.id)) is None


def test_the_typeahead_and_its_question_in_chinese(app, tenant, supervisor, conversation, monkeypatch):
    policy(tenant, True)
    stop_the_clock(monkeypatch, NOW)
    target = person(tenant, "Cy Never", seen=None, capacity=1)
    conversations_of(tenant, target, 1)
    browser = browser_of(app, supervisor)
    options = browser.get(f"/workbench/conversations/{conversation.id}/assignees", query_string={"q": "Cy"},
                          headers={**HX, **ZH}).get_data(as_text=True)
    assert "坐席 · 离线 · 进行中 1 / 1" in words(options)
    token = csrf_from(browser.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True))
    asked = browser.post(f"/workbench/conversations/{conversation.id}/assignee", headers={**HX, **ZH}, data={
        "csrf_token": token, "assignee": str(target.id), "seen_assignee": "", "seen_status": "open"})
    text = words(asked.get_data(as_text=True))
    assert "仍然分配给 Cy Never 吗？" in text and "离线" in text and "超出容量：已有 1 / 1 个进行中" in text
    assert "仍然分配" in text and "取消" in text


def test_the_board_counts_the_service_level_targets_breached_since_beijing_midnight(tenant, board, chat_channel):
    [conversation] = conversations_of(tenant, None, 1)
    for breached_at in (NOW - timedelta(hours=3), NOW - timedelta(hours=1), NOW):  # 07:00, 09:00, 10:00 Beijing
        db.session.add(ServiceLevelTimer(
            tenant_id=tenant.id, conversation_id=conversation.id, channel_id=chat_channel.id,
            kind="next_response", hours="calendar", target_minutes=5, started_at=breached_at,
            started_on=breached_at.date(), due_at=breached_at, breached_at=breached_at, outcome="breached"))
    db.session.add(ServiceLevelTimer(
        tenant_id=tenant.id, conversation_id=conversation.id, channel_id=chat_channel.id, kind="first_response",
        hours="calendar", target_minutes=5, started_at=NOW - timedelta(hours=11), started_on=NOW.date(),
        due_at=NOW - timedelta(hours=10, minutes=5), breached_at=NOW - timedelta(hours=10, minutes=5),
        outcome="breached"))  # 23:55 yesterday in Beijing
    db.session.commit()
    html = board()
    section = words(re.search(r'<section class="team-service-levels".*?</section>', html, re.S).group(0))
    assert section == "Service levels 3 targets breached today · Breaching soon"
    assert 'href="/workbench?view=breaching"' in html
    assert "今天有 3 个目标超时" in board(**ZH)
