"""Web plumbing shared by every page: CSRF scope, the session cookie, security headers, HTMX (the
one way to tell an htmx request and to redirect one), template helpers, health."""
import logging
import secrets

from flask import Blueprint, Flask, current_app, g, has_request_context, redirect, request
from sqlalchemy import text
from flask_htmx import HTMX
from flask_htmx.responses import HTMXResponseClientRedirect
from flask.sessions import SecureCookieSessionInterface
from flask_wtf.csrf import CSRFProtect
import redis
from redis.exceptions import RedisError
from sqlalchemy.exc import DBAPIError
from werkzeug.middleware.proxy_fix import ProxyFix

from core.api import ApiError, answer_unexpected, error_response, html_error, wants_json
from core.db import db, is_store_outage, wrote_in_context
from core.metrics import UNAVAILABLE
from core.redis import redis_url

csrf = CSRFProtect()
htmx = HTMX()  # truthy when htmx asked (HX-Request: true): answer with the partial alone
# htmx runs from /static with its indicator CSS in app.css (includeIndicatorStyles: false), so no
# inline script or style is needed anywhere. Framing is refused until the workbench embedding rules
# say otherwise; a view may set its own header to relax it for one page.
POLICY = ("default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
          "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "form-action 'self'",
          "frame-ancestors 'none'")
CONTENT_SECURITY_POLICY = "; ".join(POLICY)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
}
bp = Blueprint("core", __name__)
log = logging.getLogger(__name__)
OUTAGE_RETRY_SECONDS = 5  # what a 503 for a store outage tells clients to wait
_READ_AGAIN = "db_read_again"  # flask.g flag: this request already ran again after a dead connection
PROBE_SECONDS = 2  # the readiness probe's bound on a silent Redis


@bp.get("/healthz")
def healthz():
    """Liveness: the web process answers (no database or Redis round trip)."""
    return {"status": "ok"}


@bp.get("/readyz")
def readyz():
    """Readiness, for a load balancer: PostgreSQL and Redis each answer a round trip, else 503
    service_unavailable naming the ones that did not (detail), with Retry-After."""
    failing = []
    try:
        db.session.execute(text("SELECT 1"))
    except DBAPIError:
        failing.append("database")
    finally:
        db.session.remove()
    probe = redis.Redis.from_url(redis_url(), socket_timeout=PROBE_SECONDS, socket_connect_timeout=PROBE_SECONDS)
    try:
        probe.ping()
    except RedisError:
        failing.append("redis")
    finally:
        probe.close()
    if failing:
        return error_response(ApiError("service_unavailable", 503, detail=",".join(failing),
                                       headers={"Retry-After": str(OUTAGE_RETRY_SECONDS)}))
    return {"status": "ready"}


def _outage_answer(error: Exception, code: str):
    """`503 code` with Retry-After: the envelope for JSON, the friendly page otherwise. The request's
    user is forgotten first, so the page itself reaches neither store again."""
    log.error("a store is out of reach (%s) on %s", type(error).__name__,
              request.url_rule.rule if request.url_rule is not None else "(no route)")
    UNAVAILABLE.labels("redis" if isinstance(error, RedisError) else "database").inc()
    db.session.remove()  # its connection may be gone: a disconnect has dropped the pool
    g._login_user = current_app.login_manager.anonymous_user()
    headers = {"Retry-After": str(OUTAGE_RETRY_SECONDS)}
    if wants_json():
        return error_response(ApiError(code, 503, headers=headers))
    return html_error(503, code, headers)


def _read_again(error: Exception):
    """A GET or HEAD that met a dead database connection before any transaction began (the server
    restarted since the connection was pooled) runs once more: SQLAlchemy has dropped the whole
    pool, so it runs on a new connection, as pool pre-ping would have made it, without pre-ping's
    round trip on every request. The answer, or None when the request may not run again (it may
    have written, it ran again already, or the outage is another)."""
    if not (isinstance(error, DBAPIError) and error.connection_invalidated) or g.get(_READ_AGAIN) \
            or request.method not in ("GET", "HEAD") or wrote_in_context():
        return None
    g.setdefault(_READ_AGAIN, True)
    db.session.remove()
    try:
        answer = current_app.preprocess_request()
        return current_app.dispatch_request() if answer is None else answer
    except Exception as again:  # answered as it would have been the first time
        return current_app.handle_user_exception(again)


def answer_unreachable_stores(api: Blueprint | Flask, code: str) -> None:
    """Under `api` (a blueprint, or the app for everything else), a store outage answers `503 code`
    (the spec's own code for that API) with Retry-After; any other database error is what it is, an
    unexpected 500."""
    def unavailable(error: Exception):
        if not is_store_outage(error):
            return answer_unexpected(error)
        answer = _read_again(error)
        return _outage_answer(error, code) if answer is None else answer

    api.register_error_handler(RedisError, unavailable)
    api.register_error_handler(DBAPIError, unavailable)


class SessionInterface(SecureCookieSessionInterface):
    """Flask's signed cookie, Secure whenever the request came over HTTPS (directly or, with
    TRUSTED_PROXIES, as the proxy reports it), or always with SESSION_COOKIE_SECURE. The CSRF token
    lives in this cookie, so it is Secure too."""

    def get_cookie_secure(self, app: Flask) -> bool:
        """Secure by configuration or by the request's own scheme."""
        return super().get_cookie_secure(app) or (has_request_context() and request.is_secure)


def close_when_off(api: Blueprint, switch: str, code: str) -> None:
    """While the platform switch `switch` is off, every route of `api` (pages or JSON) answers
    `503 code`, before anything else the blueprint checks."""
    @api.before_request
    def switch_is_on():
        if not current_app.config[switch]:
            raise ApiError(code, 503)


def csp_nonce() -> str:
    """This answer's nonce for the `<style>` elements a page's own script adds (CodeMirror's
    themes): the page's policy then allows styles with it, and only on pages that asked."""
    if "csp_nonce" not in g:
        g.csp_nonce = secrets.token_urlsafe(18)
    return g.csp_nonce


def redirect_to(url: str):
    """Go to `url`: a full page load for htmx (HX-Redirect), an HTTP redirect otherwise."""
    return HTMXResponseClientRedirect(url) if htmx else redirect(url)


def init_web(app: Flask) -> None:
    """CSRF on every cookie-authenticated form outside /api/; the session cookie; security headers
    and Vary on HX-Request on every answer; filters."""
    app.config["WTF_CSRF_CHECK_DEFAULT"] = False
    csrf.init_app(app)
    htmx.init_app(app)

    @app.before_request
    def protect_cookie_forms():
        # JSON APIs authenticate by same-origin Origin (console) or bearer token / HMAC.
        if not request.path.startswith("/api/"):
            csrf.protect()

    @app.after_request
    def vary_on_htmx(response):
        response.vary.add("HX-Request")
        return response

    @app.after_request
    def never_stored(response):
        # Pages, partials and JSON carry customer data or one-time secrets: no browser or proxy
        # keeps them. Static files, and answers that say otherwise (the client catalog), excepted.
        if (request.endpoint != "static" or response.status_code >= 400) and "Cache-Control" not in response.headers:
            response.headers["Cache-Control"] = "no-store"
        return response

    @app.after_request
    def security_headers(response):
        if "csp_nonce" in g:  # the page's code editor adds its styles with this nonce
            response.headers.setdefault("Content-Security-Policy", "; ".join(
                f"style-src 'self' 'nonce-{g.csp_nonce}'" if part == "style-src 'self'" else part for part in POLICY))
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    app.jinja_env.globals["csp_nonce"] = csp_nonce

    app.session_interface = SessionInterface()
    answer_unreachable_stores(app, "service_unavailable")  # pages, the inbound endpoint, /readyz

    hops = app.config["TRUSTED_PROXIES"]
    if hops:
        # Behind TLS-terminating proxies the Origin check must see the public scheme and host.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)
    app.register_blueprint(bp)
