"""The rule engine: validate one submission against a definition, then apply its workflow rules.

Pure functions, no I/O; the definition is already validated and normalized by the caller. What
counts as missing, empty or invalid, and how conditions compare: docs/decisions.md, "Submissions
and the rule engine".
"""
import datetime
import math
import re

from core.api import ApiError
from studio.catalog import LIMITS
from core.text import MULTI_LINE_BAD, SINGLE_LINE_BAD, fits_utf16, is_blank

TEXT_MAX = LIMITS["text_value_chars"]
TEXTAREA_MAX = LIMITS["textarea_value_chars"]
NUMBER_MAX = LIMITS["number_abs_max"]
DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)  # fullmatch: no trailing newline slips by


def run_rules(definition: dict, raw_input: object) -> dict:
    """Validate a submission and apply the workflow rules to it."""
    return apply_rules(definition, validate_input(definition, raw_input))


def validate_input(definition: dict, raw_input: object) -> dict:
    """The clean submitted values: provided fields only, in the definition's field order."""
    if not isinstance(raw_input, dict):
        raise ApiError("invalid_json", 400, detail="input")
    known = {field["key"] for field in definition["fields"]}
    for key in raw_input:
        if key not in known:
            raise ApiError("invalid_json", 400, detail=f"input.{key}")
    clean = {}
    for field in definition["fields"]:
        key = field["key"]
        if _is_provided(field, raw_input.get(key)):
            clean[key] = raw_input[key]
    return clean


def _is_provided(field: dict, value: object) -> bool:
    """Whether a valid value was sent; raises when a required one is empty or any value is invalid."""
    detail = f"input.{field['key']}"
    if value is None or (isinstance(value, str) and is_blank(value)):
        if field["required"]:
            raise ApiError("required_field_missing", 400, detail=detail)
        if value is None or value == "":
            return False
        raise ApiError("invalid_json", 400, detail=detail)  # whitespace is not non-empty text
    if not VALUE_CHECKS[field["type"]](field, value):
        raise ApiError("invalid_json", 400, detail=detail)
    return True


def _kind(value: object) -> type:
    """The JSON type of a value: bool is not a number, int and float are one number type."""
    if isinstance(value, bool):
        return bool
    if isinstance(value, (int, float)):
        return float
    return type(value)


def _is_text(field: dict, value: object) -> bool:
    """A single-line string of at most 200 UTF-16 units without control characters."""
    return isinstance(value, str) and not SINGLE_LINE_BAD.search(value) and fits_utf16(value, TEXT_MAX)


def _is_textarea(field: dict, value: object) -> bool:
    """A string of at most 2,000 UTF-16 units; tabs and line breaks are its only controls."""
    return isinstance(value, str) and not MULTI_LINE_BAD.search(value) and fits_utf16(value, TEXTAREA_MAX)


def _is_number(field: dict, value: object) -> bool:
    """A JSON number (not a bool or numeric string), finite and within ±1e12."""
    # Compare before isfinite: a huge JSON integer would overflow it.
    return _kind(value) is float and abs(value) <= NUMBER_MAX and math.isfinite(value)


def is_calendar_date(value: object) -> bool:
    """A YYYY-MM-DD string naming a real calendar day (no time, no zone)."""
    if not isinstance(value, str) or not DATE_RE.fullmatch(value):
        return False
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_option(field: dict, value: object) -> bool:
    """A string equal to one of the select's options."""
    return isinstance(value, str) and value in field["options"]


def _is_boolean(field: dict, value: object) -> bool:
    """A JSON boolean; false is a valid answer."""
    return isinstance(value, bool)


VALUE_CHECKS = {
    "text": _is_text,
    "textarea": _is_textarea,
    "number": _is_number,
    "date": lambda field, value: is_calendar_date(value),
    "select": _is_option,
    "checkbox": _is_boolean,
}


def apply_rules(definition: dict, data: dict) -> dict:
    """Apply the workflow rules to validated data; returns the new data, a trace and no effects."""
    snapshot = dict(data)  # conditions read this, never an earlier rule's assignment
    result = dict(data)
    trace = []
    for rule in definition["workflow"]["rules"]:
        matched = _condition_matches(rule["when"], snapshot)
        if matched:
            result[rule["then"]["field"]] = rule["then"]["value"]  # later matches overwrite
        trace.append({"rule": rule["name"], "matched": matched, "field": rule["then"]["field"]})
    ordered = {field["key"]: result[field["key"]] for field in definition["fields"]
               if field["key"] in result}
    return {"data": ordered, "trace": trace, "external_effects": False}


def _condition_matches(when: dict, snapshot: dict) -> bool:
    """Whether one condition holds on the snapshot; an unfilled field never matches."""
    if when["field"] not in snapshot:
        return False
    return MATCHERS[when["operator"]](snapshot[when["field"]], when["value"])


def _equal(a: object, b: object) -> bool:
    """Strict equality: values of different JSON types are never equal (no conversion)."""
    return _kind(a) is _kind(b) and a == b


def _numbers(a: object, b: object) -> bool:
    """Ordering operators only compare two numbers."""
    return _kind(a) is float and _kind(b) is float


def _strings(a: object, b: object) -> bool:
    """Substring operators only compare two strings."""
    return isinstance(a, str) and isinstance(b, str)


MATCHERS = {
    "equals": _equal,
    "not_equals": lambda a, b: not _equal(a, b),
    "gte": lambda a, b: _numbers(a, b) and a >= b,
    "gt": lambda a, b: _numbers(a, b) and a > b,
    "lt": lambda a, b: _numbers(a, b) and a < b,
    "lte": lambda a, b: _numbers(a, b) and a <= b,
    "contains": lambda a, b: _strings(a, b) and b in a,
    "starts_with": lambda a, b: _strings(a, b) and a.startswith(b),
    "ends_with": lambda a, b: _strings(a, b) and a.endswith(b),
}
