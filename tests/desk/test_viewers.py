"""Who else is here (issue 37): the workbench poll records the member's open conversation and
typing flag in Redis and answers with what the page should show of the others — the thread header's
words and the list's marks — only when that changed; entries expire 30 s after the last poll; a
restricted session records nothing; another tenant sees nothing; the page works with Redis gone. A
send asks "Someone else replied" when another member replied after the member began typing, and
"Send anyway" sends the message once."""
import time
import uuid
from datetime import timedelta

from sqlalchemy import func, select

from core.clock import iso, utcnow
from core.db import db
from core.redis import get_redis
from desk import viewers
from desk.handoff import issue_link_token
from desk.models import Message
from desk.sessions import IMPERSONATION
from tests.conftest import csrf_from, seat
from tests.support.desk import HX, browser_of, send_reply


def named(tenant, role: str, name: str):
    member = seat(tenant, role)
    member.display_name = name
    db.session.commit()
    return member


def poll(browser, conversation=None, typing: str = "", presence: str = ""):
    return browser.get("/workbench/changes", query_string={
        "since": iso(utcnow() + timedelta(days=1)), "presence": presence,
        "open": str(conversation.id) if conversation is not None else "", "typing": typing})


def test_another_member_sees_who_is_in_the_conversation_and_what_they_type(app, tenant, conversation):
    han, li = (browser_of(app, named(tenant, "agent", n)) for n in ("韩梅梅", "李雷"))
    assert poll(han, conversation, typing="reply").status_code in (200, 204)
    seen = poll(li, conversation).get_json()
    assert seen["notice"] == "韩梅梅 is typing a reply…"
    assert seen["open_elsewhere"] == {str(conversation.id): "Open: 韩梅梅"}
    poll(han, conversation, typing="note")
    assert poll(li, conversation).get_json()["notice"] == "韩梅梅 is typing a note…"
    poll(han, conversation)
    assert poll(li, conversation).get_json()["notice"] == "韩梅梅 is here too"
    poll(han, None)  # closed it
    closed = poll(li, conversation).get_json()
    assert (closed["notice"], closed["open_elsewhere"], closed["conversation_ids"]) == ("", {}, [])


def test_the_thread_header_and_the_list_show_the_others_as_rendered(app, tenant, conversation):
    han, li = (browser_of(app, named(tenant, "agent", n)) for n in ("韩梅梅", "<b>Li</b>"))
    poll(li, conversation, typing="reply")
    page = han.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    assert 'id="viewers-notice" aria-live="polite">&lt;b&gt;Li&lt;/b&gt; is typing a reply…</p>' in page
    assert '<span class="open-elsewhere">Open: &lt;b&gt;Li&lt;/b&gt;</span>' in page
    assert "<b>Li</b>" not in page
    assert "Open: 韩梅梅" not in page  # one's own conversation is not marked


def test_the_poll_answers_204_while_the_page_shows_what_is_current(app, tenant, conversation):
    han, li = (browser_of(app, named(tenant, "agent", n)) for n in ("韩梅梅", "李雷"))
    poll(han, conversation)
    first = poll(li, conversation).get_json()
    assert poll(li, conversation, presence=first["presence"]).status_code == 204
    poll(han, conversation, typing="reply")
    changed = poll(li, conversation, presence=first["presence"])
    assert changed.status_code == 200 and changed.get_json()["presence"] != first["presence"]
    assert changed.get_json()["notice"] == "韩梅梅 is typing a reply…"
    chinese = li.get("/workbench/changes", headers={"Accept-Language": "zh-CN"}, query_string={
        "since": iso(utcnow() + timedelta(days=1)), "presence": "", "open": str(conversation.id), "typing": ""})
    assert chinese.get_json()["notice"] == "韩梅梅 正在输入回复…"


def test_a_poll_without_presence_records_and_answers_nothing_of_it(app, tenant, conversation):
    han, li = (browser_of(app, named(tenant, "agent", n)) for n in ("韩梅梅", "李雷"))
    response = han.get("/workbench/changes", query_string={"since": iso(utcnow() + timedelta(days=1)),
                                                            "open": str(conversation.id)})
    assert response.status_code == 204
    assert poll(li, conversation).get_json()["notice"] == ""


def test_an_entry_expires_30_seconds_after_the_members_last_poll(app, tenant, conversation, monkeypatch):
    han = named(tenant, "agent", "韩梅梅")
    connection = get_redis()
    viewers.report(connection, tenant.id, han.id, han.display_name, conversation.id, "reply")
    key = f"desk:viewers:{tenant.id}"
    assert 29_000 < connection.pttl(key) <= viewers.TTL_MS
    stored_until = int(connection.hget(key, str(han.id)).decode().split("|")[0])
    server_now = connection.time()
    assert abs(stored_until - (server_now[0] * 1000 + server_now[1] // 1000 + viewers.TTL_MS)) < 1000
    monkeypatch.setattr(viewers, "TTL_MS", 200)
    viewers.report(connection, tenant.id, han.id, han.display_name, conversation.id, "reply")
    def live() -> list[str]:  # what another member's poll reads, recording nothing
        return [v.name for v in viewers.report(connection, tenant.id, uuid.uuid4(), "", None, "", write=False)]

    assert live() == ["韩梅梅"]
    time.sleep(0.3)
    assert live() == []
    assert connection.hget(key, str(han.id)) is None


def test_an_impersonating_session_records_nothing_for_the_member(app, tenant, conversation):
    li = browser_of(app, named(tenant, "agent", "李雷"))
    impersonation = app.test_client()
    impersonation.get(f"/staff/impersonate/{issue_link_token(IMPERSONATION, named(tenant, 'agent', '韩梅梅'))}")
    assert poll(impersonation, conversation, typing="reply").status_code in (200, 204)
    assert poll(li, conversation).get_json()["notice"] == ""


def test_another_tenants_member_sees_nothing(app, tenant, other_tenant, conversation):
    han = browser_of(app, named(tenant, "agent", "韩梅梅"))
    stranger = browser_of(app, named(other_tenant, "agent", "Stranger"))
    poll(han, conversation, typing="reply")
    assert poll(stranger, conversation).get_json()["open_elsewhere"] == {}
    assert poll(stranger, conversation).get_json()["notice"] == ""


def composer_post(browser, conversation, text: str, replied_after: str, send_anyway: str = "", client_id=None,
                  headers=None, private: bool = False):
    page = browser.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    data = {"csrf_token": csrf_from(page), "text": text, "client_message_id": str(client_id or uuid.uuid4()),
            "replied_after": replied_after, "send_anyway": send_anyway, **({"private_note": "on"} if private else {})}
    return browser.post(f"/workbench/conversations/{conversation.id}/messages", headers={**HX, **(headers or {})},
                        data=data)


def stored(text: str) -> int:
    db.session.expire_all()
    return db.session.scalar(select(func.count()).select_from(Message).where(Message.text == text))


def as_of(browser, conversation) -> str:
    page = browser.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    return page.split('data-as-of="', 1)[1].split('"', 1)[0]


def test_a_send_asks_when_another_member_replied_after_the_first_keystroke(app, tenant, conversation):
    han, li = (browser_of(app, named(tenant, "agent", n)) for n in ("韩梅梅", "李雷"))
    began = as_of(li, conversation)
    assert send_reply(han, conversation, "We shipped it today").status_code == 200
    asked = composer_post(li, conversation, "Your parcel left", began)
    assert asked.status_code == 422 and asked.headers["HX-Retarget"] == "#composer-question"
    body = asked.get_data(as_text=True)
    assert 'aria-labelledby="someone-replied-title"' in body and ">Someone else replied</h2>" in body
    assert "韩梅梅 replied " in body and " seconds ago. Send anyway?" in body or " second ago." in body
    assert "Send anyway</button>" in body and "Review first</button>" in body
    assert stored("Your parcel left") == 0
    client_id = uuid.uuid4()
    for _ in range(2):  # a retried "Send anyway" stores one message
        assert composer_post(li, conversation, "Your parcel left", began, "1", client_id).status_code == 200
    assert stored("Your parcel left") == 1


def test_no_question_for_ones_own_replies_notes_or_replies_seen_before_typing(app, tenant, conversation):
    han, li = (browser_of(app, named(tenant, "agent", n)) for n in ("韩梅梅", "李雷"))
    send_reply(han, conversation, "Seen before typing")
    began = as_of(li, conversation)
    send_reply(han, conversation, "Checking the warehouse", private=True)
    send_reply(li, conversation, "My own reply")
    assert composer_post(li, conversation, "Your parcel left", began).status_code == 200
    assert composer_post(li, conversation, "Sent without typing", "").status_code == 200
    assert stored("Your parcel left") == 1 and stored("Sent without typing") == 1


def test_writing_a_private_note_after_another_members_reply_never_asks(app, tenant, conversation):
    han, li = (browser_of(app, named(tenant, "agent", n)) for n in ("韩梅梅", "李雷"))
    began = as_of(li, conversation)
    send_reply(han, conversation, "We shipped it today")
    assert composer_post(li, conversation, "Note: double-check the address", began, private=True).status_code == 200
    assert stored("Note: double-check the address") == 1


def test_the_question_speaks_chinese(app, tenant, conversation):
    han, li = (browser_of(app, named(tenant, "agent", n)) for n in ("韩梅梅", "李雷"))
    began = as_of(li, conversation)
    send_reply(han, conversation, "我们今天发货")
    body = composer_post(li, conversation, "您的包裹已发出", began, headers={"Accept-Language": "zh-CN"})
    body = body.get_data(as_text=True)
    assert "其他人已回复" in body and "韩梅梅" in body and "仍然发送" in body and "先查看" in body


def test_a_replied_after_that_is_not_an_instant_is_refused(agent_client, conversation):
    response = composer_post(agent_client, conversation, "Hello", "yesterday")
    assert response.status_code == 422 and stored("Hello") == 0
    assert "The form was incomplete" in response.get_data(as_text=True)
