"""Drafts that survive (issue 37): what a member typed in a conversation's composer is theirs
alone, restored on the conversation's page after a reassignment or a change of status, with the
note toggle; sending removes it, and a save that arrives after its text was sent changes nothing; an
empty text removes it; too long a text or another tenant's conversation is refused; the sweep
removes drafts untouched for 30 days."""
import uuid
from datetime import timedelta

from sqlalchemy import func, select

from core.clock import utcnow
from core.db import db
from desk import drafts
from desk.models import ComposerDraft
from tests.conftest import csrf_from, seat
from tests.support.desk import HX, browser_of, send_reply


def save(browser, conversation, text: str, private: bool = False, client_id=None):
    page = browser.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    data = {"csrf_token": csrf_from(page), "text": text, "client_message_id": str(client_id or uuid.uuid4())}
    if private:
        data["private_note"] = "on"
    return browser.post(f"/workbench/conversations/{conversation.id}/draft", headers=HX, data=data)


def composer_text(browser, conversation) -> str:
    page = browser.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    return page.split('id="composer-text"', 1)[1].split(">", 1)[1].split("</textarea>", 1)[0].removeprefix("\n")


def kept() -> int:
    db.session.expire_all()
    return db.session.scalar(select(func.count()).select_from(ComposerDraft))


def test_a_draft_is_the_members_own_and_comes_back_on_the_conversations_page(app, agent_client, tenant,
                                                                             conversation):
    assert save(agent_client, conversation, "Dear Wang,\n\nyour parcel <b>left</b>").status_code == 204
    assert composer_text(agent_client, conversation) == "Dear Wang,\n\nyour parcel &lt;b&gt;left&lt;/b&gt;"
    other = browser_of(app, seat(tenant, "agent"))
    assert composer_text(other, conversation) == ""


def test_the_draft_survives_a_reassignment_and_a_change_of_status_with_its_note_toggle(
        app, agent_client, tenant, conversation):
    save(agent_client, conversation, "Checking with the warehouse", private=True)
    supervisor = browser_of(app, seat(tenant, "supervisor"))
    page = supervisor.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    for field, value, seen in (("status", "pending", {"seen_status": "open", "seen_assignee": ""}),):
        assert supervisor.post(f"/workbench/conversations/{conversation.id}/{field}", headers=HX, data={
            "csrf_token": csrf_from(page), field: value, **seen}).status_code == 200
    page = agent_client.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    assert "Checking with the warehouse</textarea>" in page
    assert '<input type="checkbox" name="private_note" value="on" checked>' in page


def test_sending_removes_the_draft_and_a_late_save_of_the_sent_text_changes_nothing(agent_client, conversation):
    client_id = uuid.uuid4()
    save(agent_client, conversation, "Your parcel left today", client_id=client_id)
    assert send_reply(agent_client, conversation, "Your parcel left today", client_id=client_id).status_code == 200
    assert kept() == 0
    assert save(agent_client, conversation, "Your parcel left today", client_id=client_id).status_code == 204
    assert kept() == 0


def test_an_empty_text_removes_the_draft(agent_client, conversation):
    save(agent_client, conversation, "Hello")
    assert kept() == 1
    save(agent_client, conversation, "  \n ")
    assert kept() == 0


def test_too_long_a_text_is_refused_and_nothing_kept(agent_client, conversation):
    response = save(agent_client, conversation, "x" * 4001)
    assert response.status_code == 400 and kept() == 0


def test_another_tenants_conversation_is_not_found(app, other_tenant, conversation):
    stranger = browser_of(app, seat(other_tenant, "agent"))
    token = csrf_from(stranger.get("/workbench").get_data(as_text=True))
    response = stranger.post(f"/workbench/conversations/{conversation.id}/draft", headers=HX, data={
        "csrf_token": token, "text": "hi", "client_message_id": str(uuid.uuid4())})
    assert response.status_code == 404 and kept() == 0


def test_the_sweep_removes_drafts_untouched_for_30_days(tenant, agent, conversation):
    now = utcnow()
    drafts.save_draft(tenant.id, agent.id, conversation.id, "old", False, uuid.uuid4(), now - timedelta(days=31))
    other = seat(tenant, "agent")
    drafts.save_draft(tenant.id, other.id, conversation.id, "recent", False, uuid.uuid4(), now - timedelta(days=29))
    db.session.commit()
    assert drafts.sweep() == 1
    assert [row.text for row in db.session.scalars(select(ComposerDraft))] == ["recent"]
