"""Availability as the tests arrange it: the tenant's policy on, members online (a fresh heartbeat),
away, offline or at a capacity, and the waiting queue and thread lines read back."""
import uuid
from datetime import datetime

from sqlalchemy import select, update

from core.clock import utcnow
from core.db import db
from desk.availability import save_policy
from desk.availability_models import POLICY_DEFAULTS, AvailabilityEvent, WaitingConversation
from desk.models import Member


def policy_on(tenant, **changes) -> None:
    """The tenant's availability policy enabled (defaults otherwise, `changes` over them); committed."""
    save_policy(tenant.id, None, {**POLICY_DEFAULTS, "enabled": True, **changes})
    db.session.commit()


def present(member: Member, presence: str = "online", seen_at: datetime | None = None, **columns) -> Member:
    """The member's saved presence, last workbench request (now by default) and any other columns;
    committed."""
    db.session.execute(update(Member).where(Member.id == member.id).values(
        presence=presence, last_seen_at=seen_at or utcnow(), **columns))
    db.session.commit()
    return member


def named(member: Member, name: str) -> Member:
    """The member renamed (the thread shows names); committed."""
    db.session.execute(update(Member).where(Member.id == member.id).values(display_name=name))
    db.session.commit()
    return member


def queue() -> list[WaitingConversation]:
    """Every waiting conversation as committed, oldest first."""
    db.session.expire_all()
    return list(db.session.scalars(select(WaitingConversation).order_by(WaitingConversation.waiting_since)))


def lines(conversation_id: uuid.UUID) -> list[tuple[str, uuid.UUID | None, str | None]]:
    """The conversation's availability events as (kind, member, reason code), in order."""
    return [(e.kind, e.member_id, e.reason_code) for e in db.session.scalars(
        select(AvailabilityEvent).where(AvailabilityEvent.conversation_id == conversation_id)
        .order_by(AvailabilityEvent.created_at))]
