"""External applications: creation with fixed scopes, tokens, revocation and authentication."""
import secrets
import uuid
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update

from core import audit
from core.api import ApiError
from core.clock import utcnow
from core.crypto import encrypt, sha256_hex
from core.db import db, tenant_row
from core.once import take_tenant_slot
from core.egress import address_to_save
from desk.models import Tenant
from openapi.models import OpenApp, OpenTenantUsage, WebhookEvent

SCOPES = ("customers.basic.read", "customers.contact.read", "customers.notes.read",
          "app.records.read", "app.records.write")
CUSTOMER_SCOPES = SCOPES[:3]
# Scopes that hand sensitive data to an outside server: each needs its own confirmation.
CONFIRMED_SCOPES = ("customers.contact.read", "customers.notes.read")
APPS_PER_TENANT = 100
TOKEN_DAYS = 90
NAME_CHARS = 80
TOKEN_PREFIX = "csk_"


@dataclass(frozen=True)
class Credentials:
    """What the administrator sees once: the token and, with a URL, the signing secret."""

    app: OpenApp
    token: str
    signing_secret: str | None


def _clean_name(name: object) -> str:
    """A non-empty application name of at most 80 characters."""
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > NAME_CHARS:
        raise ApiError("invalid_name", 400)
    return name.strip()


def clean_scopes(scopes: object) -> list[str]:
    """Known, distinct scopes in catalog order; at least one."""
    if not isinstance(scopes, (list, tuple)) or not scopes or len(set(scopes)) != len(scopes) \
            or any(scope not in SCOPES for scope in scopes):
        raise ApiError("invalid_scopes", 400)
    return [scope for scope in SCOPES if scope in scopes]


def _clean_url(url: object, resolve: bool) -> str | None:
    """An optional event URL that egress accepts now, its host resolved unless `resolve` is off (the
    operator's CLI); its DNS is checked again at each delivery."""
    if url is None or url == "":
        return None
    address_to_save(url, "invalid_webhook_url", resolve=resolve)
    return url


def _unconfirmed(scopes: object, processing_confirmed: bool, confirmed_scopes: Collection[str]) -> list[str]:
    """What the request lacks before anything else is looked at: `processing` unless any scope at all
    comes with the confirmation that an external server will process the data, then each requested
    scope of CONFIRMED_SCOPES that lacks its own confirmation, in catalog order. Only `True` confirms."""
    requested = scopes if isinstance(scopes, (list, tuple)) else ()
    missing = ["processing"] if requested and processing_confirmed is not True else []
    return missing + [scope for scope in CONFIRMED_SCOPES if scope in requested and scope not in confirmed_scopes]


def create_app(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, name: object, scopes: object,
               webhook_url: object = None, *, processing_confirmed: bool, confirmed_scopes: Collection[str],
               resolve_webhook: bool = True) -> Credentials:
    """Create an application; the token (and secret, with a URL) exist in plain text only here.

    Nothing is checked or taken before the confirmations: unless the processing by an external server
    and each sensitive scope requested (CONFIRMED_SCOPES) are confirmed, 400 `confirmation_required`
    with `extra["unconfirmed"]` naming every one missing (`_unconfirmed`). Every caller says what was
    confirmed: the console what the administrator ticked, the operator's CLI its command itself
    (there is no default). The URL's host is resolved and checked now unless `resolve_webhook` is
    off (the operator's CLI, which may name a receiver that is not up yet)."""
    missing = _unconfirmed(scopes, processing_confirmed, confirmed_scopes)
    if missing:
        raise ApiError("confirmation_required", 400, extra={"unconfirmed": missing})
    name, scopes, url = _clean_name(name), clean_scopes(scopes), _clean_url(webhook_url, resolve_webhook)
    take_tenant_slot(OpenTenantUsage, tenant_id, APPS_PER_TENANT, "app_limit")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    secret = "whsec_" + secrets.token_hex(32) if url else None
    now = utcnow()
    app = OpenApp(tenant_id=tenant_id, name=name, scopes=scopes, webhook_url=url,
                  token_hash=sha256_hex(token), signing_secret_encrypted=encrypt(secret) if secret else None,
                  created_by=actor_id, created_at=now, expires_at=now + timedelta(days=TOKEN_DAYS))
    db.session.add(app)
    db.session.flush()
    audit.record(tenant_id, actor_id, "open_app.created", f"open_app:{app.id}",
                 {"scopes": scopes, "webhook": url is not None})
    return Credentials(app=app, token=token, signing_secret=secret)


def list_apps(tenant_id: uuid.UUID) -> list[OpenApp]:
    """The tenant's applications, newest first (at most 100 exist)."""
    return list(db.session.scalars(select(OpenApp).where(OpenApp.tenant_id == tenant_id)
                                   .order_by(OpenApp.created_at.desc())))


def get_app(tenant_id: uuid.UUID, app_id: uuid.UUID, lock: bool = False) -> OpenApp:
    """One application of the tenant (404 otherwise); `lock` takes its row lock."""
    return tenant_row(OpenApp, tenant_id, app_id, lock=lock)


def revoke(tenant_id: uuid.UUID, actor_id: uuid.UUID | None, app_id: uuid.UUID) -> OpenApp:
    """Revoke after the application's in-flight writes (its row lock); cancel undelivered events."""
    found = get_app(tenant_id, app_id, lock=True)
    if found.revoked_at is None:
        found.revoked_at = utcnow()
        cancelled = db.session.execute(update(WebhookEvent).where(
            WebhookEvent.app_id == found.id, WebhookEvent.status == "pending")
            .values(status="cancelled", finished_at=found.revoked_at)).rowcount
        audit.record(tenant_id, actor_id, "open_app.revoked", f"open_app:{found.id}",
                     {"cancelled_events": cancelled})
    return found


def authenticate(token: str, lock: bool, now: datetime) -> OpenApp:
    """The active application of a bearer token in an active tenant, else 401 unauthorized.

    `lock` takes the application's row lock (FOR UPDATE) so that writes and revocation of one
    application run one after another; reads take a shared lock, so revocation waits for them too.
    """
    query = select(OpenApp).join(Tenant, Tenant.id == OpenApp.tenant_id).where(
        OpenApp.token_hash == sha256_hex(token), Tenant.active.is_(True))
    found = db.session.scalar(query.with_for_update(read=not lock, of=OpenApp))
    if found is None or found.status(now) != "active":
        raise ApiError("unauthorized", 401)
    return found
