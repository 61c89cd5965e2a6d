"""The JSON schema of a definition and of the model's answer, built from the validator's own tables.

Object shapes (`SHAPES`), limits (`LIMITS`), enumerations and the key pattern are the ones
`studio/definition.py` checks against; this module only says which kind of value each property
holds, and refuses to build when a shape names a property it does not describe (or the other way
round), so the schema cannot drift from the validator. The schema tells the model what to write;
`validate_definition` stays the authority on what is saved (cross-references such as a rule's
field being declared, or an operator suiting its field's type, are beyond a JSON schema).
"""
from functools import cache

from core.capabilities import CAPABILITY_VERSION, CATALOG, FIELD_TYPES, OPERATORS
from core.schema import array, enum, label_list, shaped_object, text
from studio.catalog import LIMITS
from studio.definition import (ACTION_CAPABILITIES, AUDIENCE_TAG_TYPES, CAMPAIGN_TEXT_TYPES, CHART_METRICS,
                               CHART_TYPES, CODE_LANGUAGES, GROUPABLE_TYPES, KEY_RE, NUMBER_MAX, PAGE_COLUMNS,
                               RESERVED_KEYS, SCHEMA_VERSIONS, SHAPES, TRIGGERS, WORKBENCH_CHOICES)
from studio.draft_kinds import DraftKind

UNSUPPORTED_LIST_ITEMS = 20  # entries in each list of an unsupported answer
UNSUPPORTED_ITEM_CHARS = 120


def _shape(shape: str, properties: dict, description: str | None = None) -> dict:
    """The validator's object `shape` (see core.schema.shaped_object)."""
    return shaped_object(SHAPES, shape, properties, description)


def _text(limit: str, multiline: bool = False) -> dict:
    """A trimmed, non-empty text of at most LIMITS[limit] characters."""
    return text(LIMITS[limit], multiline=multiline)


def _key() -> dict:
    """A lowercase identifier that is not reserved."""
    return {"type": "string", "pattern": f"^{KEY_RE.pattern}$", "not": enum(tuple(sorted(RESERVED_KEYS)))}


def _field_ref(types: tuple = FIELD_TYPES) -> dict:
    """The key of a field declared in `fields`, of one of `types`."""
    return {"type": "string", "pattern": f"^{KEY_RE.pattern}$",
            "description": f"the key of a declared field of type {' or '.join(types)}"}


def _constant() -> dict:
    """A rule constant: a value the field it belongs to would accept."""
    return {"anyOf": [{"type": "string", "minLength": 1, "maxLength": LIMITS["textarea_value_chars"]},
                      {"type": "number", "minimum": -NUMBER_MAX, "maximum": NUMBER_MAX},
                      {"type": "boolean"}],
            "description": "of the field's type: text, a number, YYYY-MM-DD for a date, one of a select's "
                           "options, true or false for a checkbox"}


def _workflow() -> dict:
    """The submit trigger and its if-then rules."""
    operators = "; ".join(f"{op}: {', '.join(types)}" for op, types in OPERATORS.items())
    when = _shape("when", {"field": _field_ref(), "operator": enum(tuple(OPERATORS)), "value": _constant()},
                   f"operators by the field types they may test: {operators}")
    then = _shape("then", {"field": _field_ref(), "value": _constant()})
    rule = _shape("rule", {"name": _text("rule_name_chars"), "when": when, "then": then})
    return _shape("workflow", {"trigger": enum(TRIGGERS), "rules": array(rule, 0, LIMITS["rules"], False)})


def _sections() -> dict:
    """The optional sections, each as the validator accepts it."""
    chart = _shape("chart", {
        "key": _key(), "title": _text("chart_title_chars"), "type": enum(CHART_TYPES),
        "group_by": _field_ref(GROUPABLE_TYPES), "metric": enum(CHART_METRICS),
        "value_field": _field_ref(("number",))},
        "a line chart groups by a date field; value_field only (and required) for sum and average")
    code = _shape("code", {"language": enum(CODE_LANGUAGES),
                            "source": {"type": "string", "minLength": 1, "maxLength": LIMITS["script_source_chars"]}})
    workbench = _shape("workbench", {"title": _text("workbench_title_chars"),
                                      **{name: enum(choices) for name, choices in WORKBENCH_CHOICES.items()}},
                        "at least one property")
    intent = _shape("intent", {"labels": label_list(LIMITS["intent_labels"], LIMITS["intent_label_chars"])})
    action = _shape("action", {
        "key": _key(), "title": _text("action_title_chars"), "kind": enum(tuple(ACTION_CAPABILITIES)),
        "fields": array(_field_ref(), 1, LIMITS["fields"]),
        "name_field": _field_ref(CAMPAIGN_TEXT_TYPES), "content_field": _field_ref(CAMPAIGN_TEXT_TYPES),
        "audience_tag_field": _field_ref(AUDIENCE_TAG_TYPES)},
        "http: fields only; campaign: name_field and content_field, optional audience_tag_field")
    return {"charts": array(chart, 0, LIMITS["charts"], False), "code": code, "workbench": workbench,
            "intent": intent, "actions": array(action, 0, LIMITS["actions"], False)}


@cache
def definition_schema() -> dict:
    """The JSON schema of a definition (schema_version 1)."""
    page = _shape("page", {"title": _text("page_title_chars"), "description": _text("description_chars", True),
                            "columns": enum(PAGE_COLUMNS), "submit_label": _text("submit_label_chars")})
    field = _shape("field", {"key": _key(), "label": _text("field_label_chars"), "type": enum(FIELD_TYPES),
                              "required": {"type": "boolean"},
                              "options": array(_text("option_chars"), 1, LIMITS["select_options"])},
                    "options only (and required) for a select")
    return _shape("definition", {
        "schema_version": enum(SCHEMA_VERSIONS), "name": _text("name_chars"),
        "description": _text("description_chars", True), "page": page,
        "fields": array(field, 1, LIMITS["fields"], False),
        "table_columns": array(_field_ref(), 1, LIMITS["table_columns"]),
        "workflow": _workflow(), **_sections()},
        f"at most {LIMITS['definition_bytes']} bytes as compact JSON; field keys unique")


def _strings() -> dict:
    """A short list of short texts (the lists of an unsupported answer)."""
    return array({"type": "string", "minLength": 1, "maxLength": UNSUPPORTED_ITEM_CHARS}, 0, UNSUPPORTED_LIST_ITEMS)


def _draft(kind: str, definition: dict) -> dict:
    """A draft answer of one kind: its declared capabilities and its definition."""
    capability_ids = tuple(entry["id"] for entry in CATALOG)
    return {"type": "object", "additionalProperties": False,
            "required": ["capability_version", "kind", "required_capabilities", "definition"],
            "properties": {"capability_version": {"const": CAPABILITY_VERSION}, "kind": {"const": kind},
                           "required_capabilities": array(enum(capability_ids), 1, len(capability_ids)),
                           "definition": definition}}


@cache
def answer_schema(kinds: tuple[DraftKind, ...] = ()) -> dict:
    """The one JSON object the generator asks the model for: an app draft, a draft of a registered
    kind (its definition as that kind's validator describes it) or an unsupported result."""
    unsupported = {"type": "object", "additionalProperties": False,
                   "required": ["capability_version", "kind", "unsupported_capabilities", "missing_capabilities",
                                "missing_labels"],
                   "properties": {"capability_version": {"const": CAPABILITY_VERSION},
                                  "kind": {"const": "unsupported"},
                                  "unsupported_capabilities": _strings(), "missing_capabilities": _strings(),
                                  "missing_labels": _strings()}}
    return {"type": "object", "anyOf": [_draft("app", definition_schema()),
                                        *(_draft(kind.name, kind.schema()) for kind in kinds), unsupported]}
