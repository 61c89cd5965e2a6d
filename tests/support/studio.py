"""Studio through its console: the JSON API as the administrator's browser speaks it, and the sample
application definition most tests start from."""
import copy

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

# Every optional section, each valid with the sample definition's fields.
SECTIONS = {
    "charts": [{"key": "by_priority", "title": "By priority", "type": "bar", "group_by": "priority",
                "metric": "count"}],
    "code": {"language": "javascript", "source": "const total = input.amount;\nreturn {amount: total};"},
    "workbench": {"theme": "blue", "title": "Requests"},
    "intent": {"labels": ["refund", "delivery"]},
    "actions": [{"key": "notify", "title": "Notify the warehouse", "kind": "http", "fields": ["title", "amount"]}],
}


def sample_definition(**changes) -> dict:
    """A copy of the sample definition with top-level changes."""
    return {**copy.deepcopy(SAMPLE_DEFINITION), **changes}


class ExtensionsApi:
    """The administrator's browser speaking a JSON API under /api/extensions (same-origin POSTs)."""

    def __init__(self, client):
        self.client = client

    def get(self, path: str):
        return self.client.get(f"/api/extensions{path}")

    def post(self, path: str, body: dict):
        return self.client.post(f"/api/extensions{path}", json=body, headers=ORIGIN)


class ConsoleApi(ExtensionsApi):
    """The Studio console API: applications, versions, records."""

    def create(self, definition: dict | None = None) -> str:
        response = self.post("/", {"definition": definition or sample_definition()})
        assert response.status_code == 201, response.get_json()
        return response.get_json()["data"]["extension_id"]

    def simulate(self, app_id: str, version: int = 1, data: dict | None = None):
        return self.post(f"/{app_id}/simulate", {"version": version, "input": data or {"title": "Sample"}})

    def publish(self, app_id: str, version: int = 1, expected=None, **extra):
        return self.post(f"/{app_id}/publish", {"version": version, "expected_active_version": expected,
                                                "permissions": PUBLISH_PERMISSIONS, **extra})
