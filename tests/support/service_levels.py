"""Service levels as tests drive them (issue 36): policies saved, and one customer's conversation
moved by its events (customer messages, replies, status changes) at instants the test chooses."""
import uuid
from datetime import datetime

from sqlalchemy import select

from core.clock import beijing_to_utc
from core.db import db
from desk.models import Conversation
from desk.service_level_models import ServiceLevelTimer
from desk.service_levels import save_settings
from tests.conftest import csrf_from
from tests.support.channels import payload, send
from tests.support.desk import HX, send_reply, stop_the_clock

WEEKDAYS_9_TO_6 = [{"weekdays": [1, 2, 3, 4, 5], "start": "09:00", "end": "18:00"}]


def beijing(text: str) -> datetime:
    """An instant written as Beijing wall-clock time, `YYYY-MM-DD HH:MM`."""
    return beijing_to_utc(datetime.fromisoformat(text))


def policy(first=None, following=None, resolution=None, hours="business", channel=None) -> dict:
    return {"channel_id": channel, "first_response_minutes": first, "next_response_minutes": following,
            "resolution_minutes": resolution, "hours": hours}


def levels(tenant, admin, *policies, hours=None) -> None:
    save_settings(tenant.id, admin.user_id, list(policies), WEEKDAYS_9_TO_6 if hours is None else hours)
    db.session.commit()


class Desk:
    """The events of one customer's conversation at instants the test chooses."""

    def __init__(self, monkeypatch, client, channel, agent_browser):
        self.monkeypatch, self.client, self.channel, self.agent = monkeypatch, client, channel, agent_browser
        self.conversation_id = None

    def at(self, instant: datetime) -> "Desk":
        stop_the_clock(self.monkeypatch, instant)
        return self

    def customer(self, text: str = "Where is my parcel?") -> "Desk":
        response = send(self.client, self.channel, payload(message_id=uuid.uuid4().hex, text=text))
        assert response.status_code == 201, response.get_json()
        self.conversation_id = uuid.UUID(response.get_json()["data"]["conversation_id"])
        return self

    def reply(self, private: bool = False) -> "Desk":
        response = send_reply(self.agent, db.session.get(Conversation, self.conversation_id), private=private)
        assert response.status_code == 200
        return self

    def status(self, status: str) -> "Desk":
        db.session.expire_all()
        seen = db.session.get(Conversation, self.conversation_id)
        page = self.agent.get(f"/workbench/conversations/{seen.id}").get_data(as_text=True)
        response = self.agent.post(f"/workbench/conversations/{seen.id}/status", headers=HX, data={
            "csrf_token": csrf_from(page), "status": status, "seen_status": seen.status,
            "seen_assignee": str(seen.assignee_member_id or "")})
        assert response.status_code == 200, response.get_data(as_text=True)
        return self

    def timers(self) -> list[ServiceLevelTimer]:
        db.session.expire_all()
        return list(db.session.scalars(select(ServiceLevelTimer).where(
            ServiceLevelTimer.conversation_id == self.conversation_id).order_by(ServiceLevelTimer.started_at,
                                                                                ServiceLevelTimer.kind)))

    def timer(self, kind: str) -> ServiceLevelTimer:
        [found] = [timer for timer in self.timers() if timer.kind == kind]
        return found
