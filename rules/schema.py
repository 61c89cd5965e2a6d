"""The JSON schema of a rule definition, built from the validator's own tables.

Object shapes (`SHAPES`), limits (`LIMITS`), enumerations and the time pattern are the ones
`rules/definition.py` checks against; this module only says which kind of value each property
holds, and refuses to build when a shape names a property it does not describe (or the other way
round), so the schema cannot drift from the validator. The schema tells the model what to write
for an `automation_preview` draft; `validate_rule` stays the authority on what is accepted (the
consistency rules between properties and case-insensitive keyword repeats are described in words).
"""
from functools import cache

from core.schema import array, enum, label_list, shaped_object, text
from rules.catalog import LIMITS
from rules.definition import (SCHEMA_VERSIONS, SHAPES, STATUSES, TIME_RE, TIMEZONES, TRIGGERS,
                              WEEKDAYS)

CONSISTENCY = ("weekly: at least one slot and assignee_ref \"\", optionally keywords or semantic; "
               "manual_sample and message_received: slots [], a non-empty assignee_ref and exactly one of "
               "non-empty keywords or semantic; semantic never with non-empty keywords; "
               "a weekday and time occur in one slot only")


def _shape(shape: str, properties: dict, description: str | None = None) -> dict:
    """The validator's object `shape` (see core.schema.shaped_object)."""
    return shaped_object(SHAPES, shape, properties, description)


def _text(limit: str, note: str = "", low: int = 1) -> dict:
    """A trimmed single-line text of at most LIMITS[limit] characters, with what else it must be."""
    return text(LIMITS[limit], note, min_length=low)


def _slot() -> dict:
    """A weekly time slot and the placeholder of its assignee."""
    return _shape("slot", {
        "weekdays": array(enum(WEEKDAYS), 1, len(WEEKDAYS)),
        "time": {"type": "string", "pattern": f"^{TIME_RE.pattern}$", "minLength": 5, "maxLength": 5,
                 "description": "HH:mm, Beijing time"},  # the length stops Python's `$` before a final newline
        "assignee_ref": _text("assignee_ref_chars", "the assignee's display-name placeholder")},
        "weekdays 1 (Monday) to 7 (Sunday); a daily slot lists all seven")


def _semantic() -> dict:
    """The administrator's business intents and the confidence a match needs."""
    return _shape("semantic", {
        "labels": label_list(LIMITS["semantic_labels"], LIMITS["semantic_label_chars"]),
        "min_confidence": {"type": "number", "minimum": LIMITS["min_confidence_low"],
                           "maximum": LIMITS["min_confidence_high"]}})


@cache
def rule_schema() -> dict:
    """The JSON schema of a rule definition (schema_version 1)."""
    return _shape("definition", {
        "schema_version": enum(SCHEMA_VERSIONS), "name": _text("name_chars"), "timezone": enum(TIMEZONES),
        "trigger": enum(TRIGGERS), "slots": array(_slot(), 0, LIMITS["slots"], False),
        "assignee_ref": _text("assignee_ref_chars", "\"\" for a weekly rule, else the assignee's display-name "
                                                    "placeholder", low=0),
        "keywords": array(_text("keyword_chars", "found in the text ignoring case; unique ignoring case"), 0,
                          LIMITS["keywords"]),
        "semantic": _semantic(),
        "statuses": array(enum(STATUSES), 1, len(STATUSES)),
        "overwrite_assigned": {"type": "boolean"},
        "max_actions": {"type": "integer", "minimum": 1, "maximum": LIMITS["max_actions"]}},
        CONSISTENCY)
