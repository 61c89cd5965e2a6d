"""The workbench as people use it: their browsers, HTMX requests, replies from the composer,
conversations read back as committed, and a clock that stands still."""
import uuid
from datetime import datetime

from core import clock
from core.db import db
from desk.models import Conversation, Member
from tests.conftest import csrf_from, login

HX = {"HX-Request": "true"}


def browser_of(app, member: Member):
    """A browser logged in as `member`."""
    browser = app.test_client()
    assert login(browser, member.user.email).status_code == 302
    return browser


def fresh(conversation: Conversation) -> Conversation:
    """The conversation as the database holds it now."""
    db.session.expire_all()
    return db.session.get(Conversation, conversation.id)


def send_reply(browser, conversation, text="Your parcel left the warehouse today.", private=False, client_id=None):
    """POST a reply (or a private note) from the conversation's composer, as its HTMX form does."""
    page = browser.get(f"/workbench/conversations/{conversation.id}").get_data(as_text=True)
    data = {"csrf_token": csrf_from(page), "text": text, "client_message_id": str(client_id or uuid.uuid4())}
    if private:
        data["private_note"] = "on"
    return browser.post(f"/workbench/conversations/{conversation.id}/messages", headers=HX, data=data)


def stop_the_clock(monkeypatch, instant: datetime) -> datetime:
    """Make every `utcnow()` return `instant`."""
    class Stopped(datetime):
        @classmethod
        def now(cls, tz=None):
            return instant.astimezone(tz)

    monkeypatch.setattr(clock, "datetime", Stopped)
    return instant
