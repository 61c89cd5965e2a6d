"""Studio application definitions for the validator's and the schema's tests: one using every
field type, and one using every optional section too."""
FIELDS = [
    {"key": "title", "label": "Title", "type": "text", "required": True},
    {"key": "notes", "label": "Notes", "type": "textarea", "required": False},
    {"key": "amount", "label": "Amount", "type": "number", "required": False},
    {"key": "due", "label": "Due date", "type": "date", "required": False},
    {"key": "priority", "label": "Priority", "type": "select", "required": False, "options": ["low", "high"]},
    {"key": "urgent", "label": "Urgent", "type": "checkbox", "required": False},
]
BASE = {
    "schema_version": 1,
    "name": "Requests",
    "description": "Customer requests.",
    "page": {"title": "New request", "description": "Fill in the request.", "columns": 2, "submit_label": "Save"},
    "fields": FIELDS,
    "table_columns": ["title", "priority", "amount"],
    "workflow": {"trigger": "form.submitted", "rules": [
        {"name": "Big is high", "when": {"field": "amount", "operator": "gte", "value": 100},
         "then": {"field": "priority", "value": "high"}},
    ]},
}
FULL = {
    **BASE,
    "charts": [
        {"key": "by_priority", "title": "By priority", "type": "bar", "group_by": "priority", "metric": "count"},
        {"key": "amount_per_day", "title": "Amount per day", "type": "line", "group_by": "due",
         "metric": "average", "value_field": "amount"},
    ],
    "code": {"language": "javascript", "source": "return { notes: input.title };"},
    "workbench": {"title": "Desk", "theme": "emerald", "density": "compact", "list_width": 320,
                  "details_width": 440, "tools_position": "before_profile"},
    "intent": {"labels": ["billing", "delivery"]},
    "actions": [
        {"key": "crm", "title": "Send to CRM", "kind": "http", "fields": ["title", "amount"]},
        {"key": "promo", "title": "Promotion draft", "kind": "campaign", "name_field": "title",
         "content_field": "notes", "audience_tag_field": "priority"},
    ],
}
