"""One-time signed links that open the restricted session kinds (impersonation, assistant)."""
import secrets
import uuid

from flask import current_app
from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy import select

from core.api import ApiError
from core.db import db
from core.redis import get_redis
from desk.models import Member, Tenant
from desk.sessions import ASSISTANT, IMPERSONATION

LINK_LIFETIME = 300


def _serializer(kind: str) -> URLSafeTimedSerializer:
    """A serializer salted per session kind, so one kind's link never opens another."""
    return URLSafeTimedSerializer(current_app.config["SECRET_KEY"], salt=f"handoff:{kind}")


def issue_link_token(kind: str, member: Member) -> str:
    """Sign a short-lived, single-use token that opens a `kind` session as `member`."""
    if kind not in (IMPERSONATION, ASSISTANT):
        raise ValueError(kind)
    payload = {"member_id": str(member.id), "nonce": secrets.token_urlsafe(16)}
    return _serializer(kind).dumps(payload)


def redeem_link_token(kind: str, token: str) -> Member:
    """Check a link token once and return the member whose session it opens."""
    try:
        payload = _serializer(kind).loads(token, max_age=LINK_LIFETIME)
    except BadSignature:
        raise ApiError("unauthorized", 401) from None
    if not get_redis().set(f"handoff:used:{payload['nonce']}", 1, nx=True, ex=LINK_LIFETIME + 60):
        raise ApiError("unauthorized", 401)
    member = db.session.scalar(select(Member).join(Tenant).where(
        Member.id == uuid.UUID(payload["member_id"]),
        Member.active.is_(True), Tenant.active.is_(True)))
    if member is None:
        raise ApiError("unauthorized", 401)
    return member
