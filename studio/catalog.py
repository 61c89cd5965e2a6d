"""What the console shows before anything is built: catalog, starter, limits, examples."""
from flask import current_app

from studio.definition import CAPABILITY_VERSION, CATALOG, LIMITS, PUBLISH_PERMISSIONS, STARTER_DEFINITION

# A weekly-rotation rule draft (document 2's rule definition) with placeholder assignees.
AUTOMATION_PREVIEW_EXAMPLE = {
    "schema_version": 1,
    "name": "Weekday rotation",
    "timezone": "Asia/Shanghai",
    "trigger": "weekly",
    "slots": [
        {"weekdays": [1, 3, 5], "time": "09:00", "assignee_ref": "Agent A"},
        {"weekdays": [2, 4], "time": "09:00", "assignee_ref": "Agent B"},
    ],
    "assignee_ref": "",
    "keywords": [],
    "statuses": ["open", "pending"],
    "overwrite_assigned": False,
    "max_actions": 20,
}
AUDIENCE = {"role": "admin", "session": "console",
            "note": "Tenant administrators in a real console session with a tenant selected."}


def ai_configured() -> bool:
    """A model endpoint is configured (not a promise that generation will succeed)."""
    cfg = current_app.config
    return bool(cfg.get("MODEL_BASE_URL") and cfg.get("MODEL_NAME"))


def console_overview() -> dict:
    """Everything GET /api/extensions returns besides the application list."""
    return {"ai_configured": ai_configured(),
            "capabilities": {"capability_version": CAPABILITY_VERSION, "capabilities": CATALOG},
            "automation_preview_example": AUTOMATION_PREVIEW_EXAMPLE,
            "permissions": PUBLISH_PERMISSIONS, "starter_definition": STARTER_DEFINITION,
            "limits": LIMITS, "audience": AUDIENCE}
