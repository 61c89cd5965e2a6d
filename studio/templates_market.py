"""Built-in studio templates of the template market; importing one creates an unpublished draft."""
ORIGIN = "Custom Studio built-in template library"
LICENSE = "CC0 1.0 — free to use, modify and share, no attribution required"


def _page(title: str, description: str, submit: str, columns: int = 2) -> dict:
    """The page block of a template."""
    return {"title": title, "description": description, "columns": columns, "submit_label": submit}


def _field(key: str, label: str, kind: str, required: bool = False, options: list | None = None) -> dict:
    """One field of a template."""
    field = {"key": key, "label": label, "type": kind, "required": required}
    if options:
        field["options"] = options
    return field


def _rule(name: str, field: str, operator: str, value, target: str, result) -> dict:
    """One if-then rule of a template."""
    return {"name": name, "when": {"field": field, "operator": operator, "value": value},
            "then": {"field": target, "value": result}}


def _definition(name, description, page, fields, columns, rules=(), charts=None) -> dict:
    """A complete schema-1 definition."""
    definition = {"schema_version": 1, "name": name, "description": description, "page": page,
                  "fields": fields, "table_columns": columns,
                  "workflow": {"trigger": "form.submitted", "rules": list(rules)}}
    if charts:
        definition["charts"] = charts
    return definition


TEMPLATES = [
    {"slug": "service-ticket", "title": "Service ticket intake",
     "summary": "Capture a support ticket with category and priority; billing issues are raised to high.",
     "definition": _definition(
         "Service ticket intake", "Log a customer's support ticket in a consistent shape.",
         _page("New service ticket", "Describe the customer's problem.", "Create ticket"),
         [_field("subject", "Subject", "text", True),
          _field("category", "Category", "select", True, ["billing", "delivery", "product", "account"]),
          _field("priority", "Priority", "select", False, ["low", "normal", "high"]),
          _field("details", "Details", "textarea", True),
          _field("order_number", "Order number", "text")],
         ["subject", "category", "priority"],
         [_rule("Billing tickets are high priority", "category", "equals", "billing", "priority", "high")])},
    {"slug": "return-request", "title": "Return request",
     "summary": "Record a return with reason and order value; large refunds need a supervisor check.",
     "definition": _definition(
         "Return request", "Collect what is needed to process a product return.",
         _page("Return request", "One request per returned item.", "Submit return"),
         [_field("order_number", "Order number", "text", True),
          _field("reason", "Reason", "select", True, ["damaged", "wrong item", "not as described", "changed mind"]),
          _field("order_value", "Order value", "number", True),
          _field("purchase_date", "Purchase date", "date", True),
          _field("needs_review", "Supervisor review", "checkbox")],
         ["order_number", "reason", "order_value", "needs_review"],
         [_rule("Large refunds need review", "order_value", "gte", 1000, "needs_review", True)])},
    {"slug": "satisfaction-survey", "title": "Satisfaction survey",
     "summary": "A short after-service survey with a score chart per channel.",
     "definition": _definition(
         "Satisfaction survey", "Ask customers how their last conversation went.",
         _page("How did we do?", "Record the customer's answers.", "Save answers", 1),
         [_field("channel", "Channel", "select", True, ["chat", "phone", "email"]),
          _field("score", "Score (1-5)", "number", True),
          _field("comment", "Comment", "textarea"),
          _field("follow_up", "Follow up", "checkbox")],
         ["channel", "score", "follow_up"],
         [_rule("Low scores get a follow-up", "score", "lte", 2, "follow_up", True)],
         [{"key": "score_by_channel", "title": "Average score by channel", "type": "bar",
           "group_by": "channel", "metric": "average", "value_field": "score"}])},
    {"slug": "lead-capture", "title": "Lead capture",
     "summary": "Qualify sales leads from conversations and chart the pipeline value by source.",
     "definition": _definition(
         "Lead capture", "Note a potential customer who asked about buying.",
         _page("New lead", "Only what the customer told you.", "Save lead"),
         [_field("company", "Company", "text", True),
          _field("source", "Source", "select", True, ["chat", "phone", "event", "referral"]),
          _field("budget", "Budget", "number"),
          _field("stage", "Stage", "select", False, ["new", "qualified"]),
          _field("contact_date", "Contact date", "date", True)],
         ["company", "source", "budget", "stage"],
         [_rule("Budgets from 5,000 are qualified", "budget", "gte", 5000, "stage", "qualified")],
         [{"key": "budget_by_source", "title": "Budget by source", "type": "bar", "group_by": "source",
           "metric": "sum", "value_field": "budget"},
          {"key": "leads_per_day", "title": "Leads per day", "type": "line", "group_by": "contact_date",
           "metric": "count"}])},
    {"slug": "appointment-request", "title": "Appointment request",
     "summary": "Take an appointment request with a preferred date and service type.",
     "definition": _definition(
         "Appointment request", "Write down when and for what the customer wants to come in.",
         _page("Appointment request", "Confirm the date with the customer separately.", "Save request"),
         [_field("service", "Service", "select", True, ["consultation", "repair", "installation"]),
          _field("preferred_date", "Preferred date", "date", True),
          _field("time_of_day", "Time of day", "select", False, ["morning", "afternoon", "evening"]),
          _field("notes", "Notes", "textarea")],
         ["preferred_date", "service", "time_of_day"])},
    {"slug": "complaint-escalation", "title": "Complaint escalation",
     "summary": "Grade complaints and route serious ones to the escalation desk with rules.",
     "definition": _definition(
         "Complaint escalation", "Record a complaint and decide whether it must be escalated.",
         _page("Complaint", "Stay factual; quote the customer where useful.", "Record complaint"),
         [_field("summary", "Summary", "text", True),
          _field("severity", "Severity", "select", True, ["minor", "major", "critical"]),
          _field("compensation", "Compensation asked", "number"),
          _field("mentions_regulator", "Mentions a regulator", "checkbox"),
          _field("queue", "Queue", "select", False, ["standard", "escalation"]),
          _field("description", "Description", "textarea", True)],
         ["summary", "severity", "queue"],
         [_rule("Critical goes to escalation", "severity", "equals", "critical", "queue", "escalation"),
          _rule("Regulator mentions go to escalation", "mentions_regulator", "equals", True, "queue",
                "escalation"),
          _rule("Large compensation goes to escalation", "compensation", "gt", 500, "queue", "escalation"),
          _rule("Minor complaints stay standard", "severity", "equals", "minor", "queue", "standard")])},
]


def find_template(slug: str) -> dict | None:
    """The template with this slug."""
    return next((t for t in TEMPLATES if t["slug"] == slug), None)
