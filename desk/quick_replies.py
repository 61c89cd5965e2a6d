"""Quick replies: a tenant's saved answers (title and body, at most 200), picked in the composer
by typing `/`; added by hand or imported from the template market. A body may hold placeholders
the composer fills (`desk.placeholders`); an unknown one is 400 invalid_quick_reply at `placeholder`."""
import uuid

from sqlalchemy import func, select

from core.api import ApiError
from core.db import db, tenant_row
from core.text import storable
from desk.models import QuickReply, Tenant
from desk.placeholders import UnknownPlaceholder, placeholders

LIMIT = 200
TITLE_LIMIT = 80
BODY_LIMIT = 2000


def tenant_replies(tenant_id: uuid.UUID) -> list[QuickReply]:
    """The tenant's quick replies by title."""
    return list(db.session.scalars(select(QuickReply).where(QuickReply.tenant_id == tenant_id)
                                   .order_by(QuickReply.title)))


def _clean(title: str, body: str) -> tuple[str, str]:
    """A trimmed title and body within their limits, else 400 invalid_quick_reply (detail: field)."""
    title, body = (title or "").strip(), (body or "").strip()
    if not title or len(title) > TITLE_LIMIT or not storable(title):
        raise ApiError("invalid_quick_reply", 400, detail="title")
    if not body or len(body) > BODY_LIMIT or not storable(body):
        raise ApiError("invalid_quick_reply", 400, detail="body")
    try:
        placeholders(body)
    except UnknownPlaceholder:
        raise ApiError("invalid_quick_reply", 400, detail="placeholder") from None
    return title, body


def _title_taken(tenant_id: uuid.UUID, title: str, other_than: uuid.UUID | None = None) -> bool:
    """Whether another of the tenant's replies has this title."""
    query = select(QuickReply.id).where(QuickReply.tenant_id == tenant_id, QuickReply.title == title)
    if other_than is not None:
        query = query.where(QuickReply.id != other_than)
    return db.session.scalar(query.limit(1)) is not None


def add_reply(tenant_id: uuid.UUID, title: str, body: str, origin: str | None = None,
              license: str | None = None) -> QuickReply:
    """Save a new reply. 400 invalid_quick_reply; 409 quick_reply_title_taken; 409
    quick_reply_limit once the tenant has 200 (counted under the tenant row's lock, so two
    additions at once cannot both take the last place). Flushes only."""
    title, body = _clean(title, body)
    db.session.execute(select(Tenant.id).where(Tenant.id == tenant_id).with_for_update())
    if db.session.scalar(select(func.count()).where(QuickReply.tenant_id == tenant_id)) >= LIMIT:
        raise ApiError("quick_reply_limit", 409)
    if _title_taken(tenant_id, title):
        raise ApiError("quick_reply_title_taken", 409)
    reply = QuickReply(tenant_id=tenant_id, title=title, body=body, origin=origin, license=license)
    db.session.add(reply)
    db.session.flush()  # the unique (tenant_id, title) index settles a race the check missed
    return reply


def edit_reply(tenant_id: uuid.UUID, reply_id: uuid.UUID, title: str, body: str) -> QuickReply:
    """Change a reply's title and body (the same refusals as adding). Flushes only."""
    reply = tenant_row(QuickReply, tenant_id, reply_id)
    title, body = _clean(title, body)
    if _title_taken(tenant_id, title, other_than=reply.id):
        raise ApiError("quick_reply_title_taken", 409)
    reply.title, reply.body = title, body
    db.session.flush()
    return reply


def delete_reply(tenant_id: uuid.UUID, reply_id: uuid.UUID) -> None:
    """Remove one of the tenant's replies. Flushes only."""
    db.session.delete(tenant_row(QuickReply, tenant_id, reply_id))
    db.session.flush()
