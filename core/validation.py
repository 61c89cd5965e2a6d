"""Checks shared by the JSON validators (studio definitions, automation rules): each either returns
the checked value or stops at the first problem with `ApiError(code, 400, detail=<JSON path>)`.

Paths look like `page.title`, `fields[2].options`; the whole document is `$`. An absent required
property is `required_field_missing`, every other problem `invalid_definition`.
"""
from typing import NoReturn

from core.api import ApiError

INVALID = "invalid_definition"
MISSING = "required_field_missing"


def fail(path: str, code: str = INVALID) -> NoReturn:
    """Stop at the first problem; the whole document is `$`."""
    raise ApiError(code, 400, detail=path or "$")  # ApiError escapes a lone surrogate in a key


def prop_at(path: str, name: str) -> str:
    """The path of a property."""
    return f"{path}.{name}" if path else name


def item_at(path: str, index: int) -> str:
    """The path of an array item."""
    return f"{path}[{index}]"


def check_object(value: object, path: str, required: tuple, optional: tuple = ()) -> dict:
    """An object with no unknown properties and every required one present."""
    if not isinstance(value, dict):
        fail(path)
    known = set(required) | set(optional)
    for name in value:
        if name not in known:
            fail(prop_at(path, str(name)))
    for name in required:
        if name not in value:
            fail(prop_at(path, name), MISSING)
    return value


def check_array(value: object, path: str, low: int, high: int) -> list:
    """An array of `low` to `high` items."""
    if not isinstance(value, list) or not low <= len(value) <= high:
        fail(path)
    return value


def check_choice(value: object, path: str, choices: tuple):
    """One of fixed values; numbers compare as JSON numbers (1.0 is 1) and a bool is never one."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or value not in choices:
        fail(path)
    return choices[choices.index(value)]


def check_boolean(value: object, path: str) -> bool:
    """A real JSON boolean, not a string."""
    if not isinstance(value, bool):
        fail(path)
    return value
