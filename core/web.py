"""Web plumbing shared by every page: CSRF scope, HTMX caching header, template helpers, health."""
from flask import Blueprint, Flask, request
from flask_wtf.csrf import CSRFProtect
from werkzeug.middleware.proxy_fix import ProxyFix

from core.clock import format_beijing

csrf = CSRFProtect()
bp = Blueprint("core", __name__)


@bp.get("/healthz")
def healthz():
    """Liveness: the web process answers (no database or Redis round trip)."""
    return {"status": "ok"}


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
