"""Automation rule data the consoles show before anything is built (document 2), and its limits."""

# Document 2's limits, plus the values it leaves to us (docs/decisions.md, "Rule definition validator").
LIMITS = {
    "rules_per_tenant": 20,
    "revisions_per_rule": 100,
    "slots": 7,
    "keywords": 10,
    "keyword_chars": 40,
    "semantic_labels": 10,
    "semantic_label_chars": 30,
    "min_confidence_low": 0.8,
    "min_confidence_high": 1,
    "max_actions": 100,
    "preview_samples": 100,
    "semantic_preview_samples": 10,
    "keyword_text_chars": 4_000,
    "name_chars": 80,
    "assignee_ref_chars": 120,
    "sample_text_chars": 4_000,
    "body_bytes": 32_000,
    "versions_listed": 20,
}

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
