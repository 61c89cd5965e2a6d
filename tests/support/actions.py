"""Studio record actions through the console API: an application with an http and a campaign
action, records saved, bindings made, runs started and sent, and what they left behind."""
import json
import uuid

from rq import Queue, SimpleWorker
from sqlalchemy import func, select

from core.audit import AuditEntry
from core.db import db
from core.queue_names import WEBHOOKS
from desk.models import MarketingDraft, OfficialAccount
from studio.models import StudioActionRun
from tests.support.studio import ORIGIN, sample_definition

FIELDS = [
    {"key": "title", "label": "Title", "type": "text", "required": True},
    {"key": "amount", "label": "Amount", "type": "number", "required": False},
    {"key": "priority", "label": "Priority", "type": "select", "required": False, "options": ["low", "high"]},
    {"key": "notes", "label": "Notes", "type": "textarea", "required": False},
    {"key": "tag", "label": "Customer tag", "type": "text", "required": False},
    {"key": "urgent", "label": "Urgent", "type": "checkbox", "required": False},
]
HTTP_ACTION = {"key": "crm", "title": "Send to CRM", "kind": "http", "fields": ["notes", "title", "amount", "urgent"]}
CAMPAIGN_ACTION = {"key": "promo", "title": "Promotion draft", "kind": "campaign", "name_field": "title",
                   "content_field": "notes", "audience_tag_field": "tag"}
TOKEN = "s3cr3t-Bearer.token_~+/=="


def action_definition(**changes) -> dict:
    """The sample application with text fields for a campaign and both kinds of action."""
    return sample_definition(fields=FIELDS, actions=[HTTP_ACTION, CAMPAIGN_ACTION], **changes)


def publish_new_version(api, app_id: str, definition: dict, version: int) -> None:
    """Add `definition` as `version`, simulate it and make it live."""
    assert api.post(f"/{app_id}/versions", {"definition": definition}).status_code == 201
    assert api.simulate(app_id, version).status_code == 200
    assert api.publish(app_id, version, expected=version - 1).status_code == 200


def save(api, app_id: str, data: dict, version: int = 1) -> str:
    """A saved record's id (its body in UTF-8 as written, not \\u-escaped, so long texts fit)."""
    body = {"version": version, "input": data, "idempotency_key": str(uuid.uuid4())}
    response = api.client.post(f"/api/extensions/{app_id}/records", headers=ORIGIN, content_type="application/json",
                               data=json.dumps(body, ensure_ascii=False).encode())
    assert response.status_code == 200, response.get_json()
    return response.get_json()["data"]["record_id"]


def bind(api, app_id: str, endpoint: str, version: int = 1, key: str = "crm", **extra):
    """POST a confirmed binding of the action to `endpoint`."""
    return api.post(f"/{app_id}/actions", {"operation": "bind", "version": version, "action_key": key,
                                           "endpoint": endpoint, "confirm": True, **extra})


def bound(api, app_id: str, endpoint: str, **extra) -> str:
    """The id of a new binding."""
    response = bind(api, app_id, endpoint, **extra)
    assert response.status_code == 201, response.get_json()
    return response.get_json()["data"]["binding_id"]


def run_action(api, app_id: str, record_id: str, binding_id: str | None = None, key: str = "crm", version: int = 1,
               **extra):
    """POST a confirmed run of the action on a record."""
    body = {"operation": "run", "version": version, "record_id": record_id, "action_key": key, "confirm": True, **extra}
    if binding_id is not None:
        body["binding_id"] = binding_id
    return api.post(f"/{app_id}/actions", body)


def send_actions(redis_conn) -> None:
    """Run a real worker over the webhooks queue (where action runs go) until it is empty."""
    SimpleWorker([Queue(WEBHOOKS, connection=redis_conn)], connection=redis_conn).work(burst=True)


def the_run(run_id: str) -> StudioActionRun:
    """The action run as the database holds it now."""
    db.session.expire_all()
    return db.session.get(StudioActionRun, uuid.UUID(run_id))


def run_count() -> int:
    """How many action runs are stored."""
    db.session.rollback()
    return db.session.scalar(select(func.count()).select_from(StudioActionRun))


def audit_of(action: str) -> list[AuditEntry]:
    """The audit entries of `action`, oldest first."""
    db.session.rollback()
    return list(db.session.scalars(select(AuditEntry).where(AuditEntry.action == action)
                                   .order_by(AuditEntry.created_at)))


def professional(tenant, kind: str | None = "independent") -> None:
    """Make the tenant professional, with an official account of `kind` (none: without one)."""
    tenant.tier = "professional"
    if kind:
        db.session.add(OfficialAccount(tenant_id=tenant.id, name=f"{kind} account", kind=kind))
    db.session.commit()


def drafts() -> list[MarketingDraft]:
    """The marketing drafts stored."""
    db.session.rollback()
    return list(db.session.scalars(select(MarketingDraft)))
