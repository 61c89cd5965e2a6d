"""Automation rule data the consoles show before anything is built (document 2)."""

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
