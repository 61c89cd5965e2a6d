"""Built-in studio templates of the template market; importing one creates an unpublished draft.

Their texts (title, summary and the definition's name, description, page texts, field labels, rule
names and chart titles; never keys, option values or types) are marked for the catalogs: the market
lists them, and an import saves them, in the page's language (`localized`). TEMPLATES, ORIGIN and
LICENSE are the English originals, which an imported application's origin and licence keep."""
from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l

from studio.catalog import english, localized

_ORIGIN = _l("Custom Studio built-in template library")
_LICENSE = _l("CC0 1.0 — free to use, modify and share, no attribution required")


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


_MARKED = [
    {"slug": "service-ticket", "title": _l("Service ticket intake"),
     "summary": _l("Capture a support ticket with category and priority; billing issues are raised to high."),
     "definition": _definition(
         _l("Service ticket intake"), _l("Log a customer's support ticket in a consistent shape."),
         _page(_l("New service ticket"), _l("Describe the customer's problem."), _l("Create ticket")),
         [_field("subject", _l("Subject"), "text", True),
          _field("category", _l("Category"), "select", True, ["billing", "delivery", "product", "account"]),
          _field("priority", _l("Priority"), "select", False, ["low", "normal", "high"]),
          _field("details", _l("Details"), "textarea", True),
          _field("order_number", _l("Order number"), "text")],
         ["subject", "category", "priority"],
         [_rule(_l("Billing tickets are high priority"), "category", "equals", "billing", "priority", "high")])},
    {"slug": "return-request", "title": _l("Return request"),
     "summary": _l("Record a return with reason and order value; large refunds need a supervisor check."),
     "definition": _definition(
         _l("Return request"), _l("Collect what is needed to process a product return."),
         _page(_l("Return request"), _l("One request per returned item."), _l("Submit return")),
         [_field("order_number", _l("Order number"), "text", True),
          _field("reason", _l("Reason"), "select", True, ["damaged", "wrong item", "not as described", "changed mind"]),
          _field("order_value", _l("Order value"), "number", True),
          _field("purchase_date", _l("Purchase date"), "date", True),
          _field("needs_review", _l("Supervisor review"), "checkbox")],
         ["order_number", "reason", "order_value", "needs_review"],
         [_rule(_l("Large refunds need review"), "order_value", "gte", 1000, "needs_review", True)])},
    {"slug": "satisfaction-survey", "title": _l("Satisfaction survey"),
     "summary": _l("A short after-service survey with a score chart per channel."),
     "definition": _definition(
         _l("Satisfaction survey"), _l("Ask customers how their last conversation went."),
         _page(_l("How did we do?"), _l("Record the customer's answers."), _l("Save answers"), 1),
         [_field("channel", _l("Channel"), "select", True, ["chat", "phone", "email"]),
          _field("score", _l("Score (1-5)"), "number", True),
          _field("comment", _l("Comment"), "textarea"),
          _field("follow_up", _l("Follow up"), "checkbox")],
         ["channel", "score", "follow_up"],
         [_rule(_l("Low scores get a follow-up"), "score", "lte", 2, "follow_up", True)],
         [{"key": "score_by_channel", "title": _l("Average score by channel"), "type": "bar",
           "group_by": "channel", "metric": "average", "value_field": "score"}])},
    {"slug": "lead-capture", "title": _l("Lead capture"),
     "summary": _l("Qualify sales leads from conversations and chart the pipeline value by source."),
     "definition": _definition(
         _l("Lead capture"), _l("Note a potential customer who asked about buying."),
         _page(_l("New lead"), _l("Only what the customer told you."), _l("Save lead")),
         [_field("company", _l("Company"), "text", True),
          _field("source", _l("Source"), "select", True, ["chat", "phone", "event", "referral"]),
          _field("budget", _l("Budget"), "number"),
          _field("stage", _l("Stage"), "select", False, ["new", "qualified"]),
          _field("contact_date", _l("Contact date"), "date", True)],
         ["company", "source", "budget", "stage"],
         [_rule(_l("Budgets from 5,000 are qualified"), "budget", "gte", 5000, "stage", "qualified")],
         [{"key": "budget_by_source", "title": _l("Budget by source"), "type": "bar", "group_by": "source",
           "metric": "sum", "value_field": "budget"},
          {"key": "leads_per_day", "title": _l("Leads per day"), "type": "line", "group_by": "contact_date",
           "metric": "count"}])},
    {"slug": "appointment-request", "title": _l("Appointment request"),
     "summary": _l("Take an appointment request with a preferred date and service type."),
     "definition": _definition(
         _l("Appointment request"), _l("Write down when and for what the customer wants to come in."),
         _page(_l("Appointment request"), _l("Confirm the date with the customer separately."), _l("Save request")),
         [_field("service", _l("Service"), "select", True, ["consultation", "repair", "installation"]),
          _field("preferred_date", _l("Preferred date"), "date", True),
          _field("time_of_day", _l("Time of day"), "select", False, ["morning", "afternoon", "evening"]),
          _field("notes", _l("Notes"), "textarea")],
         ["preferred_date", "service", "time_of_day"])},
    {"slug": "complaint-escalation", "title": _l("Complaint escalation"),
     "summary": _l("Grade complaints and route serious ones to the escalation desk with rules."),
     "definition": _definition(
         _l("Complaint escalation"), _l("Record a complaint and decide whether it must be escalated."),
         _page(_l("Complaint"), _l("Stay factual; quote the customer where useful."), _l("Record complaint")),
         [_field("summary", _l("Summary"), "text", True),
          _field("severity", _l("Severity"), "select", True, ["minor", "major", "critical"]),
          _field("compensation", _l("Compensation asked"), "number"),
          _field("mentions_regulator", _l("Mentions a regulator"), "checkbox"),
          _field("queue", _l("Queue"), "select", False, ["standard", "escalation"]),
          _field("description", _l("Description"), "textarea", True)],
         ["summary", "severity", "queue"],
         [_rule(_l("Critical goes to escalation"), "severity", "equals", "critical", "queue", "escalation"),
          _rule(_l("Regulator mentions go to escalation"), "mentions_regulator", "equals", True, "queue",
                "escalation"),
          _rule(_l("Large compensation goes to escalation"), "compensation", "gt", 500, "queue", "escalation"),
          _rule(_l("Minor complaints stay standard"), "severity", "equals", "minor", "queue", "standard")])},
]


def templates() -> list[dict]:
    """The templates in the page's language."""
    return localized(_MARKED)


def find_template(slug: str) -> dict | None:
    """The template with this slug, in the page's language."""
    return next((localized(t) for t in _MARKED if t["slug"] == slug), None)


def imported_origin(slug: str) -> str:
    """What an application imported from the template says it came from, stored in English like
    the licence: `<library>: <template title>`."""
    return f"{ORIGIN}: {next(t for t in TEMPLATES if t['slug'] == slug)['title']}"


def shown_origin(origin: str) -> str:
    """The library's name, or an imported application's origin, in the page's language (an origin
    from elsewhere as it is)."""
    if origin == ORIGIN:
        return str(_ORIGIN)
    library, _sep, title = origin.partition(": ")
    slug = next((t["slug"] for t in TEMPLATES if t["title"] == title), None) if library == ORIGIN else None
    return origin if slug is None else _("%(library)s: %(title)s", library=_ORIGIN, title=find_template(slug)["title"])


def shown_license(license: str) -> str:
    """The library's licence in the page's language (another licence as it is)."""
    return str(_LICENSE) if license == LICENSE else license


TEMPLATES = english(_MARKED)  # the English originals, whatever the locale of an enclosing context
ORIGIN, LICENSE = english([_ORIGIN, _LICENSE])
