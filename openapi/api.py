"""Open API v1 under /api/v1/open: bearer tokens, scopes, rate limit, customers and records."""
import logging
from functools import cache, wraps
from pathlib import Path

import yaml
from flask import Blueprint, current_app, g, jsonify, request
from redis.exceptions import RedisError

from core.api import ApiError, ok, parse_uuid
from core.clock import utcnow
from core.db import db
from core.guards import SAFE_METHODS, parse_json_object, read_limited_body
from core.limits import hit_fixed_window
from core.redis import get_redis
from core.web import answer_unreachable_stores, close_when_off
from openapi import apps, customers, records
from openapi.keyset import parse_cursor
from openapi.webhooks import enqueue_delivery

bp = Blueprint("open_api", __name__, url_prefix="/api/v1/open")
answer_unreachable_stores(bp, "open_platform_unavailable")
close_when_off(bp, "OPEN_PLATFORM_ENABLED", "open_platform_disabled")
log = logging.getLogger(__name__)

BODY_LIMIT = 20_000
DOCUMENT = Path(__file__).with_name("openapi.yaml")
PUBLIC_ENDPOINTS = {"open_api.openapi_json"}


def _bearer_token() -> str:
    """The token of `Authorization: Bearer <token>` (401 when absent or malformed)."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip() or " " in token.strip():
        raise ApiError("unauthorized", 401)
    return token.strip()


@bp.before_request
def authenticate():
    """Token, then the per-application rate limit (failed requests count too); the switch first."""
    if request.endpoint in PUBLIC_ENDPOINTS:
        return
    g.open_app = apps.authenticate(_bearer_token(), lock=request.method not in SAFE_METHODS, now=utcnow())
    limit = current_app.config["OPEN_API_RATE_LIMIT"]
    g.rate = hit_fixed_window(get_redis(), f"open:app:{g.open_app.id}", limit, 60)
    if not g.rate.allowed:
        raise ApiError("rate_limited", 429, headers={"Retry-After": str(g.rate.reset_after)})


@bp.after_request
def rate_headers(response):
    """Every authenticated answer says the limit and what is left of it this minute."""
    if "rate" in g:
        response.headers["X-RateLimit-Limit"] = str(current_app.config["OPEN_API_RATE_LIMIT"])
        response.headers["X-RateLimit-Remaining"] = str(g.rate.remaining)
    return response


def scope_required(*scopes: str):
    """The application must hold at least one of `scopes` (403 insufficient_scope)."""
    def decorator(view):
        @wraps(view)
        def wrapped(*args, **kwargs):
            if not set(scopes) & set(g.open_app.scopes):
                raise ApiError("insufficient_scope", 403)
            return view(*args, **kwargs)
        return wrapped
    return decorator


@bp.get("/customers")
@scope_required(*apps.CUSTOMER_SCOPES)
def list_customers():
    """A page of the tenant's customers, cut to the application's scopes."""
    return ok(customers.list_customers(g.open_app, parse_cursor(request.args.get("after"))))


# The id is parsed in the view, not by the router: a malformed id is then a 404 that counts
# against the rate limit and carries its headers, like every other authenticated failure.
@bp.get("/customers/<customer_id>")
@scope_required(*apps.CUSTOMER_SCOPES)
def get_customer(customer_id: str):
    """One customer of the tenant, cut to the application's scopes."""
    return ok(customers.get_customer(g.open_app, parse_uuid(customer_id, "not_found", 404)))


@bp.get("/records")
@scope_required("app.records.read")
def list_records():
    """A page of this application's records."""
    return ok(records.list_records(g.open_app, parse_cursor(request.args.get("after"))))


def _record_body() -> object:
    """`{data}` from a JSON body of at most 20,000 bytes (413), else 400 invalid_record."""
    raw = read_limited_body(BODY_LIMIT, malformed="invalid_record")
    if request.mimetype != "application/json":
        raise ApiError("invalid_record", 400)
    body = parse_json_object(raw, "invalid_record")
    if set(body) != {"data"}:
        raise ApiError("invalid_record", 400)
    return body["data"]


@bp.post("/records")
@scope_required("app.records.write")
def create_record():
    """Create a record once per idempotency key; the event (with a URL) is queued after commit."""
    key = parse_uuid(request.headers.get("Idempotency-Key", "").strip(), "idempotency_key_required")
    created = records.create_record(g.open_app, key, _record_body())
    answer = records.record_json(created.record)
    db.session.commit()
    if created.event_id is not None:
        try:
            enqueue_delivery(created.event_id)
        except RedisError:  # the record is saved: the tick's sweeper enqueues the event later
            log.error("could not enqueue webhook event %s; the sweeper will", created.event_id)
    return ok(answer, 200 if created.replayed else 201)


@cache
def openapi_document() -> dict:
    """openapi/openapi.yaml, parsed once."""
    return yaml.safe_load(DOCUMENT.read_text())


@bp.get("/openapi.json")
def openapi_json():
    """The OpenAPI 3.1 description of this API (public: it holds no tenant data)."""
    return jsonify(openapi_document())
