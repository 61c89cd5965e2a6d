"""Open API fixtures: applications created through the service, clients with bearer tokens."""
import json

import pytest

from core.db import db
from openapi.apps import SCOPES, create_app

ALL_SCOPES = list(SCOPES)


class OpenClient:
    """An external server calling the Open API with its bearer token."""

    def __init__(self, client, token: str):
        self.client = client
        self.token = token

    def headers(self, extra: dict | None = None) -> dict:
        return {"Authorization": f"Bearer {self.token}", **(extra or {})}

    def get(self, path: str, **kwargs):
        return self.client.get(f"/api/v1/open{path}", headers=self.headers(), **kwargs)

    def post_record(self, data, key: str | None, raw: bytes | None = None):
        headers = self.headers({"Idempotency-Key": key} if key is not None else {})
        body = raw if raw is not None else json.dumps({"data": data}).encode()
        return self.client.post("/api/v1/open/records", data=body, headers=headers,
                                content_type="application/json")


@pytest.fixture
def make_open_app(app, tenant, admin):
    """Create an application (scopes, optional URL) and return (model, client, credentials)."""
    def make(scopes=ALL_SCOPES, webhook_url=None, tenant_id=None, name="Partner CRM"):
        made = create_app(tenant_id or tenant.id, admin.user_id, name, scopes, webhook_url)
        db.session.commit()
        return made.app, OpenClient(app.test_client(), made.token), made
    return make


@pytest.fixture
def open_client(make_open_app) -> OpenClient:
    """An application holding every scope."""
    return make_open_app()[1]
