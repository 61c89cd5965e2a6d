"""Presence, the workbench's side (issue 35): the header's Availability control saves the member's
choice and answers with itself; values not on offer and restricted sessions change nothing; every
request of the member's own sessions to the workbench is their heartbeat, written at most once per
30 s; with none for 90 s they count as offline whatever they chose, and as their choice again at the
next request (read back as the administrators' availability API shows them)."""
import re
from datetime import timedelta

import pytest

from core.clock import iso, utcnow
from core.db import db
from desk.handoff import issue_link_token
from desk.models import Member
from desk.presence import heartbeat
from desk.sessions import ASSISTANT, IMPERSONATION
from tests.conftest import csrf_from
from tests.support.desk import HX, browser_of, stop_the_clock
from tests.support.studio import ExtensionsApi

RADIO = re.compile(r'<input type="radio" name="presence" value="(\w+)"([^>]*)>')


def checked(html: str) -> list[str]:
    """The values of the Availability radios the HTML shows checked."""
    return [value for value, rest in RADIO.findall(html) if "checked" in rest]


def stored(member: Member) -> Member:
    """The member as the database holds it now."""
    db.session.expire_all()
    return db.session.get(Member, member.id)


def choose(browser, presence: str, htmx: bool = True, **fields):
    """Send the header's form as its page does (htmx on a change, or its no-script button)."""
    token = csrf_from(browser.get("/workbench").get_data(as_text=True))
    return browser.post("/workbench/presence", data={"csrf_token": token, "presence": presence, **fields},
                        headers=HX if htmx else {})


def restricted(app, kind: str, member: Member):
    """A browser holding an impersonation or assistant session of `member`."""
    browser = app.test_client()
    route = "staff/impersonate" if kind == IMPERSONATION else "assistant/login"
    assert browser.get(f"/{route}/{issue_link_token(kind, member)}").status_code == 302
    return browser


def presence_shown(admin_client, member: Member) -> str:
    """The member's presence as it counts now, in the administrators' availability API."""
    response = ExtensionsApi(admin_client).get("/availability")
    assert response.status_code == 200, response.get_json()
    return next(m["presence"] for m in response.get_json()["data"]["members"] if m["member_id"] == str(member.id))


# --- the control -------------------------------------------------------------------------------

def test_the_header_shows_the_saved_choice_online_at_first(agent_client):
    page = agent_client.get("/workbench").get_data(as_text=True)
    assert "<legend>Availability</legend>" in page and checked(page) == ["online"]
    assert [value for value, _rest in RADIO.findall(page)] == ["online", "away", "offline"]


def test_choosing_away_saves_it_and_answers_with_the_control_showing_it(agent_client, agent):
    response = choose(agent_client, "away")
    html = response.get_data(as_text=True)
    assert response.status_code == 200 and "<html" not in html and 'id="presence"' in html
    assert checked(html) == ["away"]
    assert stored(agent).presence == "away"
    assert checked(agent_client.get("/workbench").get_data(as_text=True)) == ["away"]


@pytest.mark.parametrize("opened", [True, False])
def test_without_javascript_the_form_saves_and_returns_to_the_page_it_was_sent_from(agent_client, agent,
                                                                                 conversation, opened):
    page = agent_client.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    assert re.search(r"<noscript><button type=\"submit\"[^>]*>Save availability</button></noscript>", page)
    fields = {"conversation_id": str(conversation.id)} if opened else {}
    response = choose(agent_client, "offline", htmx=False, **fields)
    assert response.status_code == 302
    assert response.headers["Location"] == (f"/workbench/conversations/{conversation.id}" if opened else "/workbench")
    assert stored(agent).presence == "offline"


@pytest.mark.parametrize("value", ["", "busy", "Online", "online ", "agent_offline"])
def test_a_value_not_on_offer_is_400_invalid_form_and_changes_nothing(agent_client, agent, value):
    choose(agent_client, "away")
    response = choose(agent_client, value)
    assert response.status_code == 400 and "invalid_form" in response.get_data(as_text=True)
    assert stored(agent).presence == "away"


@pytest.mark.parametrize("kind", [IMPERSONATION, ASSISTANT])
def test_a_restricted_session_sees_the_choice_but_changes_no_ones_presence(app, agent, kind):
    browser = restricted(app, kind, agent)
    page = browser.get("/workbench").get_data(as_text=True)
    assert checked(page) == ["online"] and 'disabled aria-describedby="presence-own"' in page
    assert "it can be changed only in their own login" in page
    response = browser.post("/workbench/presence", headers=HX,
                            data={"csrf_token": csrf_from(page), "presence": "offline"})
    assert response.status_code == 403 and "session_scope_forbidden" in response.get_data(as_text=True)
    assert stored(agent).presence == "online"


# --- the heartbeat -----------------------------------------------------------------------------

@pytest.mark.parametrize("request_of", ["page", "partial", "poll", "presence"])
def test_each_kind_of_workbench_request_is_the_heartbeat_written_at_most_once_in_30_seconds(
        agent_client, agent, monkeypatch, request_of):
    start = utcnow()
    token = csrf_from(agent_client.get("/workbench").get_data(as_text=True))
    send = {"page": lambda: agent_client.get("/workbench"),
            "partial": lambda: agent_client.get("/workbench?status=pending", headers=HX),
            "poll": lambda: agent_client.get("/workbench/changes", query_string={"since": iso(start)}),
            "presence": lambda: agent_client.post("/workbench/presence", headers=HX,
                                                  data={"csrf_token": token, "presence": "online"})}[request_of]
    for after, seen in ((0, 0), (29, 0), (30, 30), (59, 30), (61, 61)):
        stop_the_clock(monkeypatch, start + timedelta(hours=1, seconds=after))
        assert send().status_code in (200, 204)
        assert stored(agent).last_seen_at == start + timedelta(hours=1, seconds=seen), after


def test_the_heartbeat_writes_once_for_requests_that_saw_the_same_stale_value(agent):
    now = utcnow()
    loaded = stored(agent)  # two requests that loaded the seat before either wrote
    assert heartbeat(loaded, now) is True
    assert heartbeat(loaded, now + timedelta(seconds=1)) is False
    db.session.commit()
    assert stored(agent).last_seen_at == now


@pytest.mark.parametrize("kind", [IMPERSONATION, ASSISTANT])
def test_a_restricted_sessions_requests_are_not_the_members_heartbeat(app, agent, kind):
    browser = restricted(app, kind, agent)
    assert browser.get("/workbench").status_code == 200
    assert browser.get("/workbench/changes", query_string={"since": iso(utcnow())}).status_code in (200, 204)
    assert stored(agent).last_seen_at is None


def test_a_member_who_never_opened_the_workbench_counts_as_offline(app, admin_client, agent):
    browser = browser_of(app, agent)  # logged in, the workbench not opened yet
    assert stored(agent).presence == "online" and presence_shown(admin_client, agent) == "offline"
    browser.get("/workbench")
    assert presence_shown(admin_client, agent) == "online"


def test_after_90_seconds_without_a_request_they_are_offline_and_their_choice_again_at_the_next(
        agent_client, admin_client, agent, monkeypatch):
    start = utcnow()
    stop_the_clock(monkeypatch, start)
    choose(agent_client, "away")
    stop_the_clock(monkeypatch, start + timedelta(seconds=89))
    assert presence_shown(admin_client, agent) == "away"  # the administrator's requests are no heartbeat
    stop_the_clock(monkeypatch, start + timedelta(seconds=90))
    assert presence_shown(admin_client, agent) == "offline"
    assert stored(agent).presence == "away"  # the choice stays saved
    agent_client.get("/workbench/changes", query_string={"since": iso(start)})
    assert presence_shown(admin_client, agent) == "away"
