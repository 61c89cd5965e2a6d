"""Session kinds, the server-side session registry, the current member, and the role guards
every console surface uses (the workbench's also records the member's heartbeat)."""
import hashlib
import hmac
import secrets
import uuid
from datetime import timedelta
from functools import cache, wraps

from flask import current_app, g, redirect, request, session, url_for
from flask_login import current_user, login_user, logout_user
from sqlalchemy import Select, and_, bindparam, select

from core.api import ApiError, wants_json
from core.clock import utcnow
from core.guards import SAFE_METHODS, require_same_origin
from core.db import db
from core.i18n import LOCALE_SESSION_KEY
from core.redis import SERVER_NOW, get_redis, run_script
from desk.models import Member, Tenant, User
from desk.presence import heartbeat

CONSOLE, IMPERSONATION, ASSISTANT = "console", "impersonation", "assistant"
SESSION_TYPES = (CONSOLE, IMPERSONATION, ASSISTANT)
WORKBENCH_ROLES = ("admin", "supervisor", "agent")

# The registry: `session:<sha256 of the cookie's id>` holds the user, the password it was opened
# with (a keyed digest) and the absolute deadline (Redis server time, ms); the key's TTL is the
# idle timeout, slid by every request but never past the deadline. `user-sessions:<user id>` lists
# a user's ids so that a password change or deactivation can end them all.
SESSION_KEY = "session:"
USER_SESSIONS_KEY = "user-sessions:"

# KEYS: session, user set; ARGV: user id, credential, lifetime ms, idle ms, digest, key prefix.
_OPEN = SERVER_NOW + """
local lifetime, idle = tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'user', ARGV[1], 'credential', ARGV[2], 'deadline', now_ms + lifetime)
redis.call('PEXPIRE', KEYS[1], math.min(idle, lifetime))
for _, digest in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  if redis.call('EXISTS', ARGV[6] .. digest) == 0 then redis.call('SREM', KEYS[2], digest) end
end
redis.call('SADD', KEYS[2], ARGV[5])
redis.call('PEXPIRE', KEYS[2], lifetime)
"""
# KEYS: session; ARGV: user id, idle ms. Returns the credential of a live session of that user.
_RESUME = SERVER_NOW + """
local user, credential, deadline = unpack(redis.call('HMGET', KEYS[1], 'user', 'credential', 'deadline'))
if user ~= ARGV[1] then return false end
local left = tonumber(deadline) - now_ms
if left <= 0 then
  redis.call('DEL', KEYS[1])
  return false
end
redis.call('PEXPIRE', KEYS[1], math.min(tonumber(ARGV[2]), left))
return credential
"""
# KEYS: user set; ARGV: key prefix. Returns how many live sessions ended.
_END_ALL = """
local ended = 0
for _, digest in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  ended = ended + redis.call('DEL', ARGV[1] .. digest)
end
redis.call('DEL', KEYS[1])
return ended
"""
# The session's user and their active seat in the selected tenant (None unless the tenant is
# active), built once: every authenticated request runs it.
_USER_AND_SEAT = (
    select(User, Member, Tenant.active)
    .outerjoin(Member, and_(Member.user_id == User.id, Member.tenant_id == bindparam("p_tenant"),
                            Member.active.is_(True)))
    .outerjoin(Tenant, Tenant.id == Member.tenant_id)
    .where(User.id == bindparam("p_user")))
_AUTH_KEYS = ("_user_id", "_fresh", "_id", "sid", "session_type", "tenant_id")


def _digest(session_id: str) -> str:
    """The registry's name for a cookie's session id (the id itself is never stored)."""
    return hashlib.sha256(session_id.encode()).hexdigest()


def _credential(user: User) -> str:
    """A keyed digest of the password hash: a session opened before a password change never fits."""
    key = current_app.config["SECRET_KEY"].encode()
    return hmac.new(key, user.password_hash.encode(), hashlib.sha256).hexdigest()


def _ms(duration: timedelta) -> int:
    """A duration in whole milliseconds (at least one)."""
    return max(1, int(duration.total_seconds() * 1000))


def start_session(user: User, session_type: str, tenant_id: uuid.UUID | None = None) -> None:
    """Replace this browser's session (ending it) with a fresh registered one of the given kind."""
    if session_type not in SESSION_TYPES:
        raise ValueError(session_type)
    _end_registered()
    language = session.get(LOCALE_SESSION_KEY)  # chosen before logging in: keep it
    session.clear()
    if language is not None:
        session[LOCALE_SESSION_KEY] = language
    session_id = secrets.token_urlsafe(32)
    digest = _digest(session_id)
    run_script(get_redis(), _OPEN, [SESSION_KEY + digest, f"{USER_SESSIONS_KEY}{user.id}"],
               [str(user.id), _credential(user), _ms(current_app.permanent_session_lifetime),
                _ms(current_app.config["SESSION_IDLE_TIMEOUT"]), digest, SESSION_KEY])
    login_user(user)
    session.permanent = True  # the cookie lasts the absolute lifetime; the registry decides sooner
    session["sid"] = session_id
    session["session_type"] = session_type
    if tenant_id is not None:
        session["tenant_id"] = str(tenant_id)


def resume_session(user_id: uuid.UUID) -> User | None:
    """The user of this cookie while its session is live in the registry; else None, forgotten."""
    user = _live_user(user_id)
    if user is None:
        for key in _AUTH_KEYS:
            session.pop(key, None)
    return user


def _live_user(user_id: uuid.UUID) -> User | None:
    """Slide the idle timeout of this cookie's session and return its user, if it is still live."""
    session_id = session.get("sid")
    if not session_id:
        return None
    key = SESSION_KEY + _digest(session_id)
    idle = _ms(current_app.config["SESSION_IDLE_TIMEOUT"])
    credential = run_script(get_redis(), _RESUME, [key], [str(user_id), idle])
    if credential is None:
        return None
    user = _load_user_and_seat(user_id, session.get("tenant_id"))
    if user is None or not hmac.compare_digest(credential.decode(), _credential(user)):
        get_redis().delete(key)  # opened with a password that has changed since
        return None
    return user


def _load_user_and_seat(user_id: uuid.UUID, tenant_id: str | None) -> User | None:
    """The user, with their active seat in the selected tenant read by the same query (and the
    request's seat probe, if its view asked for one).

    The seat is kept for current_member() as long as the same tenant stays selected: one round
    trip instead of two on every authenticated request.
    """
    if tenant_id is None:
        return db.session.get(User, user_id)
    probe = g.get("seat_probe")
    statement = _USER_AND_SEAT if probe is None else _with_probe(probe)
    row = db.session.execute(statement, {"p_user": user_id, "p_tenant": uuid.UUID(tenant_id)}).first()
    if row is None:
        return None
    user, member, tenant_active = row[:3]
    g.selected_seat = (tenant_id, member if tenant_active else None)
    if probe is not None:
        g.seat_probe_result = row[3]
    return user


@cache
def _with_probe(probe) -> Select:
    """The session check's statement with a view's probe as a fourth column, built once per probe."""
    return _USER_AND_SEAT.add_columns(probe)


def probe_with_seat(probe):
    """A view decorator (above the guard): `probe`, a scalar subquery on the selected tenant (the
    bind parameter `p_tenant`), is read by the session check's own statement and left in
    `g.seat_probe_result` for the view, so a view that needs one value of its tenant costs no
    statement of its own. The view reads it only once the guard has let the request through."""
    def decorator(view):
        @wraps(view)
        def wrapped(*args, **kwargs):
            g.seat_probe = probe
            return view(*args, **kwargs)
        return wrapped
    return decorator


def _end_registered() -> None:
    """End the registered session this browser holds, if any (its user's other sessions stay)."""
    session_id, user_id = session.get("sid"), session.get("_user_id")
    if session_id:
        digest = _digest(session_id)
        pipe = get_redis().pipeline()
        pipe.delete(SESSION_KEY + digest)
        if user_id:
            pipe.srem(f"{USER_SESSIONS_KEY}{user_id}", digest)
        pipe.execute()


def end_session() -> None:
    """Log out: end this session in the registry and forget the tenant choice."""
    _end_registered()
    logout_user()
    session.clear()


def end_user_sessions(user_id: uuid.UUID) -> int:
    """End every live session of a user, on every device and of every kind; returns how many."""
    return run_script(get_redis(), _END_ALL, [f"{USER_SESSIONS_KEY}{user_id}"], [SESSION_KEY])


def session_type() -> str | None:
    """The kind of the current session, or None when nobody is logged in."""
    return session.get("session_type") if current_user.is_authenticated else None


def restricted_session() -> bool:
    """An impersonation or assistant session: it works in the workbench but changes only itself,
    never the member's settings or consent."""
    return session_type() not in (CONSOLE, None)


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
            loaded_for, member = g.get("selected_seat", (None, None))
            g.current_member = member if loaded_for == tenant_id else db.session.scalar(
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
    """Agent, supervisor or administrator of the selected tenant, in any session kind. Each request
    it lets through from the member's own (console) session is their heartbeat, committed on its own
    before the view runs; a restricted session's requests are not the member being there."""
    @wraps(view)
    def wrapped(*args, **kwargs):
        denied = _check(SESSION_TYPES, WORKBENCH_ROLES)
        if denied is not None:
            return denied
        if not restricted_session() and heartbeat(current_member(), utcnow()):
            db.session.commit()
        return view(*args, **kwargs)
    return wrapped
