"""A member's presence, the workbench's side (issue 35): the choice they save in the workbench
header, and the heartbeat their workbench requests keep.

The presence that counts at an instant is `desk.duty.presence_now`: the saved choice while the last
workbench request is less than HEARTBEAT_SECONDS old, offline otherwise (and offline for a member
who never opened the workbench). Only the member's own sessions speak for them: an impersonation or
an assistant session is not the member being there, so it neither changes their choice nor keeps
them online.
"""
from datetime import datetime, timedelta

from sqlalchemy import or_, update

from core.api import ApiError
from core.clock import utcnow
from core.db import db
from desk.duty import HEARTBEAT_SECONDS
from desk.models import PRESENCES, Member

# How stale `last_seen_at` may get before a request writes it again: a third of the expiry, so a
# member polling every 3 s costs one write per 30 s and is never seen offline while polling.
HEARTBEAT_WRITE_AFTER = timedelta(seconds=HEARTBEAT_SECONDS / 3)


def set_presence(member: Member, presence: str, *, restricted: bool) -> Member:
    """Save the member's own choice among PRESENCES and when it changed (flushed). A restricted
    session changes no one's presence (403 session_scope_forbidden, before the value is looked
    at); any other value is 400 invalid_form, the workbench's answer to a form its page never
    offers."""
    if restricted:
        raise ApiError("session_scope_forbidden", 403)
    if presence not in PRESENCES:
        raise ApiError("invalid_form", 400)
    if member.presence != presence:
        member.presence, member.presence_since = presence, utcnow()
    db.session.flush()
    return member


def heartbeat(member: Member, now: datetime) -> bool:
    """Record a workbench request of the member's own at `now`; whether it wrote (the caller commits).

    No statement at all while the `last_seen_at` already loaded with the member is less than
    HEARTBEAT_WRITE_AFTER old; otherwise one conditional UPDATE that writes only while the stored
    value is still null or that old, so concurrent requests write once and the value never moves
    back in time.
    """
    seen = member.last_seen_at
    if seen is not None and now - seen < HEARTBEAT_WRITE_AFTER:
        return False
    written = db.session.execute(
        update(Member).where(Member.id == member.id,
                             or_(Member.last_seen_at.is_(None), Member.last_seen_at <= now - HEARTBEAT_WRITE_AFTER))
        .values(last_seen_at=now).execution_options(synchronize_session=False))
    return written.rowcount == 1
