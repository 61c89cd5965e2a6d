"""Studio fixtures: a console API client and applications in each state."""
import copy

import pytest

from studio.catalog import PUBLISH_PERMISSIONS

ORIGIN = {"Origin": "http://localhost"}

SAMPLE_DEFINITION = {
    "schema_version": 1,
    "name": "Service request",
    "description": "Log a customer's service request.",
    "page": {"title": "New request", "description": "Fill in the request.", "columns": 2,
             "submit_label": "Save"},
    "fields": [
        {"key": "title", "label": "Title", "type": "text", "required": True},
        {"key": "amount", "label": "Amount", "type": "number", "required": False},
        {"key": "priority", "label": "Priority", "type": "select", "required": False,
         "options": ["low", "high"]},
        {"key": "due", "label": "Due date", "type": "date", "required": False},
        {"key": "urgent", "label": "Urgent", "type": "checkbox", "required": False},
    ],
    "table_columns": ["title", "priority", "amount"],
    "workflow": {"trigger": "form.submitted", "rules": [
        {"name": "Big orders are high priority", "when": {"field": "amount", "operator": "gte", "value": 100},
         "then": {"field": "priority", "value": "high"}},
    ]},
}


def sample_definition(**changes) -> dict:
    """A copy of the sample definition with top-level changes."""
    return {**copy.deepcopy(SAMPLE_DEFINITION), **changes}


class ConsoleApi:
    """The administrator's browser speaking the console JSON API (same-origin POSTs)."""

    def __init__(self, client):
        self.client = client

    def get(self, path: str):
        return self.client.get(f"/api/extensions{path}")

    def post(self, path: str, body: dict):
        return self.client.post(f"/api/extensions{path}", json=body, headers=ORIGIN)

    def create(self, definition: dict | None = None) -> str:
        response = self.post("/", {"definition": definition or sample_definition()})
        assert response.status_code == 201, response.get_json()
        return response.get_json()["data"]["extension_id"]

    def simulate(self, app_id: str, version: int = 1, data: dict | None = None):
        return self.post(f"/{app_id}/simulate", {"version": version, "input": data or {"title": "Sample"}})

    def publish(self, app_id: str, version: int = 1, expected=None, **extra):
        return self.post(f"/{app_id}/publish", {"version": version, "expected_active_version": expected,
                                                "permissions": PUBLISH_PERMISSIONS, **extra})


@pytest.fixture
def api(admin_client) -> ConsoleApi:
    """The tenant administrator on the console API."""
    return ConsoleApi(admin_client)


@pytest.fixture
def draft_app(api) -> str:
    """An application with an unsimulated version 1."""
    return api.create()


@pytest.fixture
def live_app(api, draft_app) -> str:
    """An application whose version 1 is simulated and live."""
    assert api.simulate(draft_app).status_code == 200
    assert api.publish(draft_app).status_code == 200
    return draft_app
