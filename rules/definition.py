"""The definition of an automation rule: its one validator, its hash, its assignees and capabilities.

Every path that saves or simulates a rule (preview, AI draft, save) calls `validate_rule`, which
returns the normalized definition or raises `ApiError(code, 400, detail=<JSON path of the first
problem>)`, with the conventions of the studio validator (`studio/definition.py`).

Decisions (where the spec leaves room; docs/decisions.md, "Rule definition validator"):
- Paths look like `name`, `slots[1].weekdays[0]`, `semantic.labels[2]`; a definition that is not an
  object has the path `$`.
- Codes: `required_field_missing` only for an absent required property; everything else, a null
  property included, is `invalid_definition`. Every property but `semantic` is required.
- "First problem": objects are checked as not-an-object, then unknown properties (in input order),
  then missing required properties (in spec order), then each value in the spec's table order;
  the consistency rules come last, once every value is valid.
- Numbers follow JSON: `1.0` is 1 (stored as an int), a bool is never a number.
- Texts are trimmed of JavaScript's whitespace, then must be within their length in UTF-16 units
  and free of control characters; only the top-level `assignee_ref` may be (or trim to) empty.
- A weekday and time may occur once: the later occurrence's weekday item is refused (a weekday
  repeated within a slot is the same pair twice).
- Keywords repeat when they are equal ignoring case (matching ignores case); labels are exact.
"""
import hashlib
import json
import math
import re

from core.text import JS_WHITESPACE, SINGLE_LINE_BAD, utf16_units
from core.validation import check_array, check_boolean, check_choice, check_object, fail, item_at, prop_at
from rules.catalog import LIMITS

RESERVED_LABEL = "无法判断"
SCHEMA_VERSIONS = (1,)
TIMEZONES = ("Asia/Shanghai",)
TRIGGERS = ("weekly", "manual_sample", "message_received")
WEEKDAYS = (1, 2, 3, 4, 5, 6, 7)  # Monday to Sunday
STATUSES = ("open", "pending")
TIME_RE = re.compile(r"([01][0-9]|2[0-3]):[0-5][0-9]", re.ASCII)  # used with fullmatch: HH:mm
# What a rule draft must declare (catalog capability IDs): by trigger, then for each filter.
TRIGGER_CAPABILITIES = {"weekly": ("preview.rotation",), "manual_sample": (),
                        "message_received": ("event.message_received",)}
KEYWORD_CAPABILITY = "preview.keyword_routing"
SEMANTIC_CAPABILITY = "ai.semantic_routing"


def validate_rule(raw: object) -> dict:
    """The normalized rule definition, or ApiError naming the JSON path of the first problem."""
    obj = check_object(raw, "", *SHAPES["definition"])
    definition = {
        "schema_version": check_choice(obj["schema_version"], "schema_version", SCHEMA_VERSIONS),
        "name": _text(obj["name"], "name", LIMITS["name_chars"]),
        "timezone": check_choice(obj["timezone"], "timezone", TIMEZONES),
        "trigger": check_choice(obj["trigger"], "trigger", TRIGGERS),
        "slots": _slots(obj["slots"], "slots"),
        "assignee_ref": _assignee_ref(obj["assignee_ref"], "assignee_ref"),
        "keywords": _keywords(obj["keywords"], "keywords"),
    }
    if "semantic" in obj:
        definition["semantic"] = _semantic(obj["semantic"], "semantic")
    definition["statuses"] = _statuses(obj["statuses"], "statuses")
    definition["overwrite_assigned"] = check_boolean(obj["overwrite_assigned"], "overwrite_assigned")
    definition["max_actions"] = _integer(obj["max_actions"], "max_actions", 1, LIMITS["max_actions"])
    _check_consistency(definition)
    return definition


def rule_hash(definition: dict) -> str:
    """SHA-256 hex of the canonical JSON (sorted keys, compact, UTF-8) of a normalized definition."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def assignee_refs(definition: dict) -> list[tuple[str, str]]:
    """(JSON path, value) of every non-empty assignee reference: the top-level one, then each slot's."""
    refs = [("assignee_ref", definition["assignee_ref"])]
    refs += [(prop_at(item_at("slots", index), "assignee_ref"), slot["assignee_ref"])
             for index, slot in enumerate(definition["slots"])]
    return [(path, value) for path, value in refs if value]


def rule_capabilities(definition: dict) -> list[str]:
    """The sorted catalog capability IDs a validated rule uses (what an AI draft must declare)."""
    used = set(TRIGGER_CAPABILITIES[definition["trigger"]])
    if definition["keywords"]:
        used.add(KEYWORD_CAPABILITY)
    if "semantic" in definition:
        used.add(SEMANTIC_CAPABILITY)
    return sorted(used)


# --- paths and generic checks -------------------------------------------------------------------

def _number(value: object, path: str, low: float, high: float) -> int | float:
    """A finite JSON number from `low` to `high`; an integral float is stored as an int."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        fail(path)
    if isinstance(value, float) and not math.isfinite(value):
        fail(path)
    if not low <= value <= high:  # int/float comparison is exact, even for huge ints
        fail(path)
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _integer(value: object, path: str, low: int, high: int) -> int:
    """A whole JSON number from `low` to `high` (2.0 is 2), stored as an int."""
    number = _number(value, path, low, high)
    if not isinstance(number, int):
        fail(path)
    return number


def _text(value: object, path: str, limit: int, allow_empty: bool = False) -> str:
    """A trimmed single-line text of at most `limit` UTF-16 units, non-empty unless allowed."""
    if not isinstance(value, str):
        fail(path)
    trimmed = value.strip(JS_WHITESPACE)
    if not (trimmed or allow_empty) or SINGLE_LINE_BAD.search(trimmed) or utf16_units(trimmed) > limit:
        fail(path)
    return trimmed


def _distinct(texts: list[str], path: str, ignore_case: bool = False) -> None:
    """Refuse the first text that repeats an earlier one (ignoring case if asked)."""
    seen = set()
    for index, text in enumerate(texts):
        key = text.casefold() if ignore_case else text
        if key in seen:
            fail(item_at(path, index))
        seen.add(key)


# --- properties ---------------------------------------------------------------------------------

def _slots(value: object, path: str) -> list[dict]:
    """At most 7 slots; no weekday and time occurs twice, within a slot or across slots (the later
    occurrence is refused)."""
    items = check_array(value, path, 0, LIMITS["slots"])
    slots = [_slot(item, item_at(path, index)) for index, item in enumerate(items)]
    seen = set()
    for index, slot in enumerate(slots):
        for position, weekday in enumerate(slot["weekdays"]):
            if (weekday, slot["time"]) in seen:
                fail(item_at(prop_at(item_at(path, index), "weekdays"), position))
            seen.add((weekday, slot["time"]))
    return slots


def _slot(value: object, path: str) -> dict:
    """Weekdays (1 Monday to 7 Sunday), an HH:mm Beijing time and an assignee reference."""
    obj = check_object(value, path, *SHAPES["slot"])
    weekdays_path = prop_at(path, "weekdays")
    items = check_array(obj["weekdays"], weekdays_path, 1, len(WEEKDAYS))
    weekdays = [check_choice(item, item_at(weekdays_path, index), WEEKDAYS) for index, item in enumerate(items)]
    return {"weekdays": weekdays, "time": _time(obj["time"], prop_at(path, "time")),
            "assignee_ref": _text(obj["assignee_ref"], prop_at(path, "assignee_ref"), LIMITS["assignee_ref_chars"])}


def _time(value: object, path: str) -> str:
    """A time of day as `HH:mm`, 00:00 to 23:59, two digits each."""
    if not isinstance(value, str) or not TIME_RE.fullmatch(value):
        fail(path)
    return value


def _assignee_ref(value: object, path: str) -> str:
    """The rule's assignee placeholder or member id; empty (after trimming) for a weekly rule."""
    return _text(value, path, LIMITS["assignee_ref_chars"], allow_empty=True)


def _keywords(value: object, path: str) -> list[str]:
    """At most 10 keywords of at most 40 characters, none repeating another ignoring case."""
    items = check_array(value, path, 0, LIMITS["keywords"])
    keywords = [_text(item, item_at(path, index), LIMITS["keyword_chars"]) for index, item in enumerate(items)]
    _distinct(keywords, path, ignore_case=True)
    return keywords


def _semantic(value: object, path: str) -> dict:
    """1 to 10 unique intent labels, none containing the reserved label, and a 0.8 to 1 threshold."""
    obj = check_object(value, path, *SHAPES["semantic"])
    labels_path = prop_at(path, "labels")
    items = check_array(obj["labels"], labels_path, 1, LIMITS["semantic_labels"])
    labels = [_text(item, item_at(labels_path, index), LIMITS["semantic_label_chars"])
              for index, item in enumerate(items)]
    for index, label in enumerate(labels):
        if RESERVED_LABEL in label:
            fail(item_at(labels_path, index))
    _distinct(labels, labels_path)
    return {"labels": labels,
            "min_confidence": _number(obj["min_confidence"], prop_at(path, "min_confidence"),
                                      LIMITS["min_confidence_low"], LIMITS["min_confidence_high"])}


def _statuses(value: object, path: str) -> list[str]:
    """A non-empty set of the conversation statuses a rule may touch, in the order written."""
    items = check_array(value, path, 1, len(STATUSES))
    statuses = [check_choice(item, item_at(path, index), STATUSES) for index, item in enumerate(items)]
    _distinct(statuses, path)
    return statuses


def _check_consistency(definition: dict) -> None:
    """The spec's consistency rules, each reported at the property that breaks it, in table order."""
    if definition["trigger"] == "weekly":
        if not definition["slots"]:
            fail("slots")
        if definition["assignee_ref"]:
            fail("assignee_ref")
    else:
        if definition["slots"]:
            fail("slots")
        if not definition["assignee_ref"]:
            fail("assignee_ref")
        if not definition["keywords"] and "semantic" not in definition:
            fail("keywords")
    if definition["keywords"] and "semantic" in definition:
        fail("semantic")


# Every object of a rule definition: (required properties in spec order, optional properties). The
# validator checks objects against it and rules/schema.py builds the model's JSON schema from it.
SHAPES = {
    "definition": (("schema_version", "name", "timezone", "trigger", "slots", "assignee_ref", "keywords",
                    "statuses", "overwrite_assigned", "max_actions"), ("semantic",)),
    "slot": (("weekdays", "time", "assignee_ref"), ()),
    "semantic": (("labels", "min_confidence"), ()),
}
