"""Web plumbing shared by every page: CSRF scope, HTMX caching header, template helpers, health."""
import logging

from flask import Blueprint, Flask, request
from flask_wtf.csrf import CSRFProtect
from redis.exceptions import RedisError
from sqlalchemy.exc import OperationalError
from werkzeug.middleware.proxy_fix import ProxyFix

from core.api import ApiError, error_response
from core.clock import format_beijing
from core.db import db

csrf = CSRFProtect()
bp = Blueprint("core", __name__)
log = logging.getLogger(__name__)


@bp.get("/healthz")
def healthz():
    """Liveness: the web process answers (no database or Redis round trip)."""
    return {"status": "ok"}


def answer_unreachable_stores(api: Blueprint, code: str) -> None:
    """Under `api`, a database or Redis connection failure answers `503 code` in the envelope."""
    def unavailable(error: Exception):
        log.error("%s: a store is out of reach (%s)", api.name, type(error).__name__)
        db.session.rollback()
        return error_response(ApiError(code, 503))

    api.register_error_handler(RedisError, unavailable)
    api.register_error_handler(OperationalError, unavailable)


def format_number(value) -> str:
    """A number for people: whole numbers without decimals, others with at most two."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def init_web(app: Flask) -> None:
    """CSRF on every cookie-authenticated form outside /api/; Vary on HX-Request; filters."""
    app.config["WTF_CSRF_CHECK_DEFAULT"] = False
    csrf.init_app(app)

    @app.before_request
    def protect_cookie_forms():
        # JSON APIs authenticate by same-origin Origin (console) or bearer token / HMAC.
        if not request.path.startswith("/api/"):
            csrf.protect()

    @app.after_request
    def vary_on_htmx(response):
        response.vary.add("HX-Request")
        return response

    hops = app.config["TRUSTED_PROXIES"]
    if hops:
        # Behind TLS-terminating proxies the Origin check must see the public scheme and host.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=hops, x_proto=hops, x_host=hops)
    app.jinja_env.filters["beijing"] = format_beijing
    app.jinja_env.filters["number"] = format_number
    app.register_blueprint(bp)
