"""What the console shows before anything is built: limits, permissions, the starter definition."""
from flask import current_app
from flask_babel import LazyString, force_locale
from flask_babel import lazy_gettext as _l

from core.capabilities import CAPABILITY_VERSION, CATALOG
from studio import draft_kinds

PUBLISH_PERMISSIONS = ["extension.records.read", "extension.records.create", "extension.records.transform"]

LIMITS = {
    "apps_per_tenant": 20,
    "versions_per_app": 100,
    "records_per_app": 1000,
    "fields": 12,
    "rules": 8,
    "charts": 3,
    "actions": 2,
    "select_options": 12,
    "table_columns": 12,
    "definition_bytes": 24_000,
    "body_bytes": 32_000,
    "name_chars": 60,
    "description_chars": 400,
    "page_title_chars": 80,
    "submit_label_chars": 30,
    "field_label_chars": 60,
    "option_chars": 60,
    "rule_name_chars": 80,
    "chart_title_chars": 80,
    "action_title_chars": 80,
    "workbench_title_chars": 60,
    "text_value_chars": 200,
    "textarea_value_chars": 2_000,
    "number_abs_max": 1_000_000_000_000,
    "prompt_min_chars": 4,
    "prompt_max_chars": 3_000,
    "generations_per_tenant_per_minute": 1,
    "generations_per_tenant_per_day": 20,
    "generations_platform_per_day": 200,
    "generations_platform_in_progress": 3,
    "list_apps": 20,
    "list_versions": 100,
    "list_records": 100,
    "knowledge_documents": 3,
    "knowledge_excerpt_chars": 1_200,
    "knowledge_page_size": 20,
    "intent_labels": 10,
    "intent_label_chars": 30,
    "intent_messages": 20,
    "intent_total_chars": 6_000,
    "intent_message_chars": 1_000,
    "app_metadata_bytes": 8_192,
    "script_source_chars": 8_000,
    "script_execution_ms": 500,
    "script_task_ms": 2_000,
    "script_heap_bytes": 16 * 1024 * 1024,
    "script_input_bytes": 32 * 1024,
    "script_output_bytes": 32 * 1024,
    "script_executions_per_tenant_per_minute": 30,
    "action_payload_bytes": 24 * 1024,
    "action_timeout_seconds": 10,
    "action_concurrency_platform": 8,
    "action_attempts_per_tenant_per_minute": 20,
}


def localized(value):
    """A copy of `value` (a definition, a template or a part of one) with each marked text in the
    current language, as plain strings that validate, store and serialize like any other."""
    if isinstance(value, dict):
        return {key: localized(item) for key, item in value.items()}
    if isinstance(value, list):
        return [localized(item) for item in value]
    return str(value) if isinstance(value, LazyString) else value


def english(value):
    """`localized` in English, the language of the JSON API's examples, whatever the request's."""
    with force_locale("en"):
        return localized(value)


# Its names, labels and rule name are marked: the console creates the starter in the page's
# language; the JSON API's example (STARTER_DEFINITION) is the English original.
_STARTER = {
    "schema_version": 1,
    "name": _l("Service request"),
    "description": _l("Record a customer's service request and flag urgent complaints."),
    "page": {"title": _l("New service request"), "description": _l("Describe what the customer needs."),
             "columns": 2, "submit_label": _l("Save request")},
    "fields": [
        {"key": "subject", "label": _l("Subject"), "type": "text", "required": True},
        {"key": "category", "label": _l("Category"), "type": "select", "required": True,
         "options": ["question", "repair", "complaint"]},
        {"key": "priority", "label": _l("Priority"), "type": "select", "required": False,
         "options": ["normal", "high"]},
        {"key": "due_date", "label": _l("Due date"), "type": "date", "required": False},
        {"key": "details", "label": _l("Details"), "type": "textarea", "required": False},
    ],
    "table_columns": ["subject", "category", "priority", "due_date"],
    "workflow": {"trigger": "form.submitted", "rules": [
        {"name": _l("Complaints are high priority"),
         "when": {"field": "category", "operator": "equals", "value": "complaint"},
         "then": {"field": "priority", "value": "high"}},
    ]},
}
STARTER_DEFINITION = english(_STARTER)


def starter_definition() -> dict:
    """The starter definition in the page's language."""
    return localized(_STARTER)


AUDIENCE = {"role": "admin", "session": "console",
            "note": "Tenant administrators in a real console session with a tenant selected."}


def ai_configured() -> bool:
    """A model endpoint is configured (not a promise that generation will succeed)."""
    cfg = current_app.config
    return bool(cfg.get("MODEL_BASE_URL") and cfg.get("MODEL_NAME"))


def console_overview() -> dict:
    """Everything GET /api/extensions returns besides the application list (each registered draft
    kind's example as `<kind>_example`: `automation_preview_example` from the rules)."""
    return {"ai_configured": ai_configured(),
            "capabilities": {"capability_version": CAPABILITY_VERSION, "capabilities": CATALOG},
            **{f"{kind.name}_example": kind.example for kind in draft_kinds.registered()},
            "permissions": PUBLISH_PERMISSIONS, "starter_definition": STARTER_DEFINITION,
            "limits": LIMITS, "audience": AUDIENCE}
