"""The rule engine: per-type input validation, strict operators and the evaluation order."""
import copy

import pytest

from core.api import ApiError
from studio.engine import apply_rules, run_rules, validate_input

FIELDS = [
    {"key": "title", "label": "Title", "type": "text", "required": True},
    {"key": "note", "label": "Note", "type": "textarea", "required": False},
    {"key": "amount", "label": "Amount", "type": "number", "required": False},
    {"key": "due", "label": "Due", "type": "date", "required": False},
    {"key": "priority", "label": "Priority", "type": "select", "required": False,
     "options": ["low", "high", "5"]},
    {"key": "urgent", "label": "Urgent", "type": "checkbox", "required": False},
    {"key": "tag", "label": "Tag", "type": "text", "required": False},
]


def definition(rules: list | None = None, fields: list | None = None) -> dict:
    """A normalized definition with the given rules (and fields)."""
    fields = fields or FIELDS
    return {"schema_version": 1, "name": "Requests", "description": "Requests.",
            "page": {"title": "New", "description": "Fill in.", "columns": 1, "submit_label": "Save"},
            "fields": fields, "table_columns": [fields[0]["key"]],
            "workflow": {"trigger": "form.submitted", "rules": rules or []}}


def rule(field: str, operator: str, value, target: str = "priority", then="high", name: str = "R") -> dict:
    """One workflow rule."""
    return {"name": name, "when": {"field": field, "operator": operator, "value": value},
            "then": {"field": target, "value": then}}


def matches(condition: tuple, data: dict) -> bool:
    """Whether a single rule with this (field, operator, value) condition matches `data`."""
    result = apply_rules(definition([rule(*condition)]), data)
    return result["trace"][0]["matched"]


def refused(raw_input, fields: list | None = None) -> tuple[str, str]:
    """The (code, detail) with which validation refuses `raw_input`."""
    with pytest.raises(ApiError) as caught:
        validate_input(definition(fields=fields), raw_input)
    assert caught.value.status == 400
    return caught.value.code, caught.value.detail


def accepted(raw_input: dict) -> dict:
    """The clean data validation keeps for `raw_input` (title filled in when absent)."""
    return validate_input(definition(), {"title": "T", **raw_input})


# --- operators ---------------------------------------------------------------------------

@pytest.mark.parametrize("field, value, data", [
    ("title", "Printer", {"title": "Printer"}),
    ("note", "a\nb", {"title": "T", "note": "a\nb"}),
    ("amount", 5, {"title": "T", "amount": 5}),
    ("due", "2026-01-05", {"title": "T", "due": "2026-01-05"}),
    ("priority", "low", {"title": "T", "priority": "low"}),
    ("urgent", False, {"title": "T", "urgent": False}),
])
def test_equals_matches_the_same_value_on_every_field_type(field, value, data):
    assert matches((field, "equals", value), data)
    assert not matches((field, "not_equals", value), data)


@pytest.mark.parametrize("field, value, data", [
    ("title", "Printer", {"title": "Scanner"}),
    ("note", "a", {"title": "T", "note": "b"}),
    ("amount", 5, {"title": "T", "amount": 6}),
    ("due", "2026-01-05", {"title": "T", "due": "2026-01-06"}),
    ("priority", "low", {"title": "T", "priority": "high"}),
    ("urgent", False, {"title": "T", "urgent": True}),
])
def test_not_equals_matches_a_different_value_on_every_field_type(field, value, data):
    assert matches((field, "not_equals", value), data)
    assert not matches((field, "equals", value), data)


def test_equals_treats_integer_and_decimal_forms_of_a_number_as_equal():
    assert matches(("amount", "equals", 5), {"title": "T", "amount": 5.0})


def test_equals_does_not_convert_a_numeric_string_to_a_number():
    assert not matches(("priority", "equals", 5), {"title": "T", "priority": "5"})
    assert matches(("priority", "not_equals", 5), {"title": "T", "priority": "5"})
    assert not matches(("amount", "equals", "5"), {"title": "T", "amount": 5})


def test_equals_does_not_treat_booleans_as_numbers():
    assert not matches(("urgent", "equals", 1), {"title": "T", "urgent": True})
    assert not matches(("amount", "equals", True), {"title": "T", "amount": 1})
    assert not matches(("amount", "equals", False), {"title": "T", "amount": 0})
    assert matches(("urgent", "not_equals", 1), {"title": "T", "urgent": True})


def test_equals_is_case_sensitive():
    assert not matches(("title", "equals", "printer"), {"title": "Printer"})


@pytest.mark.parametrize("operator, expected", [
    ("gte", {99: False, 100: True, 101: True}),
    ("gt", {99: False, 100: False, 101: True}),
    ("lt", {99: True, 100: False, 101: False}),
    ("lte", {99: True, 100: True, 101: False}),
])
def test_ordering_operators_compare_numbers(operator, expected):
    for amount, result in expected.items():
        assert matches(("amount", operator, 100), {"title": "T", "amount": amount}) is result


def test_ordering_operators_handle_decimals_and_negatives():
    assert matches(("amount", "gt", -1.5), {"title": "T", "amount": -1.25})
    assert matches(("amount", "lt", 0), {"title": "T", "amount": -0.5})


@pytest.mark.parametrize("operator", ["gte", "gt", "lt", "lte"])
def test_ordering_operators_never_compare_strings_or_booleans_with_numbers(operator):
    assert not matches(("priority", operator, 5), {"title": "T", "priority": "5"})
    assert not matches(("urgent", operator, 0), {"title": "T", "urgent": True})
    assert not matches(("amount", operator, "5"), {"title": "T", "amount": 5})


@pytest.mark.parametrize("field, data", [
    ("title", {"title": "Broken Printer tray"}),
    ("note", {"title": "T", "note": "line one\nBroken Printer tray"}),
])
def test_text_operators_are_case_sensitive_on_text_and_textarea(field, data):
    assert matches((field, "contains", "Printer"), data)
    assert not matches((field, "contains", "printer"), data)
    assert not matches((field, "contains", "Scanner"), data)
    assert matches((field, "ends_with", "tray"), data)
    assert not matches((field, "ends_with", "Tray"), data)
    assert not matches((field, "ends_with", "Printer"), data)


def test_starts_with_is_a_case_sensitive_prefix():
    assert matches(("title", "starts_with", "Broken"), {"title": "Broken printer"})
    assert not matches(("title", "starts_with", "broken"), {"title": "Broken printer"})
    assert not matches(("title", "starts_with", "printer"), {"title": "Broken printer"})
    assert matches(("note", "starts_with", "line"), {"title": "T", "note": "line one\nline two"})
    assert not matches(("note", "starts_with", "two"), {"title": "T", "note": "line one\nline two"})


@pytest.mark.parametrize("condition", [
    ("tag", "equals", "x"), ("tag", "not_equals", "x"), ("amount", "gte", 0), ("amount", "gt", 0),
    ("amount", "lt", 0), ("amount", "lte", 0), ("tag", "contains", ""), ("tag", "starts_with", ""),
    ("tag", "ends_with", ""), ("urgent", "not_equals", True), ("due", "not_equals", "2026-01-05"),
])
def test_no_operator_matches_an_unfilled_optional_field(condition):
    assert not matches(condition, {"title": "T"})


def test_not_equals_does_not_match_unfilled_optional_field():
    assert not matches(("priority", "not_equals", "high"), {"title": "T"})


# --- evaluation order --------------------------------------------------------------------

def test_conditions_read_the_original_input_not_an_earlier_rule_output():
    rules = [rule("priority", "equals", "low", then="high", name="Raise"),
             rule("priority", "equals", "high", then="low", name="Lower")]
    result = apply_rules(definition(rules), {"title": "T", "priority": "low"})
    assert result["data"]["priority"] == "high"
    assert [entry["matched"] for entry in result["trace"]] == [True, False]


def test_a_rule_does_not_see_a_field_an_earlier_rule_filled_in():
    rules = [rule("title", "equals", "T", target="tag", then="set", name="Fill"),
             rule("tag", "equals", "set", target="priority", then="high", name="Chain")]
    result = apply_rules(definition(rules), {"title": "T"})
    assert result["data"] == {"title": "T", "tag": "set"}
    assert [entry["matched"] for entry in result["trace"]] == [True, False]


def test_the_last_matching_rule_wins_on_the_same_target():
    rules = [rule("amount", "gte", 10, then="low", name="First"),
             rule("amount", "gte", 100, then="high", name="Second"),
             rule("amount", "gte", 1000, then="low", name="Third")]
    result = apply_rules(definition(rules), {"title": "T", "amount": 500})
    assert result["data"]["priority"] == "high"


def test_trace_has_one_entry_per_rule_in_rule_order():
    rules = [rule("amount", "gte", 100, then="high", name="Big"),
             rule("amount", "lt", 100, then="low", name="Small"),
             rule("title", "contains", "VIP", target="urgent", then=True, name="VIP")]
    result = apply_rules(definition(rules), {"title": "VIP order", "amount": 250})
    assert result["trace"] == [
        {"rule": "Big", "matched": True, "field": "priority"},
        {"rule": "Small", "matched": False, "field": "priority"},
        {"rule": "VIP", "matched": True, "field": "urgent"},
    ]
    assert result["data"] == {"title": "VIP order", "amount": 250, "priority": "high", "urgent": True}


def test_rules_never_have_external_effects():
    assert apply_rules(definition([rule("amount", "gte", 1)]), {"title": "T"})["external_effects"] is False


def test_without_rules_the_record_is_saved_as_entered():
    assert apply_rules(definition(), {"title": "T", "amount": 3}) == {
        "data": {"title": "T", "amount": 3}, "trace": [], "external_effects": False}


def test_applying_rules_does_not_mutate_the_input():
    data = {"title": "T", "amount": 500, "priority": "low"}
    before = copy.deepcopy(data)
    result = apply_rules(definition([rule("amount", "gte", 100)]), data)
    assert data == before
    assert result["data"] is not data


def test_result_keeps_the_definition_field_order():
    result = apply_rules(definition([rule("amount", "gte", 100)]), {"amount": 500, "title": "T"})
    assert list(result["data"]) == ["title", "amount", "priority"]


def test_rules_cannot_fill_a_missing_required_field():
    rules = [rule("amount", "gte", 0, target="title", then="Filled")]
    with pytest.raises(ApiError) as caught:
        run_rules(definition(rules), {"amount": 1})
    assert (caught.value.code, caught.value.detail) == ("required_field_missing", "input.title")


def test_run_rules_validates_then_applies_the_rules():
    result = run_rules(definition([rule("amount", "gte", 100)]), {"title": "T", "amount": 150})
    assert result["data"] == {"title": "T", "amount": 150, "priority": "high"}


# --- input: the object itself --------------------------------------------------------------

@pytest.mark.parametrize("raw_input", [None, [], "title", 3, True])
def test_input_that_is_not_an_object_is_refused(raw_input):
    assert refused(raw_input) == ("invalid_json", "input")


def test_unknown_key_is_refused():
    assert refused({"title": "T", "script": "x"}) == ("invalid_json", "input.script")


def test_clean_data_keeps_provided_fields_in_definition_order():
    assert list(validate_input(definition(), {"amount": 1, "tag": "x", "title": "T"})) == \
        ["title", "amount", "tag"]


# --- input: required and optional --------------------------------------------------------

@pytest.mark.parametrize("raw_input", [{}, {"title": None}, {"title": ""}, {"title": "   "},
                                       {"title": "\t"}])
def test_required_field_missing_null_empty_or_blank_is_refused(raw_input):
    assert refused(raw_input) == ("required_field_missing", "input.title")


@pytest.mark.parametrize("field_type, extra", [("number", {}), ("date", {}), ("textarea", {}),
                                               ("select", {"options": ["a"]}), ("checkbox", {})])
def test_required_field_of_any_type_cannot_be_left_out(field_type, extra):
    fields = [{"key": "f", "label": "F", "type": field_type, "required": True, **extra}]
    assert refused({}, fields) == ("required_field_missing", "input.f")
    assert refused({"f": None}, fields) == ("required_field_missing", "input.f")
    assert refused({"f": ""}, fields) == ("required_field_missing", "input.f")


@pytest.mark.parametrize("key", ["note", "amount", "due", "priority", "urgent", "tag"])
@pytest.mark.parametrize("value", [None, ""])
def test_optional_field_null_or_empty_is_not_stored(key, value):
    assert accepted({key: value}) == {"title": "T"}


def test_optional_field_left_out_is_not_stored():
    assert accepted({}) == {"title": "T"}


@pytest.mark.parametrize("key", ["tag", "note"])
def test_whitespace_only_optional_text_is_refused(key):
    assert refused({"title": "T", key: "  "}) == ("invalid_json", f"input.{key}")


def test_submitted_text_is_stored_as_sent_without_trimming():
    assert accepted({"tag": "  padded  "})["tag"] == "  padded  "


# --- input: text and textarea ------------------------------------------------------------

def test_text_of_200_utf16_units_is_accepted_and_201_refused():
    assert accepted({"tag": "a" * 200})["tag"] == "a" * 200
    assert refused({"title": "a" * 201}) == ("invalid_json", "input.title")


def test_text_length_counts_an_emoji_as_two_utf16_units():
    assert accepted({"tag": "😀" * 100})["tag"] == "😀" * 100
    assert refused({"title": "T", "tag": "a" + "😀" * 100}) == ("invalid_json", "input.tag")


def test_text_length_counts_a_bmp_character_as_one_unit():
    assert accepted({"tag": "é" * 200})["tag"] == "é" * 200


@pytest.mark.parametrize("value", ["a\nb", "a\rb", "a\r\nb"])
def test_newline_in_text_is_refused(value):
    assert refused({"title": value}) == ("invalid_json", "input.title")


@pytest.mark.parametrize("value", ["a\x00b", "a\x0bb", "a\x1bb", "a\x85b", "a\u2028b", "a\u2029b", "a\x7fb"])
def test_control_characters_in_text_are_refused(value):
    assert refused({"title": value}) == ("invalid_json", "input.title")


@pytest.mark.parametrize("value", ["a\x00b", "a\x0bb", "a\x1bb", "a\x85b", "a\x7fb"])
def test_control_characters_in_textarea_are_refused(value):
    assert refused({"title": "T", "note": value}) == ("invalid_json", "input.note")


def test_tab_and_line_breaks_are_the_controls_a_textarea_takes():
    assert accepted({"note": "a\tb\nc\r\nd\u2028e"})["note"] == "a\tb\nc\r\nd\u2028e"


@pytest.mark.parametrize("value", ["\ufeff", "\u3000", "\xa0 \u2028"])
def test_javascript_whitespace_alone_is_not_a_filled_required_text(value):
    assert refused({"title": value}) == ("required_field_missing", "input.title")


def test_newline_in_textarea_is_accepted():
    assert accepted({"note": "one\ntwo\r\nthree"})["note"] == "one\ntwo\r\nthree"


def test_textarea_of_2000_utf16_units_is_accepted_and_2001_refused():
    assert accepted({"note": "a" * 1998 + "😀"})["note"] == "a" * 1998 + "😀"
    assert refused({"title": "T", "note": "a" * 1999 + "😀"}) == ("invalid_json", "input.note")


def test_text_with_a_lone_surrogate_is_refused():
    assert refused({"title": "bad \ud800"}) == ("invalid_json", "input.title")


@pytest.mark.parametrize("value", [5, True, ["a"], {"a": 1}])
def test_text_that_is_not_a_string_is_refused(value):
    assert refused({"title": "T", "tag": value}) == ("invalid_json", "input.tag")
    assert refused({"title": "T", "note": value}) == ("invalid_json", "input.note")


# --- input: number -----------------------------------------------------------------------

@pytest.mark.parametrize("value", [0, -3, 2.5, -0.75, 1e12, -1e12, 10 ** 12])
def test_number_accepts_finite_values_within_one_trillion(value):
    assert accepted({"amount": value})["amount"] == value


@pytest.mark.parametrize("value", [10 ** 12 + 1, 1e12 + 1, -(10 ** 12) - 1, 1e300])
def test_number_beyond_one_trillion_is_refused(value):
    assert refused({"title": "T", "amount": value}) == ("invalid_json", "input.amount")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_number_is_refused(value):
    assert refused({"title": "T", "amount": value}) == ("invalid_json", "input.amount")


@pytest.mark.parametrize("value", [True, False, "12", "1e3", [1], {"v": 1}])
def test_number_refuses_booleans_and_numeric_strings(value):
    assert refused({"title": "T", "amount": value}) == ("invalid_json", "input.amount")


# --- input: date -------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["2024-02-29", "2026-01-05", "2026-12-31"])
def test_real_calendar_date_is_accepted(value):
    assert accepted({"due": value})["due"] == value


@pytest.mark.parametrize("value", ["2026-02-29", "2026-02-30", "2026-13-01", "2026-00-10",
                                   "2026-1-5", "2026-01-05T00:00", "2026-01-05Z", "2026-01-05\n",
                                   "20260105", "2026-W01-1", "٢٠٢٦-٠١-٠٥", 20260105])
def test_date_that_is_not_a_plain_real_yyyy_mm_dd_is_refused(value):
    assert refused({"title": "T", "due": value}) == ("invalid_json", "input.due")


# --- input: select and checkbox ----------------------------------------------------------

def test_select_accepts_one_of_its_options():
    assert accepted({"priority": "high"})["priority"] == "high"


@pytest.mark.parametrize("value", ["High", "medium", " high", 5, ["high"]])
def test_select_refuses_anything_but_an_exact_option(value):
    assert refused({"title": "T", "priority": value}) == ("invalid_json", "input.priority")


@pytest.mark.parametrize("value", [True, False])
def test_checkbox_accepts_true_and_false(value):
    assert accepted({"urgent": value})["urgent"] is value


def test_required_checkbox_accepts_false():
    fields = [{"key": "agree", "label": "Agree", "type": "checkbox", "required": True}]
    assert validate_input(definition(fields=fields), {"agree": False}) == {"agree": False}


@pytest.mark.parametrize("value", ["true", 1, 0, "on"])
def test_checkbox_refuses_anything_but_a_boolean(value):
    assert refused({"title": "T", "urgent": value}) == ("invalid_json", "input.urgent")
