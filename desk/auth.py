"""Console login, logout, password change, tenant selection and the restricted
session hand-off links."""
import uuid
from urllib.parse import urlsplit

from flask import Blueprint, flash, redirect, render_template, request, session, url_for
from flask_login import current_user, login_required
from sqlalchemy import func, select

from core.api import ApiError
from core.db import db
from core.limits import hit_fixed_window
from core.redis import get_redis
from desk.forms import ChangePasswordForm, LoginForm, LogoutForm, SelectTenantForm
from desk.handoff import redeem_link_token
from desk.models import User
from desk.sessions import (ASSISTANT, CONSOLE, IMPERSONATION, active_memberships, current_member,
                           end_session, landing_url, resume_session, session_type,
                           start_session)
from desk.tenancy import set_password

bp = Blueprint("desk", __name__)

LOGIN_WINDOW = 300
LOGIN_LIMIT_PER_EMAIL = 10
LOGIN_LIMIT_PER_ADDRESS = 100


def _login_throttled(email: str) -> int:
    """Seconds to wait when this e-mail or client address tried too often, else 0."""
    conn = get_redis()
    for key, limit in ((f"login:email:{email}", LOGIN_LIMIT_PER_EMAIL),
                       (f"login:addr:{request.remote_addr}", LOGIN_LIMIT_PER_ADDRESS)):
        result = hit_fixed_window(conn, key, limit, LOGIN_WINDOW)
        if not result.allowed:
            return result.reset_after
    return 0


def _safe_next(default: str) -> str:
    """Follow `next` only to a path on this site."""
    target = request.values.get("next", "")
    parts = urlsplit(target)
    if target.startswith("/") and not target.startswith("//") and not parts.netloc:
        return target
    return default


def _after_login(user: User):
    """Pick the tenant (or ask for it) and send the user to their landing page."""
    memberships = active_memberships(user.id)
    if len(memberships) == 1:
        session["tenant_id"] = str(memberships[0].tenant_id)
        return redirect(_safe_next(landing_url(memberships[0])))
    return redirect(url_for("desk.select_tenant", next=request.values.get("next", "")))


@bp.route("/login", methods=["GET", "POST"])
def login():
    """Show the login form; on POST check the password and open a console session."""
    form = LoginForm()
    if form.validate_on_submit():
        email = form.email.data.strip().lower()
        wait = _login_throttled(email)
        if wait:
            form.password.errors.append(f"Too many attempts. Try again in {wait // 60 + 1} minute(s).")
            return render_template("desk/login.html", form=form), 429, {"Retry-After": str(wait)}
        user = db.session.scalar(select(User).where(func.lower(User.email) == email))
        if user is not None and user.check_password(form.password.data) and active_memberships(user.id):
            start_session(user, CONSOLE)
            return _after_login(user)
        form.password.errors.append("Email or password is wrong, or the account has no active seat.")
        return render_template("desk/login.html", form=form), 422
    status = 422 if request.method == "POST" else 200
    return render_template("desk/login.html", form=form), status


@bp.post("/logout")
def logout():
    """End the session (POST with CSRF so no other site can log you out)."""
    form = LogoutForm()
    if form.validate_on_submit():
        end_session()
    return redirect(url_for("desk.login"))


@bp.route("/tenants/select", methods=["GET", "POST"])
@login_required
def select_tenant():
    """Let a member of several tenants choose one; restricted sessions keep their tenant."""
    memberships = active_memberships(current_user.id)
    form = SelectTenantForm()
    if session_type() != CONSOLE:
        return render_template("desk/select_tenant.html", memberships=[], form=form,
                               locked=True), 403
    if form.validate_on_submit():
        chosen = next((m for m in memberships if str(m.tenant_id) == form.tenant_id.data), None)
        if chosen is not None:
            session["tenant_id"] = str(chosen.tenant_id)
            return redirect(_safe_next(landing_url(chosen)))
        form.tenant_id.errors.append("Choose one of your tenants.")
        return render_template("desk/select_tenant.html", memberships=memberships, form=form), 422
    return render_template("desk/select_tenant.html", memberships=memberships, form=form)


@bp.route("/account/password", methods=["GET", "POST"])
@login_required
def change_password():
    """The console user's own password; the change logs out every other session of theirs."""
    if session_type() != CONSOLE:
        raise ApiError("session_scope_forbidden", 403)
    form = ChangePasswordForm()
    if not form.validate_on_submit():
        status = 422 if request.method == "POST" else 200
        return render_template("desk/password.html", form=form), status
    user = current_user._get_current_object()
    if not user.check_password(form.current_password.data):
        form.current_password.errors.append("Your current password is wrong.")
        return render_template("desk/password.html", form=form), 422
    member, tenant_id = current_member(), session.get("tenant_id")
    set_password(user, form.new_password.data)
    db.session.commit()
    start_session(user, CONSOLE, tenant_id=uuid.UUID(tenant_id) if tenant_id else None)  # a new id
    flash("Password changed. Your other sessions have been logged out.", "ok")
    return redirect(landing_url(member) if member else url_for("desk.select_tenant"))


def _open_handoff(kind: str, token: str):
    """Redeem a one-time link and open a restricted session bound to the member's tenant."""
    member = redeem_link_token(kind, token)
    start_session(member.user, kind, tenant_id=member.tenant_id)
    return redirect(url_for("desk.home"))


@bp.get("/staff/impersonate/<token>")
def impersonate(token: str):
    """Operator hand-off: open an impersonation session (issued by `flask staff impersonate`)."""
    return _open_handoff(IMPERSONATION, token)


@bp.get("/assistant/login/<token>")
def assistant_login(token: str):
    """Embedded assistant login path: opens an assistant session for one member."""
    return _open_handoff(ASSISTANT, token)


@bp.get("/")
def home():
    """Send people where they belong."""
    if not current_user.is_authenticated:
        return redirect(url_for("desk.login"))
    member = current_member()
    if member is None:
        return redirect(url_for("desk.select_tenant"))
    if session_type() != CONSOLE:
        return redirect(url_for("workbench.index"))
    return redirect(landing_url(member))


def load_user(user_id: str) -> User | None:
    """Flask-Login user loader: the signed cookie counts only while its session is live in Redis."""
    try:
        return resume_session(uuid.UUID(user_id))
    except ValueError:
        return None


@bp.app_context_processor
def console_context() -> dict:
    """Who is working where, for the layout's header and navigation."""
    member = current_member() if current_user.is_authenticated else None
    return {"member": member, "session_kind": session_type(),
            "logout_form": LogoutForm() if current_user.is_authenticated else None}
