"""The definition validator: every spec rule accepted and refused, with the JSON path of the problem."""
import copy
import hashlib
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.api import ApiError
from core.capabilities import CAPABILITY_VERSION, CATALOG, FIELD_TYPES, OPERATORS
from studio.catalog import LIMITS, PUBLISH_PERMISSIONS, STARTER_DEFINITION
from core.validation import canonical_hash
from studio.definition import capability_manifest, field_map, validate_definition
from core.text import JS_WHITESPACE
from tests.support.app_definitions import BASE, FIELDS, FULL
from tests.support.definitions import (DROP, INVALID, MISSING, ODD_STRINGS, PROPERTY_SETTINGS, changed, json_path,
                                       mutated, padded, plain_texts, random_json)


def refusal(definition: object) -> ApiError:
    """The error the validator raises."""
    with pytest.raises(ApiError) as caught:
        validate_definition(definition)
    return caught.value


def assert_refused(definition: object, path: str, code: str = INVALID) -> None:
    """Refused with this code, status 400 and this path."""
    error = refusal(definition)
    assert (error.code, error.status, error.detail) == (code, 400, path)


def with_rule(when_field: str, operator: str, value, then_field: str = "title", then_value="x") -> dict:
    """BASE with a single rule."""
    rule = {"name": "R", "when": {"field": when_field, "operator": operator, "value": value},
            "then": {"field": then_field, "value": then_value}}
    return changed(BASE, ("workflow", "rules"), [rule])


# --- published constants ------------------------------------------------------------------------

def test_catalog_lists_every_capability_of_the_spec_with_a_known_status():
    ids = [row["id"] for row in CATALOG]
    expected = {"ui.form", "ui.table", "event.form_submitted", "record.create", "record.set_field",
                "workbench.customer_context", "preview.rotation", "preview.keyword_routing",
                "automation.plan_management", "automation.execute_plan", "conversation.assign",
                "schedule.execute", "event.message_received", "ui.chart", "ai.classify_conversation",
                "ui.custom_workbench", "code.execute", "ai.semantic_routing", "knowledge.read", "http.request",
                "message.broadcast", "payment.refund", "sql.execute"}
    expected |= {f"field.{kind}" for kind in FIELD_TYPES} | {f"rule.{op}" for op in OPERATORS}
    assert len(ids) == len(set(ids)) and set(ids) == expected
    assert all(set(row) == {"id", "meaning", "status"} and row["meaning"] for row in CATALOG)
    statuses = {row["id"]: row["status"] for row in CATALOG}
    assert set(statuses.values()) == {"available", "manual_only", "preview_only", "unavailable"}
    assert statuses["payment.refund"] == statuses["sql.execute"] == "unavailable"
    assert [i for i, s in statuses.items() if s == "unavailable"] == ["payment.refund", "sql.execute"]
    assert CAPABILITY_VERSION == "2026-10-09.1"


def test_every_capability_a_definition_can_use_is_in_the_catalog():
    assert set(capability_manifest(validate_definition(FULL))) <= {row["id"] for row in CATALOG}


def test_limits_and_permissions_follow_the_spec():
    assert PUBLISH_PERMISSIONS == ["extension.records.read", "extension.records.create",
                                   "extension.records.transform"]
    assert {k: LIMITS[k] for k in ("apps_per_tenant", "versions_per_app", "records_per_app", "fields", "rules",
                                   "charts", "actions", "definition_bytes", "body_bytes", "script_source_chars")} \
        == {"apps_per_tenant": 20, "versions_per_app": 100, "records_per_app": 1000, "fields": 12, "rules": 8,
            "charts": 3, "actions": 2, "definition_bytes": 24_000, "body_bytes": 32_000,
            "script_source_chars": 8_000}
    assert json.loads(json.dumps(LIMITS)) == LIMITS


def test_starter_definition_is_valid_and_already_normalized():
    assert validate_definition(STARTER_DEFINITION) == STARTER_DEFINITION
    assert 4 <= len(STARTER_DEFINITION["fields"]) <= 5 and STARTER_DEFINITION["workflow"]["rules"]


def test_operator_table_matches_the_spec():
    assert OPERATORS == {"equals": FIELD_TYPES, "not_equals": FIELD_TYPES, "gte": ("number",), "gt": ("number",),
                         "lt": ("number",), "lte": ("number",), "contains": ("text", "textarea"),
                         "starts_with": ("text", "textarea"), "ends_with": ("text", "textarea")}


# --- the document -------------------------------------------------------------------------------

def test_full_definition_is_accepted_unchanged():
    assert validate_definition(FULL) == FULL


@pytest.mark.parametrize("raw", [None, [], "definition", 1, True, 1.5])
def test_non_object_is_refused_at_the_root(raw):
    assert_refused(raw, "$")


@pytest.mark.parametrize("name", ["schema_version", "name", "description", "page", "fields", "table_columns",
                                  "workflow"])
def test_missing_required_property_is_reported_as_missing(name):
    assert_refused(changed(BASE, (name,), DROP), name, MISSING)


@pytest.mark.parametrize("where", [
    ("page", "title"), ("page", "description"), ("page", "columns"), ("page", "submit_label"),
    ("fields", 0, "key"), ("fields", 0, "label"), ("fields", 0, "type"), ("fields", 0, "required"),
    ("fields", 4, "options"), ("workflow", "trigger"), ("workflow", "rules"),
    ("workflow", "rules", 0, "name"), ("workflow", "rules", 0, "when"), ("workflow", "rules", 0, "then"),
    ("workflow", "rules", 0, "when", "field"), ("workflow", "rules", 0, "when", "operator"),
    ("workflow", "rules", 0, "when", "value"), ("workflow", "rules", 0, "then", "field"),
    ("workflow", "rules", 0, "then", "value"),
    ("charts", 0, "key"), ("charts", 0, "title"), ("charts", 0, "type"), ("charts", 0, "group_by"),
    ("charts", 0, "metric"), ("charts", 1, "value_field"), ("code", "language"), ("code", "source"),
    ("intent", "labels"), ("actions", 0, "key"), ("actions", 0, "title"), ("actions", 0, "kind"),
    ("actions", 0, "fields"), ("actions", 1, "name_field"), ("actions", 1, "content_field"),
])
def test_missing_nested_required_property_is_reported_at_its_path(where):
    assert_refused(changed(FULL, where, DROP), json_path(where), MISSING)


@pytest.mark.parametrize("where", [
    ("script",), ("html",), ("api_url",), ("automation_preview",), ("page", "html"), ("fields", 0, "default"),
    ("fields", 0, "hidden"), ("table_columns_extra",), ("workflow", "api_url"),
    ("workflow", "rules", 0, "else"), ("workflow", "rules", 0, "when", "regex"),
    ("workflow", "rules", 0, "then", "expression"), ("charts", 0, "color"), ("code", "timeout"),
    ("workbench", "css"), ("intent", "threshold"), ("actions", 0, "endpoint"), ("actions", 1, "send_now"),
])
def test_unknown_property_is_refused_at_every_level(where):
    assert_refused(changed(FULL, where, "x"), json_path(where))


def test_unknown_property_is_reported_before_a_missing_one():
    definition = changed(changed(BASE, ("name",), DROP), ("script",), "alert(1)")
    assert_refused(definition, "script")


def test_first_problem_in_spec_order_is_reported():
    definition = changed(changed(BASE, ("workflow", "trigger"), "cron"), ("page", "columns"), 3)
    assert_refused(definition, "page.columns")


def test_input_is_not_modified_and_output_is_a_fresh_copy():
    raw = changed(FULL, ("name",), "  Requests  ")
    snapshot = copy.deepcopy(raw)
    result = validate_definition(raw)
    assert raw == snapshot
    result["fields"][0]["label"] = "changed"
    assert raw["fields"][0]["label"] == "Title"


# --- schema_version and numbers -----------------------------------------------------------------

@pytest.mark.parametrize("value", [1, 1.0])
def test_schema_version_one_is_accepted_as_the_integer_one(value):
    result = validate_definition(changed(BASE, ("schema_version",), value))
    assert result["schema_version"] == 1 and type(result["schema_version"]) is int


@pytest.mark.parametrize("value", [True, "1", 1.5, 2, 0, None, [1], math.nan])
def test_schema_version_other_than_the_number_one_is_refused(value):
    assert_refused(changed(BASE, ("schema_version",), value), "schema_version")


@pytest.mark.parametrize("value", [1, 2, 2.0])
def test_page_columns_one_or_two_is_accepted(value):
    assert validate_definition(changed(BASE, ("page", "columns"), value))["page"]["columns"] == int(value)


@pytest.mark.parametrize("value", [0, 3, True, "2", 1.5, None])
def test_page_columns_other_values_are_refused(value):
    assert_refused(changed(BASE, ("page", "columns"), value), "page.columns")


# --- strings ------------------------------------------------------------------------------------

@pytest.mark.parametrize("where, limit", [
    (("name",), 60), (("description",), 400), (("page", "title"), 80), (("page", "description"), 400),
    (("page", "submit_label"), 30), (("fields", 0, "label"), 60), (("fields", 4, "options", 0), 60),
    (("workflow", "rules", 0, "name"), 80),
])
def test_text_length_limit_is_inclusive(where, limit):
    validate_definition(changed(BASE, where, "a" * limit))
    assert_refused(changed(BASE, where, "a" * (limit + 1)), json_path(where))


def test_length_is_counted_in_utf16_units_like_javascript():
    assert validate_definition(changed(BASE, ("fields", 0, "label"), "😀" * 30))["fields"][0]["label"] == "😀" * 30
    assert_refused(changed(BASE, ("fields", 0, "label"), "😀" * 60), "fields[0].label")
    assert_refused(changed(BASE, ("fields", 0, "label"), "😀" * 30 + "a"), "fields[0].label")
    validate_definition(changed(BASE, ("fields", 0, "label"), "中" * 60))  # BMP characters count one


def test_texts_are_trimmed_before_storage_and_counting():
    definition = changed(BASE, ("name",), "  Requests\n")
    definition = changed(definition, ("page", "title"), "\u3000New request\ufeff")
    definition = changed(definition, ("fields", 0, "label"), "\t" + "a" * 60 + "  ")
    result = validate_definition(definition)
    assert (result["name"], result["page"]["title"], result["fields"][0]["label"]) == \
        ("Requests", "New request", "a" * 60)


@pytest.mark.parametrize("value", ["", "   ", "\n\t", "\u3000", 5, None, True, ["a"], {"a": 1}])
def test_blank_or_non_string_text_is_refused(value):
    assert_refused(changed(BASE, ("name",), value), "name")


@pytest.mark.parametrize("value", ["a\x00b", "a\x07b", "a\x1bb", "a\x7fb", "a\x85b", "a\x9fb", "a\nb", "a\rb",
                                   "a\tb", "a\x1f"])
def test_control_characters_are_refused_in_single_line_texts(value):
    assert_refused(changed(BASE, ("page", "submit_label"), value), "page.submit_label")


def test_newlines_and_tabs_are_allowed_in_descriptions_only():
    result = validate_definition(changed(BASE, ("description",), "Line one\n\tLine two\r\nEnd"))
    assert result["description"] == "Line one\n\tLine two\r\nEnd"
    validate_definition(changed(BASE, ("page", "description"), "a\nb"))
    assert_refused(changed(BASE, ("description",), "a\x00b"), "description")
    assert_refused(changed(BASE, ("page", "description"), "a\x0bb"), "page.description")


@pytest.mark.parametrize("value", ["a\ud800", "\udfffa", "a\ud83d\ude00"])
def test_lone_surrogates_are_refused(value):
    assert_refused(changed(BASE, ("name",), value), "name")


def test_serialized_definition_over_24000_bytes_is_refused_at_the_root():
    def field(index: int, option_count: int) -> dict:
        options = [f"{'选' * 56}{index:02d}{n:02d}" for n in range(option_count)]
        return {"key": f"f{index}", "label": "L", "type": "select", "required": False, "options": options}

    small = changed(BASE, ("fields",), [field(i, 10) for i in range(12)])
    small = changed(small, ("table_columns",), ["f0"])
    small = changed(small, ("workflow", "rules"), [])
    result = validate_definition(small)
    assert len(json.dumps(result, ensure_ascii=False, separators=(",", ":")).encode()) < 24_000
    big = changed(small, ("fields",), [field(i, 12) for i in range(12)])
    assert_refused(big, "$")


# --- fields -------------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["a", "a1", "a_b", "z" * 32, "ids", "tenant"])
def test_field_key_pattern_accepts_lowercase_identifiers(key):
    assert validate_definition(changed(BASE, ("fields", 1, "key"), key))["fields"][1]["key"] == key


@pytest.mark.parametrize("key", ["", "A", "aB", "1a", "_a", "a-b", "a b", " a", "a\n", "z" * 33, "é", 5, None])
def test_field_key_pattern_refuses_other_strings(key):
    assert_refused(changed(BASE, ("fields", 1, "key"), key), "fields[1].key")


@pytest.mark.parametrize("key", ["id", "tenant_id", "constructor", "prototype", "__proto__"])
def test_reserved_field_keys_are_refused(key):
    assert_refused(changed(BASE, ("fields", 1, "key"), key), "fields[1].key")


def test_duplicate_field_key_is_refused_at_the_repeat():
    assert_refused(changed(BASE, ("fields", 3, "key"), "notes"), "fields[3].key")


@pytest.mark.parametrize("value", ["email", "Text", "file", "", None, 1])
def test_unknown_field_type_is_refused(value):
    assert_refused(changed(BASE, ("fields", 0, "type"), value), "fields[0].type")


@pytest.mark.parametrize("value", [True, False])
def test_field_required_takes_a_boolean(value):
    assert validate_definition(changed(BASE, ("fields", 0, "required"), value))["fields"][0]["required"] is value


@pytest.mark.parametrize("value", ["true", "false", 1, 0, None])
def test_field_required_as_string_or_number_is_refused(value):
    assert_refused(changed(BASE, ("fields", 0, "required"), value), "fields[0].required")


@pytest.mark.parametrize("index", [0, 1, 2, 3, 5])
def test_options_on_a_non_select_field_are_refused(index):
    assert_refused(changed(BASE, ("fields", index, "options"), ["a"]), f"fields[{index}].options")


def test_select_without_options_is_missing_a_required_property():
    assert_refused(changed(BASE, ("fields", 4, "options"), DROP), "fields[4].options", MISSING)


def test_select_options_are_trimmed_and_keep_their_order():
    result = validate_definition(changed(BASE, ("fields", 4, "options"), [" low ", "high", "z"]))
    assert result["fields"][4]["options"] == ["low", "high", "z"]


def test_twelve_distinct_options_are_accepted():
    options = ["high"] + [f"o{n}" for n in range(11)]
    assert validate_definition(changed(BASE, ("fields", 4, "options"), options))["fields"][4]["options"] == options


@pytest.mark.parametrize("options, path", [
    ([], "fields[4].options"),
    ([f"o{n}" for n in range(13)], "fields[4].options"),
    (["low", "high", "low"], "fields[4].options[2]"),
    (["low", "high", " high "], "fields[4].options[2]"),
    (["low", "  "], "fields[4].options[1]"),
    (["low", "x" * 61], "fields[4].options[1]"),
    (["low", 2], "fields[4].options[1]"),
    (["low", "a\nb"], "fields[4].options[1]"),
    ("low", "fields[4].options"),
    (None, "fields[4].options"),
])
def test_invalid_select_options_are_refused(options, path):
    assert_refused(changed(BASE, ("fields", 4, "options"), options), path)


def test_between_one_and_twelve_fields_are_accepted():
    twelve = FIELDS + [{"key": f"extra{n}", "label": "E", "type": "text", "required": False} for n in range(6)]
    assert len(validate_definition(changed(BASE, ("fields",), twelve))["fields"]) == 12
    one = changed(changed(BASE, ("fields",), FIELDS[:1]), ("table_columns",), ["title"])
    validate_definition(changed(one, ("workflow", "rules"), []))


def test_zero_or_thirteen_fields_are_refused():
    thirteen = FIELDS + [{"key": f"extra{n}", "label": "E", "type": "text", "required": False} for n in range(7)]
    assert_refused(changed(BASE, ("fields",), thirteen), "fields")
    assert_refused(changed(BASE, ("fields",), []), "fields")
    assert_refused(changed(BASE, ("fields",), {"title": FIELDS[0]}), "fields")
    assert_refused(changed(BASE, ("fields", 2), "amount"), "fields[2]")


# --- table columns ------------------------------------------------------------------------------

def test_table_columns_keep_their_order():
    columns = ["urgent", "due", "title"]
    assert validate_definition(changed(BASE, ("table_columns",), columns))["table_columns"] == columns


@pytest.mark.parametrize("columns, path", [
    ([], "table_columns"),
    (["title"] * 13, "table_columns"),
    (["title", "missing"], "table_columns[1]"),
    (["title", "amount", "title"], "table_columns[2]"),
    (["title", 3], "table_columns[1]"),
    (["Title"], "table_columns[0]"),
    ("title", "table_columns"),
])
def test_invalid_table_columns_are_refused(columns, path):
    assert_refused(changed(BASE, ("table_columns",), columns), path)


# --- workflow -----------------------------------------------------------------------------------

@pytest.mark.parametrize("trigger", ["form.changed", "Form.submitted", " form.submitted", None, 1])
def test_workflow_trigger_other_than_form_submitted_is_refused(trigger):
    assert_refused(changed(BASE, ("workflow", "trigger"), trigger), "workflow.trigger")


def test_zero_to_eight_rules_are_accepted():
    rule = BASE["workflow"]["rules"][0]
    assert validate_definition(changed(BASE, ("workflow", "rules"), []))["workflow"]["rules"] == []
    validate_definition(changed(BASE, ("workflow", "rules"), [rule] * 8))
    assert_refused(changed(BASE, ("workflow", "rules"), [rule] * 9), "workflow.rules")
    assert_refused(changed(BASE, ("workflow", "rules"), None), "workflow.rules")
    assert_refused(changed(BASE, ("workflow", "rules", 0), "rule"), "workflow.rules[0]")


@pytest.mark.parametrize("where, value", [
    (("name",), ""), (("name",), "x" * 81), (("name",), 1),
    (("when",), None), (("then",), []),
    (("when", "field"), "missing"), (("when", "field"), None), (("then", "field"), "missing"),
    (("then", "field"), ["priority"]), (("when", "operator"), "matches"), (("when", "operator"), "EQUALS"),
    (("when", "operator"), None),
])
def test_invalid_rule_parts_are_refused_at_their_path(where, value):
    full_where = ("workflow", "rules", 0, *where)
    assert_refused(changed(BASE, full_where, value), json_path(full_where))


VALUE_FOR_TYPE = {"text": "abc", "textarea": "abc", "number": 5, "date": "2026-01-31", "select": "low",
                  "checkbox": True}
KEY_FOR_TYPE = {field["type"]: field["key"] for field in FIELDS}
OPERATOR_CASES = [(op, kind) for op in OPERATORS for kind in FIELD_TYPES]


@pytest.mark.parametrize("operator, kind", [case for case in OPERATOR_CASES if case[1] in OPERATORS[case[0]]])
def test_operator_is_accepted_on_its_field_types(operator, kind):
    result = validate_definition(with_rule(KEY_FOR_TYPE[kind], operator, VALUE_FOR_TYPE[kind]))
    assert result["workflow"]["rules"][0]["when"] == {"field": KEY_FOR_TYPE[kind], "operator": operator,
                                                      "value": VALUE_FOR_TYPE[kind]}


@pytest.mark.parametrize("operator, kind", [case for case in OPERATOR_CASES if case[1] not in OPERATORS[case[0]]])
def test_operator_is_refused_on_other_field_types(operator, kind):
    assert_refused(with_rule(KEY_FOR_TYPE[kind], operator, VALUE_FOR_TYPE[kind]),
                   "workflow.rules[0].when.operator")


def test_every_operator_row_has_allowed_and_refused_cases():
    assert {op for op, kind in OPERATOR_CASES if kind in OPERATORS[op]} == set(OPERATORS)
    assert {op for op, kind in OPERATOR_CASES if kind not in OPERATORS[op]} == set(OPERATORS) - {"equals",
                                                                                                 "not_equals"}


@pytest.mark.parametrize("kind, value", [
    ("text", " spaced "), ("text", "x" * 200), ("text", "😀" * 100), ("textarea", "line\nline"),
    ("textarea", "x" * 2000), ("number", 0), ("number", -3.5), ("number", 1e12), ("number", -10 ** 12),
    ("date", "2024-02-29"), ("date", "0001-01-01"), ("select", "high"), ("checkbox", False),
])
def test_rule_constants_of_the_field_type_are_accepted_as_written(kind, value):
    for definition, where in ((with_rule(KEY_FOR_TYPE[kind], "equals", value), "when"),
                              (with_rule("title", "equals", "x", KEY_FOR_TYPE[kind], value), "then")):
        assert validate_definition(definition)["workflow"]["rules"][0][where]["value"] == value


@pytest.mark.parametrize("kind, value", [
    ("text", ""), ("text", "   "), ("text", "a\nb"), ("text", "x" * 201), ("text", "😀" * 101), ("text", 5),
    ("text", None), ("text", "a\x00"), ("textarea", "x" * 2001), ("textarea", "a\x07"), ("textarea", ["a"]),
    ("number", True), ("number", False), ("number", "5"), ("number", None), ("number", math.nan),
    ("number", math.inf), ("number", -math.inf), ("number", 1e12 + 1), ("number", 10 ** 400),
    ("date", "2026-02-30"), ("date", "2025-02-29"), ("date", "2026-13-01"), ("date", "2026-1-5"),
    ("date", "2026-01-05T10:00"), ("date", "2026-01-05\n"), ("date", "20260105"), ("date", 20260105),
    ("date", "２０２６-01-05"),
    ("select", "medium"), ("select", "High"), ("select", " high"), ("select", 1), ("select", None),
    ("checkbox", "true"), ("checkbox", 1), ("checkbox", 0), ("checkbox", None),
])
def test_rule_constants_of_another_type_are_refused(kind, value):
    assert_refused(with_rule(KEY_FOR_TYPE[kind], "equals", value), "workflow.rules[0].when.value")
    assert_refused(with_rule("title", "equals", "x", KEY_FOR_TYPE[kind], value), "workflow.rules[0].then.value")


def test_integral_float_constants_are_stored_as_integers():
    rule = validate_definition(with_rule("amount", "gt", 5.0, "amount", 7.0))["workflow"]["rules"][0]
    assert (rule["when"]["value"], rule["then"]["value"]) == (5, 7)
    assert type(rule["when"]["value"]) is int and type(rule["then"]["value"]) is int
    assert validate_definition(with_rule("amount", "gt", 5.5))["workflow"]["rules"][0]["when"]["value"] == 5.5


def test_select_constant_must_be_an_option_of_that_field():
    definition = with_rule("priority", "equals", "low", "priority", "high")
    assert validate_definition(definition)["workflow"]["rules"][0]["then"]["value"] == "high"
    assert_refused(with_rule("priority", "equals", "low", "priority", "urgent"), "workflow.rules[0].then.value")


# --- charts -------------------------------------------------------------------------------------

def chart(**changes) -> dict:
    """BASE with one chart."""
    found = {"key": "main", "title": "Main", "type": "bar", "group_by": "priority", "metric": "count", **changes}
    return {**copy.deepcopy(BASE), "charts": [{k: v for k, v in found.items() if v is not DROP}]}


@pytest.mark.parametrize("group_by", ["title", "priority", "due", "urgent"])
def test_bar_chart_groups_by_text_select_date_or_checkbox(group_by):
    assert validate_definition(chart(group_by=group_by))["charts"][0]["group_by"] == group_by


@pytest.mark.parametrize("group_by", ["notes", "amount", "missing", None, 1])
def test_bar_chart_refuses_other_group_fields(group_by):
    assert_refused(chart(group_by=group_by), "charts[0].group_by")


def test_line_chart_groups_by_a_date_field():
    assert validate_definition(chart(type="line", group_by="due"))["charts"][0]["type"] == "line"


@pytest.mark.parametrize("group_by", ["title", "priority", "urgent", "amount"])
def test_line_chart_refuses_a_group_field_that_is_not_a_date(group_by):
    assert_refused(chart(type="line", group_by=group_by), "charts[0].group_by")


@pytest.mark.parametrize("metric", ["sum", "average"])
def test_sum_and_average_need_a_number_value_field(metric):
    assert validate_definition(chart(metric=metric, value_field="amount"))["charts"][0]["value_field"] == "amount"
    assert_refused(chart(metric=metric), "charts[0].value_field", MISSING)
    for other in ("title", "due", "missing", None):
        assert_refused(chart(metric=metric, value_field=other), "charts[0].value_field")


def test_count_must_not_carry_a_value_field():
    assert "value_field" not in validate_definition(chart())["charts"][0]
    assert_refused(chart(value_field="amount"), "charts[0].value_field")


@pytest.mark.parametrize("where, value", [
    ("type", "pie"), ("type", "Bar"), ("metric", "max"), ("metric", None), ("title", ""), ("title", "x" * 81),
    ("key", "Main"), ("key", "1main"), ("key", "m" * 33), ("key", None),
])
def test_invalid_chart_parts_are_refused(where, value):
    assert_refused(chart(**{where: value}), f"charts[0].{where}")


def test_at_most_three_charts_with_unique_keys():
    charts = [dict(chart()["charts"][0], key=f"c{n}") for n in range(4)]
    validate_definition(changed(BASE, ("charts",), charts[:3]))
    assert_refused(changed(BASE, ("charts",), charts), "charts")
    assert_refused(changed(BASE, ("charts",), [charts[0], charts[1], charts[0]]), "charts[2].key")
    assert_refused(changed(BASE, ("charts",), {"main": charts[0]}), "charts")


def test_empty_charts_are_dropped_and_hash_like_no_charts():
    result = validate_definition(changed(BASE, ("charts",), []))
    assert "charts" not in result
    assert canonical_hash(result) == canonical_hash(validate_definition(BASE))


# --- code ---------------------------------------------------------------------------------------

def test_code_source_is_kept_exactly_as_written():
    source = "\n  const total = 1;\n\treturn { notes: String(total) };\n"
    result = validate_definition(changed(BASE, ("code",), {"language": "javascript", "source": source}))
    assert result["code"] == {"language": "javascript", "source": source}


def test_code_source_is_limited_to_8000_utf16_units():
    for source in ("x" * 8000, "😀" * 4000):
        validate_definition(changed(BASE, ("code",), {"language": "javascript", "source": source}))
    for source in ("x" * 8001, "😀" * 4000 + "x"):
        assert_refused(changed(BASE, ("code",), {"language": "javascript", "source": source}), "code.source")


@pytest.mark.parametrize("where, value", [
    (("code",), "return 1;"), (("code",), None), (("code", "language"), "python"),
    (("code", "language"), "JavaScript"), (("code", "source"), ""), (("code", "source"), "  \n "),
    (("code", "source"), ["return 1;"]), (("code", "source"), "return\x00 1;"),
])
def test_invalid_code_is_refused(where, value):
    assert_refused(changed(FULL, where, value), json_path(where))


# --- workbench ----------------------------------------------------------------------------------

@pytest.mark.parametrize("workbench, expected", [
    ({"theme": "blue"}, {"theme": "blue"}),
    ({"title": " Desk "}, {"title": "Desk"}),
    ({"list_width": 380.0}, {"list_width": 380}),
    ({"density": "comfortable", "details_width": 280, "tools_position": "after_profile"},
     {"density": "comfortable", "details_width": 280, "tools_position": "after_profile"}),
])
def test_workbench_accepts_any_non_empty_subset_of_its_settings(workbench, expected):
    assert validate_definition(changed(BASE, ("workbench",), workbench))["workbench"] == expected


@pytest.mark.parametrize("where, value", [
    (("workbench",), {}), (("workbench",), "blue"), (("workbench", "theme"), "red"),
    (("workbench", "density"), "cosy"), (("workbench", "list_width"), 300), (("workbench", "list_width"), "260"),
    (("workbench", "list_width"), True), (("workbench", "details_width"), 320),
    (("workbench", "tools_position"), "hidden"), (("workbench", "title"), "  "),
    (("workbench", "title"), "x" * 61), (("workbench", "title"), 5),
])
def test_invalid_workbench_settings_are_refused(where, value):
    assert_refused(changed(FULL, where, value), json_path(where))


# --- intent -------------------------------------------------------------------------------------

def test_intent_labels_are_trimmed():
    result = validate_definition(changed(BASE, ("intent",), {"labels": [" billing ", "x" * 30, "退款"]}))
    assert result["intent"] == {"labels": ["billing", "x" * 30, "退款"]}


@pytest.mark.parametrize("labels, path", [
    ([], "intent.labels"),
    ([f"l{n}" for n in range(11)], "intent.labels"),
    (["a", "a"], "intent.labels[1]"),
    (["a", " a"], "intent.labels[1]"),
    (["a", "x" * 31], "intent.labels[1]"),
    (["无法判断"], "intent.labels[0]"),
    (["a", "仍然无法判断的"], "intent.labels[1]"),
    (["a", ""], "intent.labels[1]"),
    (["a", 1], "intent.labels[1]"),
    ("a", "intent.labels"),
])
def test_invalid_intent_labels_are_refused(labels, path):
    assert_refused(changed(BASE, ("intent",), {"labels": labels}), path)


def test_ten_intent_labels_are_accepted():
    labels = [f"l{n}" for n in range(10)]
    assert validate_definition(changed(BASE, ("intent",), {"labels": labels}))["intent"] == {"labels": labels}


# --- actions ------------------------------------------------------------------------------------

def test_campaign_audience_tag_field_is_optional():
    result = validate_definition(changed(FULL, ("actions", 1, "audience_tag_field"), DROP))
    assert result["actions"][1] == {"key": "promo", "title": "Promotion draft", "kind": "campaign",
                                    "name_field": "title", "content_field": "notes"}


@pytest.mark.parametrize("where, value", [
    (("actions", 0, "name_field"), "title"), (("actions", 0, "content_field"), "notes"),
    (("actions", 0, "audience_tag_field"), "priority"), (("actions", 1, "fields"), ["title"]),
    (("actions", 0, "kind"), "webhook"), (("actions", 0, "kind"), None), (("actions", 0, "title"), ""),
    (("actions", 0, "key"), "CRM"), (("actions", 0, "fields"), []), (("actions", 0, "fields"), "title"),
    (("actions", 0, "fields", 1), "missing"), (("actions", 0, "fields", 1), "title"),
    (("actions", 1, "name_field"), "amount"), (("actions", 1, "content_field"), "urgent"),
    (("actions", 1, "content_field"), "missing"), (("actions", 1, "audience_tag_field"), "notes"),
    (("actions", 1, "audience_tag_field"), "due"), (("actions",), "crm"), (("actions", 0), None),
])
def test_invalid_action_parts_are_refused(where, value):
    assert_refused(changed(FULL, where, value), json_path(where))


@pytest.mark.parametrize("field, kind", [("title", "text"), ("notes", "textarea"), ("priority", "select")],
                         ids=["title", "notes", "priority"])
def test_campaign_text_fields_may_be_text_textarea_or_select(field, kind):
    assert field_map(FULL)[field]["type"] == kind
    for name in ("name_field", "content_field"):
        action = validate_definition(changed(FULL, ("actions", 1, name), field))["actions"][1]
        assert (action["kind"], action[name]) == ("campaign", field)


def test_at_most_two_actions_with_unique_keys():
    http = FULL["actions"][0]
    assert_refused(changed(FULL, ("actions",), [http, dict(http, key="b"), dict(http, key="c")]), "actions")
    assert_refused(changed(FULL, ("actions",), [http, http]), "actions[1].key")
    assert "actions" not in validate_definition(changed(FULL, ("actions",), []))


# --- normalization, hash and manifest -----------------------------------------------------------

def test_absent_optional_sections_stay_absent():
    assert set(validate_definition(BASE)) == {"schema_version", "name", "description", "page", "fields",
                                              "table_columns", "workflow"}


def test_hash_is_stable_under_key_reordering():
    reordered = json.loads(json.dumps(FULL), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    assert list(reordered) != list(FULL)
    assert canonical_hash(validate_definition(reordered)) == canonical_hash(validate_definition(FULL))
    assert len(canonical_hash(FULL)) == 64


def test_hash_changes_with_content_and_matches_canonical_json():
    assert canonical_hash(BASE) != canonical_hash(changed(BASE, ("name",), "Other"))
    canonical = json.dumps(BASE, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert canonical_hash(BASE) == hashlib.sha256(canonical).hexdigest()


def test_manifest_of_a_definition_using_everything():
    definition = changed(FULL, ("workflow", "rules"), [
        {"name": "a", "when": {"field": "amount", "operator": "lt", "value": 1}, "then": {"field": "urgent",
                                                                                           "value": True}},
        {"name": "b", "when": {"field": "notes", "operator": "contains", "value": "x"},
         "then": {"field": "title", "value": "y"}},
    ])
    assert capability_manifest(validate_definition(definition)) == sorted([
        "ui.form", "ui.table", "event.form_submitted", "record.create", "record.set_field",
        "field.text", "field.textarea", "field.number", "field.date", "field.select", "field.checkbox",
        "rule.lt", "rule.contains", "ui.chart", "code.execute", "ui.custom_workbench",
        "ai.classify_conversation", "http.request", "message.broadcast"])


def test_manifest_of_a_minimal_definition():
    minimal = changed(changed(BASE, ("fields",), FIELDS[:1]), ("table_columns",), ["title"])
    minimal = changed(minimal, ("workflow", "rules"), [])
    assert capability_manifest(validate_definition(minimal)) == [
        "event.form_submitted", "field.text", "record.create", "ui.form", "ui.table"]
    campaign_only = changed(FULL, ("actions",), FULL["actions"][1:])
    assert "http.request" not in capability_manifest(validate_definition(campaign_only))


def test_field_map_indexes_fields_by_key():
    assert field_map(BASE) == {field["key"]: field for field in FIELDS}


# --- properties ---------------------------------------------------------------------------------

PROPERTY_NAMES = ["schema_version", "name", "description", "page", "title", "columns", "submit_label", "fields",
                  "key", "label", "type", "required", "options", "table_columns", "workflow", "trigger", "rules",
                  "when", "then", "field", "operator", "value", "charts", "group_by", "metric", "value_field",
                  "code", "language", "source", "workbench", "theme", "intent", "labels", "actions", "kind",
                  "name_field", "content_field", "audience_tag_field", "list_width", "__proto__"]
ODD_TEXTS = ["", " ", "😀", "\x00", "\x85", "\ud800", "a\udfff", "\n", "无法判断", "form.submitted", "select",
             "equals", "count", "line", "javascript", "2026-02-30", "title", "amount", "1"]
scalars = (st.none() | st.booleans() | st.integers() | st.floats() | st.sampled_from(ODD_TEXTS) | ODD_STRINGS)
json_values = random_json(PROPERTY_NAMES, scalars)


def assert_only_definition_errors(raw: object) -> dict | None:
    """Validate; any refusal is an ApiError with a definition code and a path."""
    try:
        return validate_definition(raw)
    except ApiError as error:
        assert error.code in (INVALID, MISSING) and error.status == 400 and error.detail
        return None


@PROPERTY_SETTINGS
@given(json_values)
def test_random_json_is_refused_only_with_definition_errors(raw):
    assert_only_definition_errors(raw)


@PROPERTY_SETTINGS
@given(st.fixed_dictionaries({name: json_values for name in BASE}))
def test_definition_shaped_random_json_is_refused_only_with_definition_errors(raw):
    assert_only_definition_errors(raw)


def assert_normalization_is_idempotent(normalized: dict) -> None:
    """Re-validating a normalized definition changes nothing, its hash included."""
    again = validate_definition(normalized)
    assert again == normalized
    assert canonical_hash(again) == canonical_hash(normalized)
    assert json.loads(json.dumps(normalized, ensure_ascii=False)) == normalized


@PROPERTY_SETTINGS
@given(mutated([BASE, FULL, STARTER_DEFINITION], PROPERTY_NAMES, json_values))
def test_mutated_definitions_are_refused_only_with_definition_errors(raw):
    normalized = assert_only_definition_errors(raw)
    if normalized is not None:
        assert_normalization_is_idempotent(normalized)


PLAIN_TEXT = plain_texts(("Cc", "Cs"))
PADDING = st.sampled_from(["", " ", "\t", "\u3000", "\n"])
PADDED = padded(PLAIN_TEXT, PADDING)


@st.composite
def constants(draw, field: dict):
    """A rule constant valid for the field."""
    kind = field["type"]
    if kind in ("text", "textarea"):
        return draw(PLAIN_TEXT)
    if kind == "number":
        return draw(st.integers(-10 ** 12, 10 ** 12) | st.floats(-1e12, 1e12, allow_nan=False))
    if kind == "date":
        return draw(st.dates()).isoformat()
    if kind == "select":
        return draw(st.sampled_from(field["options"])).strip(JS_WHITESPACE)
    return draw(st.booleans())


@st.composite
def fields_strategy(draw):
    """1 to 8 valid fields with unique keys."""
    keys = draw(st.lists(st.sampled_from([f"k{n}" for n in range(12)] + ["title", "due", "amount"]),
                         min_size=1, max_size=8, unique=True))
    fields = []
    for key in keys:
        field = {"key": key, "label": draw(PADDED), "type": draw(st.sampled_from(FIELD_TYPES)),
                 "required": draw(st.booleans())}
        if field["type"] == "select":
            options = draw(st.lists(PLAIN_TEXT, min_size=1, max_size=4, unique_by=lambda s: s.strip(JS_WHITESPACE)))
            field["options"] = [draw(PADDING) + option for option in options]
        fields.append(field)
    return fields


@st.composite
def rules_strategy(draw, fields: list):
    """0 to 4 rules whose operators and constants suit their fields."""
    rules = []
    for _ in range(draw(st.integers(0, 4))):
        condition, target = draw(st.sampled_from(fields)), draw(st.sampled_from(fields))
        operator = draw(st.sampled_from([op for op, types in OPERATORS.items() if condition["type"] in types]))
        rules.append({"name": draw(PADDED),
                      "when": {"field": condition["key"], "operator": operator,
                               "value": draw(constants(condition))},
                      "then": {"field": target["key"], "value": draw(constants(target))}})
    return rules


@st.composite
def optional_sections(draw, fields: list) -> dict:
    """Some of charts, code, workbench, intent and actions, valid for the fields."""
    by_type = {}
    for field in fields:
        by_type.setdefault(field["type"], []).append(field["key"])
    sections = {}
    groupable = [key for kind in ("text", "select", "date", "checkbox") for key in by_type.get(kind, [])]
    if groupable and draw(st.booleans()):
        metric = "sum" if "number" in by_type and draw(st.booleans()) else "count"
        chart_ = {"key": "c1", "title": draw(PADDED), "type": "bar", "group_by": draw(st.sampled_from(groupable)),
                  "metric": metric}
        sections["charts"] = [chart_ if metric == "count" else {**chart_, "value_field": by_type["number"][0]}]
    if draw(st.booleans()):
        sections["code"] = {"language": "javascript", "source": draw(PADDED)}
    if draw(st.booleans()):
        sections["workbench"] = {"title": draw(PADDED), "list_width": draw(st.sampled_from([260, 320.0, 380]))}
    if draw(st.booleans()):
        sections["intent"] = {"labels": draw(st.lists(PLAIN_TEXT, min_size=1, max_size=3,
                                                      unique_by=lambda s: s.strip(JS_WHITESPACE)))}
    if draw(st.booleans()):
        sections["actions"] = [{"key": "send", "title": draw(PADDED), "kind": "http",
                                "fields": [field["key"] for field in fields]}]
    return sections


@st.composite
def valid_definitions(draw):
    """A random definition that follows every rule, with untrimmed texts and float integers."""
    fields = draw(fields_strategy())
    keys = [field["key"] for field in fields]
    return {"schema_version": draw(st.sampled_from([1, 1.0])), "name": draw(PADDED),
            "description": draw(PADDED),
            "page": {"title": draw(PADDED), "description": draw(PADDED), "columns": draw(st.sampled_from([1, 2])),
                     "submit_label": draw(PADDED)},
            "fields": fields, "table_columns": draw(st.permutations(keys)),
            "workflow": {"trigger": "form.submitted", "rules": draw(rules_strategy(fields))},
            **draw(optional_sections(fields))}


@PROPERTY_SETTINGS
@given(valid_definitions())
def test_valid_definitions_normalize_idempotently(raw):
    normalized = validate_definition(raw)
    assert_normalization_is_idempotent(normalized)
    assert canonical_hash(validate_definition(raw)) == canonical_hash(validate_definition(normalized))
    assert capability_manifest(normalized) == capability_manifest(validate_definition(normalized))
