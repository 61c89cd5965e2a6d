"""The platform's capability catalog (document 1, "Capability catalog"): its version, the IDs every
extension declares and reads, and each ID's availability status. Studio builds field and rule
capabilities from the field types and operators listed here; rules carry the version in previews."""

CAPABILITY_VERSION = "2026-10-09.1"
FIELD_TYPES = ("text", "textarea", "number", "date", "select", "checkbox")
# Operator -> field types it may test (the spec's operator table).
OPERATORS = {
    "equals": FIELD_TYPES,
    "not_equals": FIELD_TYPES,
    "gte": ("number",),
    "gt": ("number",),
    "lt": ("number",),
    "lte": ("number",),
    "contains": ("text", "textarea"),
    "starts_with": ("text", "textarea"),
    "ends_with": ("text", "textarea"),
}

# The spec's catalog table, one row per ID: (id, meaning, availability status).
_CATALOG_ROWS = [
    ("ui.form", "the application's form", "available"),
    ("ui.table", "this application's ledger", "available"),
    *[(f"field.{kind}", f"a {kind} field", "available") for kind in FIELD_TYPES],
    *[(f"rule.{op}", f"a rule condition using {op}", "available") for op in OPERATORS],
    ("event.form_submitted", "form submission", "available"),
    ("record.create", "create a record", "available"),
    ("record.set_field", "set a field on the new record", "available"),
    ("workbench.customer_context", "per-item manual authorization by an agent in the workbench only; "
     "not an automatic data source for generation", "manual_only"),
    ("preview.rotation", "weekly-rotation simulation on manual samples", "preview_only"),
    ("preview.keyword_routing", "keyword-routing simulation on manual samples", "preview_only"),
    ("automation.plan_management", "administrator binds real agents and authorizes publishing read-only "
     "scheduled plans; no reassignment", "manual_only"),
    ("automation.execute_plan", "administrator authorizes a single execution of a complete rotation, "
     "keyword or semantic plan; never grants the AI automatic execution", "manual_only"),
    ("conversation.assign", "rotation, keyword and semantic rules may reassign under continuing "
     "administrator authorization; not arbitrary workflow execution", "manual_only"),
    ("schedule.execute", "scheduled reassignment under continuing administrator authorization; "
     "not arbitrary workflow execution", "manual_only"),
    ("event.message_received", "a verified public customer message triggers an authorized routing rule; "
     "no arbitrary code, no mass sending", "manual_only"),
    ("ui.chart", "bar chart and date line chart over this application's records of one version: "
     "count, sum, average", "available"),
    ("ai.classify_conversation", "agent-authorized analysis of the current conversation's public text; "
     "no automatic reassignment", "manual_only"),
    ("ui.custom_workbench", "controlled layout, theme, column sizes, business form and tool entry; "
     "safety controls cannot be overridden", "available"),
    ("code.execute", "bounded JavaScript form computation, no network or database", "available"),
    ("ai.semantic_routing", "business-intent routing, per-use or continuing authorization, "
     "consumes AI points", "manual_only"),
    ("knowledge.read", "before generation, per-use selection and authorization of up to 3 valid "
     "published knowledge excerpts", "manual_only"),
    ("http.request", "fixed public HTTPS address bound by the administrator; per-use confirmation of "
     "sending chosen record fields", "manual_only"),
    ("message.broadcast", "creates a marketing draft from a form record; sending is reviewed separately",
     "manual_only"),
    ("payment.refund", "not opened to generation workflows", "unavailable"),
    ("sql.execute", "not opened to generation workflows", "unavailable"),
]
CATALOG = [{"id": id_, "meaning": meaning, "status": status} for id_, meaning, status in _CATALOG_ROWS]
