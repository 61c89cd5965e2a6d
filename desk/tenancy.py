"""Tenants, members and passwords (the operators' CLI, the account page and the demo seed use these)."""
import uuid

from sqlalchemy import func, select

from core.api import ApiError
from core.db import db
from desk.models import ROLES, TIERS, Member, Tenant, User
from desk.sessions import end_user_sessions

PASSWORD_MIN, PASSWORD_MAX = 8, 200


def create_tenant(name: str, tier: str = "standard") -> Tenant:
    """Create an active tenant."""
    if tier not in TIERS or not name.strip():
        raise ApiError("invalid_tenant", 400)
    tenant = Tenant(name=name.strip(), tier=tier)
    db.session.add(tenant)
    db.session.flush()
    return tenant


def add_member(tenant_id: uuid.UUID, email: str, password: str, role: str,
               display_name: str | None = None) -> Member:
    """Seat a user (created on first use) in a tenant with a role."""
    email = email.strip().lower()
    if role not in ROLES or "@" not in email or not acceptable_password(password):
        raise ApiError("invalid_member", 400)
    if db.session.get(Tenant, tenant_id) is None:
        raise ApiError("not_found", 404)
    user = db.session.scalar(select(User).where(func.lower(User.email) == email))
    if user is None:
        user = User(email=email)
        user.set_password(password)
        db.session.add(user)
        db.session.flush()
    elif db.session.scalar(select(Member).where(Member.tenant_id == tenant_id, Member.user_id == user.id)):
        raise ApiError("member_exists", 409)
    member = Member(tenant_id=tenant_id, user_id=user.id, role=role,
                    display_name=(display_name or email.split("@")[0]).strip())
    db.session.add(member)
    db.session.flush()
    return member


def acceptable_password(password: str) -> bool:
    """The one password rule: 8 to 200 characters."""
    return PASSWORD_MIN <= len(password) <= PASSWORD_MAX


def get_member(member_id: uuid.UUID) -> Member:
    """A member by id, or not_found."""
    member = db.session.get(Member, member_id)
    if member is None:
        raise ApiError("not_found", 404)
    return member


def set_password(user: User, password: str) -> None:
    """Give the user a new password and end every session they have (all devices, all kinds).

    Sessions end at once, before the caller commits: a session that a login with the old password
    opens meanwhile is refused anyway, since each session is bound to the password it began with.
    """
    if not acceptable_password(password):
        raise ApiError("invalid_password", 400)
    user.set_password(password)
    db.session.flush()
    end_user_sessions(user.id)


def deactivate_member(member: Member) -> None:
    """Take the member's seat away and end every session of that user (they log in again)."""
    member.active = False
    db.session.flush()
    end_user_sessions(member.user_id)
