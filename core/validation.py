"""Parts shared by the JSON validators (studio definitions, automation rules): each either returns
the checked value or stops at the first problem with `ApiError(code, 400, detail=<JSON path>)`.

Paths look like `page.title`, `fields[2].options`; the whole document is `$`. An absent required
property is `required_field_missing`, every other problem `invalid_definition`. The conventions
(trimming, lengths in UTF-16 units, JSON numbers): docs/decisions.md, "Studio app builder".
"""
import hashlib
import json
import math
from collections.abc import Callable
from typing import NoReturn

from core.api import ApiError
from core.text import JS_WHITESPACE, MULTI_LINE_BAD, SINGLE_LINE_BAD, utf16_units

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


def check_text(value: object, path: str, limit: int, *, multiline: bool = False, allow_empty: bool = False) -> str:
    """A text trimmed of JavaScript's whitespace, at most `limit` UTF-16 units, without control
    characters (a multi-line one keeps tab, LF and CR); non-empty unless `allow_empty`."""
    if not isinstance(value, str):
        fail(path)
    trimmed = value.strip(JS_WHITESPACE)
    if not (trimmed or allow_empty) or (MULTI_LINE_BAD if multiline else SINGLE_LINE_BAD).search(trimmed) \
            or utf16_units(trimmed) > limit:
        fail(path)
    return trimmed


def check_number(value: object, path: str, low: float, high: float) -> int | float:
    """A finite JSON number from `low` to `high`; an integral float is stored as an int."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        fail(path)
    if isinstance(value, float) and not math.isfinite(value):
        fail(path)
    if not low <= value <= high:  # int/float comparison is exact, even for huge ints
        fail(path)
    return int(value) if isinstance(value, float) and value.is_integer() else value


def check_integer(value: object, path: str, low: int, high: int) -> int:
    """A whole JSON number from `low` to `high` (2.0 is 2), stored as an int."""
    number = check_number(value, path, low, high)
    if not isinstance(number, int):
        fail(path)
    return number


def check_distinct(items: list, path: str, *, by: str | None = None, fold: Callable[[str], str] | None = None) -> None:
    """Refuse the first item that repeats an earlier one: compared whole, or by its property `by`
    (the path then names that property), after `fold` when given (`str.casefold` ignores case)."""
    seen = set()
    for index, item in enumerate(items):
        value = item if by is None else item[by]
        key = fold(value) if fold else value
        if key in seen:
            fail(item_at(path, index) if by is None else prop_at(item_at(path, index), by))
        seen.add(key)


def canonical_json(document: object) -> bytes:
    """Compact UTF-8 JSON with sorted keys: what a definition's hash and size are taken of."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def canonical_hash(document: object) -> str:
    """SHA-256 hex of the canonical JSON of a normalized definition."""
    return hashlib.sha256(canonical_json(document)).hexdigest()
