"""The definition of a studio application: its one validator and its capability manifest.

Every path that saves a definition (console editor, starter, templates, generation) calls
`validate_definition`, which returns the normalized definition or raises `ApiError(code, 400,
detail=<JSON path of the first problem>)`. Paths, codes, the order of problems, numbers, texts and
sections: docs/decisions.md, "Definition validation details".
"""
import re

from core.labels import check_labels
from core.text import MULTI_LINE_BAD, SINGLE_LINE_BAD, is_blank, utf16_units
from core.validation import (MISSING, canonical_json, check_array, check_boolean, check_choice, check_distinct,
                             check_number, check_object, check_text, fail, item_at, prop_at)
from core.capabilities import FIELD_TYPES, OPERATORS
from studio.catalog import LIMITS
from studio.engine import is_calendar_date


KEY_RE = re.compile(r"[a-z][a-z0-9_]{0,31}", re.ASCII)  # used with fullmatch: no trailing newline
RESERVED_KEYS = frozenset({"id", "tenant_id", "constructor", "prototype", "__proto__"})
NUMBER_MAX = LIMITS["number_abs_max"]
GROUPABLE_TYPES = ("text", "select", "date", "checkbox")
CAMPAIGN_TEXT_TYPES = ("text", "textarea", "select")
ACTION_CAPABILITIES = {"http": "http.request", "campaign": "message.broadcast"}
CAMPAIGN_PROPERTIES = ("name_field", "content_field", "audience_tag_field")
AUDIENCE_TAG_TYPES = ("text", "select")
SCHEMA_VERSIONS = (1,)
PAGE_COLUMNS = (1, 2)
TRIGGERS = ("form.submitted",)
CHART_TYPES = ("bar", "line")
CHART_METRICS = ("count", "sum", "average")
CODE_LANGUAGES = ("javascript",)


def validate_definition(raw: object) -> dict:
    """The normalized definition, or ApiError naming the JSON path of the first problem."""
    obj = check_object(raw, "", *SHAPES["definition"])
    definition = {
        "schema_version": check_choice(obj["schema_version"], "schema_version", SCHEMA_VERSIONS),
        "name": check_text(obj["name"], "name", LIMITS["name_chars"]),
        "description": check_text(obj["description"], "description", LIMITS["description_chars"], multiline=True),
        "page": _page(obj["page"], "page"),
        "fields": _fields(obj["fields"], "fields"),
    }
    fields = field_map(definition)
    definition["table_columns"] = _table_columns(obj["table_columns"], "table_columns", fields)
    definition["workflow"] = _workflow(obj["workflow"], "workflow", fields)
    for name, check in _SECTIONS.items():
        if name in obj:
            section = check(obj[name], name, fields)
            if section:  # an empty charts or actions list is dropped: it hashes like none
                definition[name] = section
    if len(canonical_json(definition)) > LIMITS["definition_bytes"]:
        fail("")
    return definition


def capability_manifest(definition: dict) -> list[str]:
    """The sorted capability IDs a validated definition actually uses."""
    used = {"ui.form", "ui.table", "event.form_submitted", "record.create"}
    used |= {f"field.{field['type']}" for field in definition["fields"]}
    rules = definition["workflow"]["rules"]
    used |= {f"rule.{rule['when']['operator']}" for rule in rules}
    if rules:
        used.add("record.set_field")
    for section, capability in (("charts", "ui.chart"), ("code", "code.execute"),
                                ("workbench", "ui.custom_workbench"), ("intent", "ai.classify_conversation")):
        if definition.get(section):
            used.add(capability)
    used |= {ACTION_CAPABILITIES[action["kind"]] for action in definition.get("actions", [])}
    return sorted(used)


def field_map(definition: dict) -> dict[str, dict]:
    """The definition's fields by key."""
    return {field["key"]: field for field in definition["fields"]}


# --- keys, field references and raw texts ----------------------------------------------------

def _raw_text(value: object, path: str, limit: int, multiline: bool) -> str:
    """A non-blank string kept exactly as written (rule constants, script source)."""
    if not isinstance(value, str) or is_blank(value):
        fail(path)
    if (MULTI_LINE_BAD if multiline else SINGLE_LINE_BAD).search(value) or utf16_units(value) > limit:
        fail(path)
    return value


def _key(value: object, path: str) -> str:
    """A lowercase ASCII identifier of at most 32 characters."""
    if not isinstance(value, str) or not KEY_RE.fullmatch(value):
        fail(path)
    return value


def _field_ref(value: object, path: str, fields: dict, types: tuple = FIELD_TYPES) -> str:
    """The key of a declared field whose type is one of `types`."""
    if not isinstance(value, str) or value not in fields or fields[value]["type"] not in types:
        fail(path)
    return value


# --- page, fields, table ------------------------------------------------------------------------

def _page(value: object, path: str) -> dict:
    """The page title, description, column count and submit label."""
    obj = check_object(value, path, *SHAPES["page"])
    return {"title": check_text(obj["title"], prop_at(path, "title"), LIMITS["page_title_chars"]),
            "description": check_text(obj["description"], prop_at(path, "description"), LIMITS["description_chars"],
                                 multiline=True),
            "columns": check_choice(obj["columns"], prop_at(path, "columns"), PAGE_COLUMNS),
            "submit_label": check_text(obj["submit_label"], prop_at(path, "submit_label"),
                                       LIMITS["submit_label_chars"])}


def _keyed(value: object, path: str, low: int, high: int, check, *context) -> list[dict]:
    """`low` to `high` objects, each checked by `check(item, path, *context)`, with unique keys."""
    items = check_array(value, path, low, high)
    checked = [check(item, item_at(path, index), *context) for index, item in enumerate(items)]
    check_distinct(checked, path, by="key")
    return checked


def _fields(value: object, path: str) -> list[dict]:
    """1 to 12 fields with unique keys."""
    return _keyed(value, path, 1, LIMITS["fields"], _field)


def _field(value: object, path: str) -> dict:
    """One field; only a select carries (and must carry) options."""
    obj = check_object(value, path, *SHAPES["field"])
    key = _key(obj["key"], prop_at(path, "key"))
    if key in RESERVED_KEYS:
        fail(prop_at(path, "key"))
    field = {"key": key, "label": check_text(obj["label"], prop_at(path, "label"), LIMITS["field_label_chars"]),
             "type": check_choice(obj["type"], prop_at(path, "type"), FIELD_TYPES),
             "required": check_boolean(obj["required"], prop_at(path, "required"))}
    if field["type"] == "select":
        if "options" not in obj:
            fail(prop_at(path, "options"), MISSING)
        field["options"] = _options(obj["options"], prop_at(path, "options"))
    elif "options" in obj:
        fail(prop_at(path, "options"))
    return field


def _options(value: object, path: str) -> list[str]:
    """1 to 12 distinct single-line option texts."""
    items = check_array(value, path, 1, LIMITS["select_options"])
    options = [check_text(item, item_at(path, index), LIMITS["option_chars"]) for index, item in enumerate(items)]
    check_distinct(options, path)
    return options


def _table_columns(value: object, path: str, fields: dict) -> list[str]:
    """1 to 12 distinct declared field keys in display order."""
    items = check_array(value, path, 1, LIMITS["table_columns"])
    columns = [_field_ref(item, item_at(path, index), fields) for index, item in enumerate(items)]
    check_distinct(columns, path)
    return columns


# --- workflow -----------------------------------------------------------------------------------

def _workflow(value: object, path: str, fields: dict) -> dict:
    """The fixed submit trigger and 0 to 8 rules."""
    obj = check_object(value, path, *SHAPES["workflow"])
    trigger = check_choice(obj["trigger"], prop_at(path, "trigger"), TRIGGERS)
    rules_path = prop_at(path, "rules")
    items = check_array(obj["rules"], rules_path, 0, LIMITS["rules"])
    return {"trigger": trigger,
            "rules": [_rule(item, item_at(rules_path, index), fields) for index, item in enumerate(items)]}


def _rule(value: object, path: str, fields: dict) -> dict:
    """One if-then rule: a condition on one field, a constant for another."""
    obj = check_object(value, path, *SHAPES["rule"])
    return {"name": check_text(obj["name"], prop_at(path, "name"), LIMITS["rule_name_chars"]),
            "when": _when(obj["when"], prop_at(path, "when"), fields),
            "then": _then(obj["then"], prop_at(path, "then"), fields)}


def _when(value: object, path: str, fields: dict) -> dict:
    """A condition whose operator suits its field's type and whose value is of that type."""
    obj = check_object(value, path, *SHAPES["when"])
    field = fields[_field_ref(obj["field"], prop_at(path, "field"), fields)]
    operator = check_choice(obj["operator"], prop_at(path, "operator"), tuple(OPERATORS))
    if field["type"] not in OPERATORS[operator]:
        fail(prop_at(path, "operator"))
    return {"field": field["key"], "operator": operator,
            "value": _constant(obj["value"], prop_at(path, "value"), field)}


def _then(value: object, path: str, fields: dict) -> dict:
    """An assignment of a constant of the target field's type."""
    obj = check_object(value, path, *SHAPES["then"])
    field = fields[_field_ref(obj["field"], prop_at(path, "field"), fields)]
    return {"field": field["key"], "value": _constant(obj["value"], prop_at(path, "value"), field)}


def _constant(value: object, path: str, field: dict):
    """A rule constant that would be a valid submitted value of the field."""
    kind = field["type"]
    if kind == "text":
        return _raw_text(value, path, LIMITS["text_value_chars"], multiline=False)
    if kind == "textarea":
        return _raw_text(value, path, LIMITS["textarea_value_chars"], multiline=True)
    if kind == "number":
        return check_number(value, path, -NUMBER_MAX, NUMBER_MAX)
    if kind == "date":
        return _date(value, path)
    if kind == "select":
        return check_choice(value, path, tuple(field["options"]))
    return check_boolean(value, path)


def _date(value: object, path: str) -> str:
    """A YYYY-MM-DD string naming a real calendar day."""
    if not is_calendar_date(value):
        fail(path)
    return value


# --- optional sections --------------------------------------------------------------------------

def _charts(value: object, path: str, fields: dict) -> list[dict]:
    """At most 3 charts with unique keys."""
    return _keyed(value, path, 0, LIMITS["charts"], _chart, fields)


def _chart(value: object, path: str, fields: dict) -> dict:
    """A bar or date line chart: count, or sum/average of a number field."""
    obj = check_object(value, path, *SHAPES["chart"])
    chart = {"key": _key(obj["key"], prop_at(path, "key")),
             "title": check_text(obj["title"], prop_at(path, "title"), LIMITS["chart_title_chars"]),
             "type": check_choice(obj["type"], prop_at(path, "type"), CHART_TYPES)}
    group_types = ("date",) if chart["type"] == "line" else GROUPABLE_TYPES
    chart["group_by"] = _field_ref(obj["group_by"], prop_at(path, "group_by"), fields, group_types)
    chart["metric"] = check_choice(obj["metric"], prop_at(path, "metric"), CHART_METRICS)
    value_path = prop_at(path, "value_field")
    if chart["metric"] == "count":
        if "value_field" in obj:
            fail(value_path)
    elif "value_field" not in obj:
        fail(value_path, MISSING)
    else:
        chart["value_field"] = _field_ref(obj["value_field"], value_path, fields, ("number",))
    return chart


def _code(value: object, path: str, fields: dict) -> dict:
    """A JavaScript function body; checked for shape only, never trimmed."""
    obj = check_object(value, path, *SHAPES["code"])
    return {"language": check_choice(obj["language"], prop_at(path, "language"), CODE_LANGUAGES),
            "source": _raw_text(obj["source"], prop_at(path, "source"), LIMITS["script_source_chars"],
                                multiline=True)}


WORKBENCH_CHOICES = {
    "theme": ("blue", "emerald", "violet"),
    "density": ("comfortable", "compact"),
    "list_width": (260, 320, 380),
    "details_width": (280, 360, 440),
    "tools_position": ("before_profile", "after_profile"),
}


def _workbench(value: object, path: str, fields: dict) -> dict:
    """Workbench style settings; each optional, but at least one."""
    obj = check_object(value, path, *SHAPES["workbench"])
    if not obj:
        fail(path)
    settings = {}
    if "title" in obj:
        settings["title"] = check_text(obj["title"], prop_at(path, "title"), LIMITS["workbench_title_chars"])
    for name, choices in WORKBENCH_CHOICES.items():
        if name in obj:
            settings[name] = check_choice(obj[name], prop_at(path, name), choices)
    return settings


def _intent(value: object, path: str, fields: dict) -> dict:
    """1 to 10 unique classification labels, none containing the reserved 'cannot tell' label."""
    obj = check_object(value, path, *SHAPES["intent"])
    return {"labels": check_labels(obj["labels"], prop_at(path, "labels"), LIMITS["intent_labels"],
                                   LIMITS["intent_label_chars"])}


def _actions(value: object, path: str, fields: dict) -> list[dict]:
    """At most 2 record actions with unique keys."""
    return _keyed(value, path, 0, LIMITS["actions"], _action, fields)


def _action(value: object, path: str, fields: dict) -> dict:
    """An http action (chosen fields) or a campaign draft action (name, content, audience tag)."""
    obj = check_object(value, path, *SHAPES["action"])
    action = {"key": _key(obj["key"], prop_at(path, "key")),
              "title": check_text(obj["title"], prop_at(path, "title"), LIMITS["action_title_chars"]),
              "kind": check_choice(obj["kind"], prop_at(path, "kind"), tuple(ACTION_CAPABILITIES))}
    if action["kind"] == "http":
        return {**action, **_http_action(obj, path, fields)}
    return {**action, **_campaign_action(obj, path, fields)}


def _http_action(obj: dict, path: str, fields: dict) -> dict:
    """The http part: 1 to 12 distinct declared fields to send, no campaign properties."""
    for name in CAMPAIGN_PROPERTIES:
        if name in obj:
            fail(prop_at(path, name))
    fields_path = prop_at(path, "fields")
    if "fields" not in obj:
        fail(fields_path, MISSING)
    items = check_array(obj["fields"], fields_path, 1, LIMITS["fields"])
    keys = [_field_ref(item, item_at(fields_path, index), fields) for index, item in enumerate(items)]
    check_distinct(keys, fields_path)
    return {"fields": keys}


def _campaign_action(obj: dict, path: str, fields: dict) -> dict:
    """The campaign part: name and content fields, an optional audience tag field, no `fields`."""
    if "fields" in obj:
        fail(prop_at(path, "fields"))
    part = {}
    for name in ("name_field", "content_field"):
        if name not in obj:
            fail(prop_at(path, name), MISSING)
        part[name] = _field_ref(obj[name], prop_at(path, name), fields, CAMPAIGN_TEXT_TYPES)
    if "audience_tag_field" in obj:
        part["audience_tag_field"] = _field_ref(obj["audience_tag_field"], prop_at(path, "audience_tag_field"),
                                                fields, AUDIENCE_TAG_TYPES)
    return part


# Optional sections in spec order: name -> check(value, path, fields by key).
_SECTIONS = {"charts": _charts, "code": _code, "workbench": _workbench, "intent": _intent,
             "actions": _actions}

# Every object of a definition: (required properties in spec order, optional properties). The
# validator checks objects against it and studio/schema.py builds the model's JSON schema from it.
SHAPES = {
    "definition": (("schema_version", "name", "description", "page", "fields", "table_columns", "workflow"),
                   tuple(_SECTIONS)),
    "page": (("title", "description", "columns", "submit_label"), ()),
    "field": (("key", "label", "type", "required"), ("options",)),
    "workflow": (("trigger", "rules"), ()),
    "rule": (("name", "when", "then"), ()),
    "when": (("field", "operator", "value"), ()),
    "then": (("field", "value"), ()),
    "chart": (("key", "title", "type", "group_by", "metric"), ("value_field",)),
    "code": (("language", "source"), ()),
    "workbench": ((), ("title", *WORKBENCH_CHOICES)),
    "intent": (("labels",), ()),
    "action": (("key", "title", "kind"), ("fields", *CAMPAIGN_PROPERTIES)),
}
