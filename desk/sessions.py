"""Session kinds, the current member, and the role guards every console surface uses."""
import uuid
from functools import wraps

from flask import current_app, g, redirect, request, session, url_for
from flask_login import current_user, login_user, logout_user
from sqlalchemy import select

from core.api import ApiError, wants_json
from core.guards import SAFE_METHODS, require_same_origin
from core.db import db
from desk.models import Member, Tenant, User

CONSOLE, IMPERSONATION, ASSISTANT = "console", "impersonation", "assistant"
SESSION_TYPES = (CONSOLE, IMPERSONATION, ASSISTANT)
WORKBENCH_ROLES = ("admin", "supervisor", "agent")


def start_session(user: User, session_type: str, tenant_id: uuid.UUID | None = None) -> None:
    """Replace whatever session there was with a fresh one of the given kind."""
    if session_type not in SESSION_TYPES:
        raise ValueError(session_type)
    session.clear()
    login_user(user)
    session["session_type"] = session_type
    if tenant_id is not None:
        session["tenant_id"] = str(tenant_id)


def end_session() -> None:
    """Log out and forget the tenant choice."""
    logout_user()
    session.clear()


def session_type() -> str | None:
    """The kind of the current session, or None when nobody is logged in."""
    return session.get("session_type") if current_user.is_authenticated else None


def active_memberships(user_id: uuid.UUID) -> list[Member]:
    """The user's active seats in active tenants, by tenant name."""
    return list(db.session.scalars(
        select(Member).join(Tenant).where(
            Member.user_id == user_id, Member.active.is_(True), Tenant.active.is_(True))
        .order_by(Tenant.name)))


def current_member() -> Member | None:
    """The logged-in user's active seat in the selected, active tenant."""
    if "current_member" not in g:
        g.current_member = None
        tenant_id = session.get("tenant_id")
        if current_user.is_authenticated and tenant_id:
            g.current_member = db.session.scalar(
                select(Member).join(Tenant).where(
                    Member.user_id == current_user.id,
                    Member.tenant_id == uuid.UUID(tenant_id),
                    Member.active.is_(True), Tenant.active.is_(True)))
    return g.current_member


def landing_url(member: Member) -> str:
    """Administrators land on the studio console, everyone else on the workbench."""
    return url_for("studio.index") if member.role == "admin" else url_for("workbench.index")


def _check(session_types: tuple[str, ...], roles: tuple[str, ...]):
    """Return a redirect for pages, or raise the spec's error, unless the session qualifies."""
    if not current_user.is_authenticated:
        if wants_json():
            raise ApiError("unauthorized", 401)
        return current_app.login_manager.unauthorized()
    if session_type() not in session_types:
        raise ApiError("session_scope_forbidden", 403)
    member = current_member()
    if member is None:
        if wants_json():
            raise ApiError("forbidden", 403)
        return redirect(url_for("desk.select_tenant", next=request.path))
    if member.role not in roles:
        raise ApiError("forbidden", 403)
    if wants_json() and request.method not in SAFE_METHODS:
        require_same_origin()  # cookie-authenticated JSON: no CSRF token, so the Origin must match
    return None


def _guard(session_types: tuple[str, ...], roles: tuple[str, ...]):
    """Build a view decorator from the allowed session kinds and roles."""
    def decorator(view):
        @wraps(view)
        def wrapped(*args, **kwargs):
            denied = _check(session_types, roles)
            return denied if denied is not None else view(*args, **kwargs)
        return wrapped
    return decorator


def admin_console_required(view):
    """Real console session of an administrator with a tenant selected."""
    return _guard((CONSOLE,), ("admin",))(view)


def workbench_required(view):
    """Agent, supervisor or administrator of the selected tenant, in any session kind."""
    return _guard(SESSION_TYPES, WORKBENCH_ROLES)(view)
