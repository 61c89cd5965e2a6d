"""The rule definition validator: every spec rule accepted and refused, with the JSON path of the problem."""
import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.api import ApiError, printable
from rules import definition as validator
from rules.catalog import AUTOMATION_PREVIEW_EXAMPLE, LIMITS
from core.labels import RESERVED_LABEL
from core.validation import canonical_hash
from rules.definition import SHAPES, STATUSES, TRIGGERS, assignee_refs, rule_capabilities, validate_rule
from core.capabilities import CATALOG
from tests.support.definitions import (DROP, INVALID, MISSING, ODD_STRINGS, PROPERTY_SETTINGS, changed, json_path,
                                       mutated, random_json)
from tests.support.rule_definitions import KEYWORD, RULES, SEMANTIC, WEEKLY, valid_rules


def assert_refused(rule: object, path: str, code: str = INVALID) -> None:
    """Refused with this code, status 400 and this path."""
    with pytest.raises(ApiError) as caught:
        validate_rule(rule)
    assert (caught.value.code, caught.value.status, caught.value.detail) == (code, 400, path)


def slot(weekdays: list, time: str = "09:00", assignee_ref: str = "Agent A") -> dict:
    """A slot object."""
    return {"weekdays": weekdays, "time": time, "assignee_ref": assignee_ref}


# --- published constants ------------------------------------------------------------------------

def test_limits_follow_the_spec():
    assert {key: LIMITS[key] for key in (
        "rules_per_tenant", "revisions_per_rule", "slots", "keywords", "keyword_chars", "semantic_labels",
        "semantic_label_chars", "min_confidence_low", "min_confidence_high", "max_actions", "preview_samples",
        "semantic_preview_samples", "keyword_text_chars")} == {
        "rules_per_tenant": 20, "revisions_per_rule": 100, "slots": 7, "keywords": 10, "keyword_chars": 40,
        "semantic_labels": 10, "semantic_label_chars": 30, "min_confidence_low": 0.8, "min_confidence_high": 1,
        "max_actions": 100, "preview_samples": 100, "semantic_preview_samples": 10, "keyword_text_chars": 4000}
    assert (LIMITS["name_chars"], LIMITS["assignee_ref_chars"], LIMITS["sample_text_chars"],
            LIMITS["body_bytes"], LIMITS["versions_listed"]) == (80, 120, 4000, 32_000, 20)
    assert json.loads(json.dumps(LIMITS)) == LIMITS


def test_preview_example_is_valid_and_already_normalized():
    assert validate_rule(AUTOMATION_PREVIEW_EXAMPLE) == AUTOMATION_PREVIEW_EXAMPLE


def test_the_reserved_label_is_the_spec_s():
    assert RESERVED_LABEL == "无法判断"


def test_every_capability_a_rule_can_use_is_in_the_catalog():
    catalog = {row["id"] for row in CATALOG}
    assert set(validator.TRIGGER_CAPABILITIES) == set(TRIGGERS)
    used = {validator.KEYWORD_CAPABILITY, validator.SEMANTIC_CAPABILITY}
    used |= {capability for ids in validator.TRIGGER_CAPABILITIES.values() for capability in ids}
    assert used <= catalog


# --- the document -------------------------------------------------------------------------------

@pytest.mark.parametrize("rule", list(RULES.values()), ids=list(RULES))
def test_valid_rules_are_accepted_unchanged(rule):
    assert validate_rule(rule) == rule


@pytest.mark.parametrize("raw", [None, [], "rule", 1, True, 1.5, [WEEKLY]])
def test_non_object_is_refused_at_the_root(raw):
    assert_refused(raw, "$")


@pytest.mark.parametrize("name", SHAPES["definition"][0])
def test_every_property_but_semantic_is_required(name):
    assert_refused(changed(WEEKLY, (name,), DROP), name, MISSING)


def test_semantic_is_optional_and_an_absent_one_stays_absent():
    assert SHAPES["definition"][1] == ("semantic",)
    assert "semantic" not in validate_rule(KEYWORD)
    assert "semantic" not in validate_rule(WEEKLY)


@pytest.mark.parametrize("where", [
    ("slots", 0, "weekdays"), ("slots", 0, "time"), ("slots", 0, "assignee_ref"),
    ("semantic", "labels"), ("semantic", "min_confidence"),
])
def test_missing_nested_required_property_is_reported_at_its_path(where):
    rule = SEMANTIC if where[0] == "semantic" else WEEKLY
    assert_refused(changed(rule, where, DROP), json_path(where), MISSING)


@pytest.mark.parametrize("where", [
    ("cron",), ("script",), ("webhook",), ("description",), ("__proto__",), ("assignee_id",),
    ("slots", 0, "date"), ("slots", 0, "cron"), ("slots", 0, "timezone"),
    ("semantic", "threshold"), ("semantic", "prompt"),
])
def test_unknown_property_is_refused_at_every_level(where):
    assert_refused(changed(SEMANTIC if where[0] == "semantic" else WEEKLY, where, "x"), json_path(where))


def test_unknown_property_is_reported_before_a_missing_one():
    assert_refused(changed(changed(WEEKLY, ("name",), DROP), ("cron",), "* * * * *"), "cron")


def test_missing_property_is_reported_before_an_invalid_one():
    assert_refused(changed(changed(WEEKLY, ("name",), 5), ("max_actions",), DROP), "max_actions", MISSING)


@pytest.mark.parametrize("name", [*SHAPES["definition"][0], "semantic"])
def test_a_null_property_is_invalid_not_missing(name):
    assert_refused(changed(SEMANTIC, (name,), None), name)


def test_first_problem_in_spec_order_is_reported():
    rule = changed(changed(changed(WEEKLY, ("max_actions",), 0), ("keywords",), [1]), ("timezone",), "UTC")
    assert_refused(rule, "timezone")
    assert_refused(changed(SEMANTIC, ("semantic", "labels"), []), "semantic.labels")
    assert_refused(changed(changed(SEMANTIC, ("semantic", "labels"), []), ("keywords",), [5]), "keywords[0]")
    assert_refused(changed(changed(SEMANTIC, ("semantic", "labels"), []), ("statuses",), []), "semantic.labels")


def test_every_value_is_checked_before_the_consistency_rules():
    inconsistent = changed(WEEKLY, ("slots",), [])
    assert_refused(changed(inconsistent, ("max_actions",), 101), "max_actions")


# --- schema_version, name, timezone, trigger ----------------------------------------------------

@pytest.mark.parametrize("version", [1, 1.0])
def test_schema_version_is_the_json_number_one(version):
    result = validate_rule(changed(WEEKLY, ("schema_version",), version))
    assert result["schema_version"] == 1 and type(result["schema_version"]) is int


@pytest.mark.parametrize("version", [True, 2, 0, 1.5, "1", [1], {}])
def test_other_schema_versions_are_refused(version):
    assert_refused(changed(WEEKLY, ("schema_version",), version), "schema_version")


def test_name_is_trimmed_of_javascript_whitespace():
    assert validate_rule(changed(WEEKLY, ("name",), "\u3000 Rotation\t\ufeff"))["name"] == "Rotation"


def test_name_is_limited_to_80_utf16_units():
    for name in ("x" * 80, "😀" * 40, " " + "轮" * 80 + " "):
        validate_rule(changed(WEEKLY, ("name",), name))
    for name in ("x" * 81, "😀" * 40 + "x"):
        assert_refused(changed(WEEKLY, ("name",), name), "name")


@pytest.mark.parametrize("name", ["", "   ", "\n", "a\nb", "a\tb", "a\x00", "a\x7f", "a\x85", "a\u2028b",
                                  "a\ud800", 5, ["name"], True])
def test_invalid_names_are_refused(name):
    assert_refused(changed(WEEKLY, ("name",), name), "name")


@pytest.mark.parametrize("timezone", ["asia/shanghai", " Asia/Shanghai", "Asia/Shanghai ", "UTC", "Asia/Chongqing",
                                      "Asia/Hong_Kong", "+08:00", "", 8])
def test_timezone_is_exactly_asia_shanghai(timezone):
    assert validate_rule(WEEKLY)["timezone"] == "Asia/Shanghai"
    assert_refused(changed(WEEKLY, ("timezone",), timezone), "timezone")


@pytest.mark.parametrize("trigger", ["cron", "daily", "once", "Weekly", " weekly", "message.received",
                                     "form.submitted", "", 1])
def test_unknown_triggers_are_refused(trigger):
    assert_refused(changed(WEEKLY, ("trigger",), trigger), "trigger")


# --- slots --------------------------------------------------------------------------------------

def test_a_daily_schedule_is_one_slot_with_all_seven_weekdays():
    daily = changed(WEEKLY, ("slots",), [slot([7, 1, 2, 3, 4, 5, 6])])
    assert validate_rule(daily)["slots"] == [slot([7, 1, 2, 3, 4, 5, 6])]


def test_at_most_seven_slots():
    seven = [slot([day], f"0{day}:00") for day in range(1, 8)]
    validate_rule(changed(WEEKLY, ("slots",), seven))
    assert_refused(changed(WEEKLY, ("slots",), [*seven, slot([1], "23:00")]), "slots")


def test_integral_float_weekdays_are_stored_as_ints():
    result = validate_rule(changed(WEEKLY, ("slots", 0, "weekdays"), [1.0, 7.0]))
    assert result["slots"][0]["weekdays"] == [1, 7]
    assert all(type(day) is int for day in result["slots"][0]["weekdays"])


@pytest.mark.parametrize("weekdays, path", [
    ([], "slots[0].weekdays"), (list(range(1, 8)) + [1], "slots[0].weekdays"), (1, "slots[0].weekdays"),
    (None, "slots[0].weekdays"), ([0], "slots[0].weekdays[0]"), ([1, 8], "slots[0].weekdays[1]"),
    ([-1], "slots[0].weekdays[0]"), (["1"], "slots[0].weekdays[0]"), ([True], "slots[0].weekdays[0]"),
    ([1.5], "slots[0].weekdays[0]"), ([None], "slots[0].weekdays[0]"), ([float("nan")], "slots[0].weekdays[0]"),
    ([1, 1], "slots[0].weekdays[1]"), ([2, 3, 2.0], "slots[0].weekdays[2]"),
])
def test_invalid_weekdays_are_refused(weekdays, path):
    assert_refused(changed(WEEKLY, ("slots", 0, "weekdays"), weekdays), path)


@pytest.mark.parametrize("time", ["00:00", "23:59", "09:05", "12:30", "20:00"])
def test_beijing_times_are_two_digit_hours_and_minutes(time):
    assert validate_rule(changed(WEEKLY, ("slots", 0, "time"), time))["slots"][0]["time"] == time


@pytest.mark.parametrize("time", ["24:00", "9:00", "09:60", "9:5", "09:5", "0900", "09:00:00", "09-00", "09.00",
                                  " 09:00", "09:00 ", "09:00\n", "\uff10\uff19:00", "\u0660\u0669:00", "T09:00",
                                  "", "25:00", "-1:00", 900, 9.0, None, ["09:00"]])
def test_other_times_are_refused(time):
    assert_refused(changed(WEEKLY, ("slots", 0, "time"), time), "slots[0].time")


def test_slot_assignee_is_trimmed_and_limited_to_120_utf16_units():
    result = validate_rule(changed(WEEKLY, ("slots", 0, "assignee_ref"), "\t Agent A \u3000"))
    assert result["slots"][0]["assignee_ref"] == "Agent A"
    validate_rule(changed(WEEKLY, ("slots", 0, "assignee_ref"), "x" * 120))
    assert_refused(changed(WEEKLY, ("slots", 0, "assignee_ref"), "x" * 121), "slots[0].assignee_ref")


@pytest.mark.parametrize("ref", ["", "  ", "a\nb", "a\x00", None, 5, ["Agent A"]])
def test_a_slot_needs_an_assignee(ref):
    assert_refused(changed(WEEKLY, ("slots", 1, "assignee_ref"), ref), "slots[1].assignee_ref")


@pytest.mark.parametrize("slots", ["slot", None, {}, [None], ["09:00"], [[1, "09:00", "A"]]])
def test_slots_must_be_an_array_of_objects(slots):
    path = "slots" if not isinstance(slots, list) else "slots[0]"
    assert_refused(changed(WEEKLY, ("slots",), slots), path)


def test_a_repeated_weekday_and_time_is_refused_at_the_later_slots_weekday():
    slots = [slot([1, 2]), slot([5, 3]), slot([4, 2], assignee_ref="Agent B")]
    assert_refused(changed(WEEKLY, ("slots",), slots), "slots[2].weekdays[1]")
    assert_refused(changed(WEEKLY, ("slots",), [slot([1]), slot([1])]), "slots[1].weekdays[0]")


def test_the_same_weekday_at_other_times_and_the_same_time_on_other_weekdays_are_accepted():
    slots = [slot([1, 2], "09:00"), slot([1, 2], "18:00"), slot([3], "09:00"), slot([1], "09:01")]
    assert validate_rule(changed(WEEKLY, ("slots",), slots))["slots"] == slots


# --- assignee_ref, keywords ---------------------------------------------------------------------

def test_rule_assignee_is_trimmed_and_limited_to_120_utf16_units():
    assert validate_rule(changed(KEYWORD, ("assignee_ref",), " Billing desk\n"))["assignee_ref"] == "Billing desk"
    validate_rule(changed(KEYWORD, ("assignee_ref",), "😀" * 60))
    assert_refused(changed(KEYWORD, ("assignee_ref",), "😀" * 60 + "x"), "assignee_ref")


@pytest.mark.parametrize("ref", ["a\nb", "a\x1b", "\x85", None, 0, False, ["x"]])
def test_invalid_rule_assignees_are_refused(ref):
    assert_refused(changed(KEYWORD, ("assignee_ref",), ref), "assignee_ref")


def test_a_blank_rule_assignee_is_stored_empty():
    assert validate_rule(changed(WEEKLY, ("assignee_ref",), " \u3000 "))["assignee_ref"] == ""


def test_keywords_are_trimmed_and_limited_to_ten_of_40_utf16_units():
    keywords = [f" k{n} " for n in range(9)] + ["x" * 40]
    assert validate_rule(changed(KEYWORD, ("keywords",), keywords))["keywords"] == \
        [f"k{n}" for n in range(9)] + ["x" * 40]
    validate_rule(changed(KEYWORD, ("keywords",), ["😀" * 20]))
    assert_refused(changed(KEYWORD, ("keywords",), [f"k{n}" for n in range(11)]), "keywords")
    assert_refused(changed(KEYWORD, ("keywords",), ["a", "x" * 41]), "keywords[1]")
    assert_refused(changed(KEYWORD, ("keywords",), ["😀" * 20 + "x"]), "keywords[0]")


@pytest.mark.parametrize("keywords, path", [
    (["refund", ""], "keywords[1]"), (["  "], "keywords[0]"), (["a\nb"], "keywords[0]"), ([1], "keywords[0]"),
    ([None], "keywords[0]"), ("refund", "keywords"), (None, "keywords"), ({"refund": 1}, "keywords"),
    (["refund", "refund"], "keywords[1]"), (["refund", " refund "], "keywords[1]"),
])
def test_invalid_keywords_are_refused(keywords, path):
    assert_refused(changed(KEYWORD, ("keywords",), keywords), path)


@pytest.mark.parametrize("keywords", [["VIP", "vip"], ["Refund", "rEFUND"], ["Straße", "STRASSE"], ["ΣΑ", "σα"]])
def test_keywords_equal_ignoring_case_are_duplicates(keywords):
    assert_refused(changed(KEYWORD, ("keywords",), keywords), "keywords[1]")


# --- semantic -----------------------------------------------------------------------------------

def test_semantic_labels_are_trimmed_and_kept_in_order():
    result = validate_rule(changed(SEMANTIC, ("semantic", "labels"), [" 退款 ", "x" * 30, "Billing", "billing"]))
    assert result["semantic"]["labels"] == ["退款", "x" * 30, "Billing", "billing"]


def test_ten_semantic_labels_are_accepted():
    labels = [f"l{n}" for n in range(10)]
    assert validate_rule(changed(SEMANTIC, ("semantic", "labels"), labels))["semantic"]["labels"] == labels


@pytest.mark.parametrize("labels, path", [
    ([], "semantic.labels"), ([f"l{n}" for n in range(11)], "semantic.labels"), ("billing", "semantic.labels"),
    (None, "semantic.labels"), (["a", "a"], "semantic.labels[1]"), (["a", " a\t"], "semantic.labels[1]"),
    (["a", "x" * 31], "semantic.labels[1]"), (["😀" * 15 + "x"], "semantic.labels[0]"),
    (["无法判断"], "semantic.labels[0]"), (["a", "仍然无法判断的"], "semantic.labels[1]"),
    (["a", " 无法判断 "], "semantic.labels[1]"), (["a", ""], "semantic.labels[1]"), (["a", 1], "semantic.labels[1]"),
    (["a\nb"], "semantic.labels[0]"),
])
def test_invalid_semantic_labels_are_refused(labels, path):
    assert_refused(changed(SEMANTIC, ("semantic", "labels"), labels), path)


@pytest.mark.parametrize("confidence, stored", [(0.8, 0.8), (0.95, 0.95), (1, 1), (1.0, 1)])
def test_min_confidence_is_a_number_from_point_eight_to_one(confidence, stored):
    result = validate_rule(changed(SEMANTIC, ("semantic", "min_confidence"), confidence))
    assert result["semantic"]["min_confidence"] == stored
    assert type(result["semantic"]["min_confidence"]) is type(stored)


@pytest.mark.parametrize("confidence", [0.79, 0.7999999, 1.0000001, 1.5, 2, 0, -1, "0.9", True, None,
                                        float("nan"), float("inf"), 10 ** 400, [0.9]])
def test_other_confidences_are_refused(confidence):
    assert_refused(changed(SEMANTIC, ("semantic", "min_confidence"), confidence), "semantic.min_confidence")


@pytest.mark.parametrize("semantic", [[], "billing", True, 0.9, ["billing"]])
def test_semantic_must_be_an_object(semantic):
    assert_refused(changed(SEMANTIC, ("semantic",), semantic), "semantic")


# --- statuses, overwrite_assigned, max_actions --------------------------------------------------

@pytest.mark.parametrize("statuses", [["open"], ["pending"], ["open", "pending"], ["pending", "open"]])
def test_statuses_are_a_non_empty_subset_of_open_and_pending_kept_in_order(statuses):
    assert validate_rule(changed(WEEKLY, ("statuses",), statuses))["statuses"] == statuses


@pytest.mark.parametrize("statuses, path", [
    ([], "statuses"), (["open", "pending", "open"], "statuses"), ("open", "statuses"), (None, "statuses"),
    (["resolved"], "statuses[0]"), (["open", "closed"], "statuses[1]"), (["Open"], "statuses[0]"),
    ([" open"], "statuses[0]"), ([1], "statuses[0]"), (["open", "open"], "statuses[1]"),
])
def test_invalid_statuses_are_refused(statuses, path):
    assert STATUSES == ("open", "pending")
    assert_refused(changed(WEEKLY, ("statuses",), statuses), path)


@pytest.mark.parametrize("value", [True, False])
def test_overwrite_assigned_is_a_boolean(value):
    assert validate_rule(changed(WEEKLY, ("overwrite_assigned",), value))["overwrite_assigned"] is value


@pytest.mark.parametrize("value", ["false", "true", 0, 1, None, [], {}])
def test_overwrite_assigned_refuses_anything_but_a_boolean(value):
    assert_refused(changed(WEEKLY, ("overwrite_assigned",), value), "overwrite_assigned")


@pytest.mark.parametrize("value, stored", [(1, 1), (100, 100), (20.0, 20), (100.0, 100)])
def test_max_actions_is_an_integer_from_1_to_100(value, stored):
    result = validate_rule(changed(WEEKLY, ("max_actions",), value))
    assert result["max_actions"] == stored and type(result["max_actions"]) is int


@pytest.mark.parametrize("value", [0, 101, -5, 1.5, 99.9, "20", True, False, None, 1e300, 10 ** 400,
                                   float("inf"), float("nan"), [20]])
def test_other_max_actions_are_refused(value):
    assert_refused(changed(WEEKLY, ("max_actions",), value), "max_actions")


# --- consistency --------------------------------------------------------------------------------

def test_a_weekly_rule_needs_slots():
    assert_refused(changed(WEEKLY, ("slots",), []), "slots")


def test_a_weekly_rule_has_an_empty_rule_assignee():
    assert_refused(changed(WEEKLY, ("assignee_ref",), "Agent A"), "assignee_ref")


def test_a_weekly_rule_may_carry_a_keyword_or_a_semantic_filter():
    with_keywords = changed(WEEKLY, ("keywords",), ["refund"])
    with_semantic = changed(WEEKLY, ("semantic",), {"labels": ["billing"], "min_confidence": 0.9})
    assert validate_rule(with_keywords) == with_keywords
    assert validate_rule(with_semantic) == with_semantic


@pytest.mark.parametrize("trigger", ["manual_sample", "message_received"])
def test_sample_and_message_rules_have_no_slots(trigger):
    assert_refused(changed(changed(KEYWORD, ("trigger",), trigger), ("slots",), WEEKLY["slots"]), "slots")


@pytest.mark.parametrize("trigger", ["manual_sample", "message_received"])
@pytest.mark.parametrize("ref", ["", "   "])
def test_sample_and_message_rules_need_a_rule_assignee(trigger, ref):
    assert_refused(changed(changed(SEMANTIC, ("trigger",), trigger), ("assignee_ref",), ref), "assignee_ref")


@pytest.mark.parametrize("trigger", ["manual_sample", "message_received"])
def test_sample_and_message_rules_need_a_keyword_or_semantic_filter(trigger):
    unfiltered = changed(changed(KEYWORD, ("trigger",), trigger), ("keywords",), [])
    assert_refused(unfiltered, "keywords")
    for rule in (changed(KEYWORD, ("trigger",), trigger), changed(SEMANTIC, ("trigger",), trigger)):
        assert validate_rule(rule) == rule


@pytest.mark.parametrize("rule", [KEYWORD, WEEKLY, changed(KEYWORD, ("trigger",), "message_received")])
def test_semantic_excludes_non_empty_keywords(rule):
    both = changed(changed(rule, ("keywords",), ["refund"]), ("semantic",), SEMANTIC["semantic"])
    assert_refused(both, "semantic")


def test_consistency_problems_are_reported_in_table_order():
    everything_wrong = changed(changed(SEMANTIC, ("slots",), WEEKLY["slots"]), ("assignee_ref",), "")
    assert_refused(changed(everything_wrong, ("keywords",), ["refund"]), "slots")
    assert_refused(changed(changed(SEMANTIC, ("assignee_ref",), ""), ("keywords",), ["refund"]), "assignee_ref")
    assert_refused(changed(changed(WEEKLY, ("slots",), []), ("assignee_ref",), "A"), "slots")


# --- hash, assignees, capabilities --------------------------------------------------------------

def test_hash_is_stable_under_key_reordering():
    reordered = json.loads(json.dumps(SEMANTIC), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    assert list(reordered) != list(SEMANTIC)
    assert canonical_hash(validate_rule(reordered)) == canonical_hash(validate_rule(SEMANTIC))


def test_hash_is_sha256_of_canonical_json_and_changes_with_content():
    canonical = json.dumps(SEMANTIC, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert canonical_hash(SEMANTIC) == hashlib.sha256(canonical).hexdigest()
    assert canonical_hash(SEMANTIC) != canonical_hash(changed(SEMANTIC, ("semantic", "min_confidence"), 0.9))
    assert canonical_hash(validate_rule(changed(WEEKLY, ("max_actions",), 20.0))) == canonical_hash(WEEKLY)


def test_assignee_refs_name_every_non_empty_assignee_with_its_path():
    assert assignee_refs(WEEKLY) == [("slots[0].assignee_ref", "Agent A"), ("slots[1].assignee_ref", "Agent B")]
    assert assignee_refs(KEYWORD) == [("assignee_ref", "Billing desk")]
    both = {"assignee_ref": "Lead", "slots": [slot([1], assignee_ref="A"), slot([2], assignee_ref="")]}
    assert assignee_refs(both) == [("assignee_ref", "Lead"), ("slots[0].assignee_ref", "A")]


@pytest.mark.parametrize("rule, capabilities", [
    (WEEKLY, ["preview.rotation"]),
    (changed(WEEKLY, ("keywords",), ["vip"]), ["preview.keyword_routing", "preview.rotation"]),
    (changed(WEEKLY, ("semantic",), SEMANTIC["semantic"]), ["ai.semantic_routing", "preview.rotation"]),
    (KEYWORD, ["preview.keyword_routing"]),
    (changed(SEMANTIC, ("trigger",), "manual_sample"), ["ai.semantic_routing"]),
    (changed(KEYWORD, ("trigger",), "message_received"), ["event.message_received", "preview.keyword_routing"]),
    (SEMANTIC, ["ai.semantic_routing", "event.message_received"]),
])
def test_rule_capabilities_follow_trigger_and_filters(rule, capabilities):
    assert rule_capabilities(validate_rule(rule)) == capabilities


# --- properties ---------------------------------------------------------------------------------

PROPERTY_NAMES = sorted({name for required, optional in SHAPES.values() for name in (*required, *optional)}
                        | {"cron", "script", "__proto__", "date"})
ODD_TEXTS = ["", " ", "😀", "\x00", "\x85", "\ud800", "a\udfff", "\n", "无法判断", "Asia/Shanghai", "UTC", *TRIGGERS,
             *STATUSES, "resolved", "09:00", "24:00", "9:00", "23:59", "Agent A", "refund", "REFUND", "1"]
scalars = (st.none() | st.booleans() | st.integers(-3, 10) | st.integers() | st.floats()
           | st.sampled_from([0.8, 0.9, 1.0, 7.0, 20.0]) | st.sampled_from(ODD_TEXTS) | ODD_STRINGS)
json_values = random_json(PROPERTY_NAMES, scalars)


def _nodes(node, where: tuple = ()):
    """Every (path tuple, value) inside a JSON value, the root included."""
    yield where, node
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield from _nodes(child, (*where, key))


def _reportable(raw: object, code: str) -> set[str]:
    """The paths an error of `code` may name: a node of the input, or an absent required property."""
    if code == INVALID:
        return {printable(json_path(where)) or "$" for where, _ in _nodes(raw)}
    required = {name for names, _ in SHAPES.values() for name in names}
    return {printable(json_path((*where, name))) for where, node in _nodes(raw) if isinstance(node, dict)
            for name in required - set(node)}


def assert_only_definition_errors(raw: object) -> dict | None:
    """Validate; any refusal is a 400 with a definition code naming a path of the input."""
    try:
        return validate_rule(raw)
    except ApiError as error:
        assert error.code in (INVALID, MISSING) and error.status == 400
        assert error.detail in _reportable(raw, error.code)
        return None


def assert_normalization_is_idempotent(normalized: dict) -> None:
    """Re-validating a normalized rule changes nothing, its hash and capabilities included."""
    again = validate_rule(normalized)
    assert again == normalized
    assert canonical_hash(again) == canonical_hash(normalized)
    assert rule_capabilities(again) == rule_capabilities(normalized)
    assert json.loads(json.dumps(normalized, ensure_ascii=False)) == normalized


@PROPERTY_SETTINGS
@given(json_values)
def test_random_json_is_refused_only_with_definition_errors(raw):
    assert_only_definition_errors(raw)


@PROPERTY_SETTINGS
@given(st.fixed_dictionaries({name: json_values for name in SEMANTIC}))
def test_rule_shaped_random_json_is_refused_only_with_definition_errors(raw):
    assert_only_definition_errors(raw)


@PROPERTY_SETTINGS
@given(mutated([WEEKLY, KEYWORD, SEMANTIC, AUTOMATION_PREVIEW_EXAMPLE], PROPERTY_NAMES, json_values))
def test_mutated_rules_validate_idempotently_or_are_refused_at_a_path_of_the_input(raw):
    normalized = assert_only_definition_errors(raw)
    if normalized is not None:
        assert_normalization_is_idempotent(normalized)


@PROPERTY_SETTINGS
@given(valid_rules())
def test_valid_rules_are_fixed_points_of_normalization(raw):
    normalized = validate_rule(raw)
    assert_normalization_is_idempotent(normalized)
    assert canonical_hash(validate_rule(raw)) == canonical_hash(normalized)
    assert not any(isinstance(value, float) and value.is_integer() for _, value in _nodes(normalized))
