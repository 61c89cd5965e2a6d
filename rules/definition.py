"""The definition of an automation rule: its one validator, its assignees and its capabilities.

Every path that saves or simulates a rule (preview, AI draft, save) calls `validate_rule`, which
returns the normalized definition or raises `ApiError(code, 400, detail=<JSON path of the first
problem>)`. Paths, codes, the order of problems and the text rules: docs/decisions.md, "Rule
definition validator".
"""
import re
import uuid

from core.labels import check_labels
from core.validation import (check_array, check_boolean, check_choice, check_distinct, check_integer, check_number,
                             check_object, check_text, fail, item_at, prop_at)
from rules.catalog import LIMITS

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
        "name": check_text(obj["name"], "name", LIMITS["name_chars"]),
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
    definition["max_actions"] = check_integer(obj["max_actions"], "max_actions", 1, LIMITS["max_actions"])
    _check_consistency(definition)
    return definition


def assignee_refs(definition: dict) -> list[tuple[str, str]]:
    """(JSON path, value) of every non-empty assignee reference: the top-level one, then each slot's."""
    refs = [("assignee_ref", definition["assignee_ref"])]
    refs += [(prop_at(item_at("slots", index), "assignee_ref"), slot["assignee_ref"])
             for index, slot in enumerate(definition["slots"])]
    return [(path, value) for path, value in refs if value]


def is_member_id(reference: object) -> bool:
    """Whether an assignee reference is written as a UUID (in any form `uuid.UUID` reads), so it
    names a member rather than a placeholder."""
    try:
        uuid.UUID(str(reference))
    except ValueError:
        return False
    return True


def rule_capabilities(definition: dict) -> list[str]:
    """The sorted catalog capability IDs a validated rule uses (what an AI draft must declare)."""
    used = set(TRIGGER_CAPABILITIES[definition["trigger"]])
    if definition["keywords"]:
        used.add(KEYWORD_CAPABILITY)
    if "semantic" in definition:
        used.add(SEMANTIC_CAPABILITY)
    return sorted(used)


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
            "assignee_ref": check_text(obj["assignee_ref"], prop_at(path, "assignee_ref"),
                                       LIMITS["assignee_ref_chars"])}


def _time(value: object, path: str) -> str:
    """A time of day as `HH:mm`, 00:00 to 23:59, two digits each."""
    if not isinstance(value, str) or not TIME_RE.fullmatch(value):
        fail(path)
    return value


def _assignee_ref(value: object, path: str) -> str:
    """The rule's assignee placeholder or member id; empty (after trimming) for a weekly rule."""
    return check_text(value, path, LIMITS["assignee_ref_chars"], allow_empty=True)


def _keywords(value: object, path: str) -> list[str]:
    """At most 10 keywords of at most 40 characters, none repeating another ignoring case."""
    items = check_array(value, path, 0, LIMITS["keywords"])
    keywords = [check_text(item, item_at(path, index), LIMITS["keyword_chars"]) for index, item in enumerate(items)]
    check_distinct(keywords, path, fold=str.casefold)
    return keywords


def _semantic(value: object, path: str) -> dict:
    """1 to 10 unique intent labels, none containing the reserved label, and a 0.8 to 1 threshold."""
    obj = check_object(value, path, *SHAPES["semantic"])
    return {"labels": check_labels(obj["labels"], prop_at(path, "labels"), LIMITS["semantic_labels"],
                                   LIMITS["semantic_label_chars"]),
            "min_confidence": check_number(obj["min_confidence"], prop_at(path, "min_confidence"),
                                           LIMITS["min_confidence_low"], LIMITS["min_confidence_high"])}


def _statuses(value: object, path: str) -> list[str]:
    """A non-empty set of the conversation statuses a rule may touch, in the order written."""
    items = check_array(value, path, 1, len(STATUSES))
    statuses = [check_choice(item, item_at(path, index), STATUSES) for index, item in enumerate(items)]
    check_distinct(statuses, path)
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
