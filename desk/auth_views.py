"""Console login, logout, password change, tenant selection and the restricted session hand-off
links (the password checks and their throttle are desk/signin.py's)."""
import uuid
from urllib.parse import urlsplit

from flask import Blueprint, flash, redirect, render_template, request, session, url_for
from flask_babel import gettext as _, ngettext
from flask_login import current_user, login_required

from core.api import ApiError
from core.db import db
from core.i18n import LOCALE_SESSION_KEY, current_locale, locale_of
from desk import signin
from desk.forms import AccountForm, ChangePasswordForm, LoginForm, LogoutForm, SelectTenantForm
from desk.handoff import redeem_link_token
from desk.models import User
from desk.sessions import (ASSISTANT, CONSOLE, IMPERSONATION, active_memberships, current_member,
                           end_session, landing_url, resume_session, session_type,
                           start_session)

bp = Blueprint("desk", __name__)


def _refused(template: str, form, field, err: ApiError, wrong: str):
    """The form again with the sign-in service's refusal next to `field`: too many attempts (429,
    saying how long to wait, with Retry-After) or the `wrong` password (422)."""
    if err.code == "rate_limited":
        wait = int(err.headers["Retry-After"])
        field.errors.append(ngettext("Too many attempts. Try again in %(num)d minute.",
                                     "Too many attempts. Try again in %(num)d minutes.", wait // 60 + 1))
        return render_template(template, form=form), 429, {"Retry-After": str(wait)}
    if err.code != "invalid_credentials":
        raise err
    field.errors.append(wrong)
    return render_template(template, form=form), 422


def _safe_next(default: str) -> str:
    """Follow `next` only to a path on this site. Browsers read a backslash as a slash ("/\\host"
    would leave the site); a control character (CR/LF, NUL, DEL) or any other unprintable one has
    no place in a path and no way into a Location header."""
    target = request.values.get("next", "")
    if not target.startswith("/") or target.startswith("//") or "\\" in target or not target.isprintable():
        return default
    return default if urlsplit(target).netloc else target


def _after_login(user: User):
    """Pick the tenant (or ask for it) and send the user to their landing page."""
    memberships = active_memberships(user.id)
    if len(memberships) == 1:
        session["tenant_id"] = str(memberships[0].tenant_id)
        return redirect(_safe_next(landing_url(memberships[0])))
    return redirect(url_for("desk.select_tenant", next=_safe_next("")))


@bp.route("/login", methods=["GET", "POST"])
def login():
    """Show the login form; on POST check the password and open a console session."""
    form = LoginForm()
    if form.validate_on_submit():
        try:
            user = signin.sign_in(form.email.data, form.password.data, request.remote_addr)
        except ApiError as err:
            return _refused("desk/login.html", form, form.password, err,
                            _("Email or password is wrong, or the account has no active seat."))
        start_session(user, CONSOLE)
        return _after_login(user)
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
        form.tenant_id.errors.append(_("Choose one of your tenants."))
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
    try:
        signin.change_password(user, form.current_password.data, form.new_password.data, request.remote_addr)
    except ApiError as err:
        return _refused("desk/password.html", form, form.current_password, err, _("Your current password is wrong."))
    member, tenant_id = current_member(), session.get("tenant_id")
    db.session.commit()
    start_session(user, CONSOLE, tenant_id=uuid.UUID(tenant_id) if tenant_id else None)  # a new id
    flash(_("Password changed. Your other sessions have been logged out."), "ok")
    return redirect(landing_url(member) if member else url_for("desk.select_tenant"))


@bp.route("/account", methods=["GET", "POST"])
@login_required
def account():
    """The console user's own settings: the pages' language (and the way to the password)."""
    if session_type() != CONSOLE:
        raise ApiError("session_scope_forbidden", 403)
    form = AccountForm(locale=current_user.locale or current_locale())
    if not form.validate_on_submit():
        status = 422 if request.method == "POST" else 200
        return render_template("desk/account.html", form=form), status
    current_user.locale = form.locale.data
    db.session.commit()
    flash(_("Saved: the pages are in the language you chose."), "ok")
    return redirect(url_for("desk.account"))


@bp.post("/locale")
def switch_locale():
    """The header's language switch: saved for a console user, kept in the session for anyone
    else (restricted sessions never change the user's settings); back to the same page."""
    chosen = locale_of(request.form.get("locale"))
    if chosen is None:
        raise ApiError("invalid_locale", 400)
    if current_user.is_authenticated and session_type() == CONSOLE:
        current_user.locale = chosen
        db.session.commit()
    else:
        session[LOCALE_SESSION_KEY] = chosen
    return redirect(_safe_next(url_for("desk.home")))


def saved_locale() -> str | None:
    """The signed-in console user's language preference (core.i18n asks for it)."""
    if current_user.is_authenticated and session_type() == CONSOLE:
        return current_user.locale
    return None


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
            "logout_form": LogoutForm() if current_user.is_authenticated else None,
            "here": _here()}


def _here() -> str:
    """Where the language switch comes back to: this page, or for an answer to a POST the page
    that sent it (a POST-only address cannot be opened again)."""
    if request.method == "GET":
        return request.full_path.rstrip("?")
    referrer = urlsplit(request.referrer or "")
    if referrer.netloc == request.host and referrer.path:
        return referrer.path + (f"?{referrer.query}" if referrer.query else "")
    return url_for("desk.home")
