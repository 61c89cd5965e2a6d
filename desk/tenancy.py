"""Creating tenants and members (operators' CLI and the demo seed use these)."""
import uuid

from sqlalchemy import func, select

from core.api import ApiError
from core.db import db
from desk.models import ROLES, TIERS, Member, Tenant, User


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
    if role not in ROLES or "@" not in email or len(password) < 8:
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
