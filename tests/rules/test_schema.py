"""The JSON schema of a rule is built from the validator's own tables and agrees with it."""
import copy

import pytest
from hypothesis import given
from jsonschema import Draft202012Validator

from core.api import ApiError
from rules import definition as validator
from rules import schema
from rules.catalog import AUTOMATION_PREVIEW_EXAMPLE, LIMITS
from rules.definition import STATUSES, TIMEZONES, TRIGGERS, WEEKDAYS, validate_rule
from tests.support.definitions import PROPERTY_SETTINGS, changed
from tests.support.rule_definitions import KEYWORD, RULES, SEMANTIC, WEEKLY, valid_rules

# Where each object of SEMANTIC_WEEKLY sits, by its name in the validator's SHAPES.
OBJECTS = {"definition": (), "slot": ("slots", 0), "semantic": ("semantic",)}
SEMANTIC_WEEKLY = {**WEEKLY, "semantic": SEMANTIC["semantic"]}


@pytest.fixture(autouse=True)
def _fresh_schema():
    """The schema is built once per process; rebuild it around each test that changes the tables."""
    schema.rule_schema.cache_clear()
    yield
    schema.rule_schema.cache_clear()


def _accepted_by_schema(rule: object) -> bool:
    return Draft202012Validator(schema.rule_schema()).is_valid(rule)


def _at(rule: dict, where: tuple):
    value = rule
    for step in where:
        value = value[step]
    return value


def test_the_schema_is_a_valid_json_schema():
    Draft202012Validator.check_schema(schema.rule_schema())


def test_the_schema_is_built_once():
    assert schema.rule_schema() is schema.rule_schema()


@pytest.mark.parametrize("rule", [*RULES.values(), SEMANTIC_WEEKLY, AUTOMATION_PREVIEW_EXAMPLE],
                         ids=[*RULES, "semantic_weekly", "preview_example"])
def test_every_rule_the_validator_accepts_fits_the_schema(rule):
    assert validate_rule(rule) == rule
    assert _accepted_by_schema(rule)


@PROPERTY_SETTINGS
@given(valid_rules())
def test_every_normalized_random_rule_fits_the_schema(raw):
    assert _accepted_by_schema(validate_rule(raw))


@pytest.mark.parametrize("name", list(OBJECTS))
@pytest.mark.parametrize("smuggled", ["cron", "script", "webhook_url"])
def test_a_smuggled_property_is_refused_by_both_the_validator_and_the_schema(name, smuggled):
    tampered = changed(SEMANTIC_WEEKLY, (*OBJECTS[name], smuggled), "x")
    with pytest.raises(ApiError):
        validate_rule(tampered)
    assert not _accepted_by_schema(tampered)


@pytest.mark.parametrize("name, required", [(name, required) for name in OBJECTS
                                            for required in validator.SHAPES[name][0]])
def test_a_missing_required_property_is_refused_by_both(name, required):
    tampered = copy.deepcopy(SEMANTIC_WEEKLY)
    del _at(tampered, OBJECTS[name])[required]
    with pytest.raises(ApiError):
        validate_rule(tampered)
    assert not _accepted_by_schema(tampered)


@pytest.mark.parametrize("where, value", [
    (("schema_version",), 2), (("schema_version",), True), (("name",), ""), (("name",), "x" * 81),
    (("timezone",), "UTC"), (("trigger",), "cron"), (("slots",), [WEEKLY["slots"][0]] * 8),
    (("slots", 0, "weekdays"), []), (("slots", 0, "weekdays"), [0]), (("slots", 0, "weekdays"), [8]),
    (("slots", 0, "weekdays"), [1, 1]), (("slots", 0, "weekdays"), [True]), (("slots", 0, "time"), "24:00"),
    (("slots", 0, "time"), "9:00"), (("slots", 0, "time"), "09:60"), (("slots", 0, "time"), "09:00\n"),
    (("slots", 0, "assignee_ref"), ""), (("slots", 0, "assignee_ref"), "x" * 121), (("assignee_ref",), None),
    (("keywords",), ["refund", "refund"]), (("keywords",), ["x" * 41]),
    (("keywords",), [f"k{n}" for n in range(11)]),
    (("semantic", "labels"), []), (("semantic", "labels"), ["账单无法判断"]), (("semantic", "labels"), ["x" * 31]),
    (("semantic", "min_confidence"), 0.79), (("semantic", "min_confidence"), 1.01), (("statuses",), []),
    (("statuses",), ["resolved"]), (("statuses",), ["open", "open"]), (("overwrite_assigned",), "false"),
    (("max_actions",), 0), (("max_actions",), 101), (("max_actions",), 1.5), (("max_actions",), True),
])
def test_a_value_out_of_range_is_refused_by_both(where, value):
    tampered = changed(SEMANTIC_WEEKLY, where, value)
    with pytest.raises(ApiError):
        validate_rule(tampered)
    assert not _accepted_by_schema(tampered)


def test_a_property_the_validator_gains_without_a_schema_description_stops_the_build(monkeypatch):
    required, optional = validator.SHAPES["slot"]
    monkeypatch.setitem(validator.SHAPES, "slot", (required, (*optional, "date")))
    with pytest.raises(RuntimeError, match="slot"):
        schema.rule_schema()


def test_a_description_the_validator_lacks_stops_the_build(monkeypatch):
    required, optional = validator.SHAPES["semantic"]
    monkeypatch.setitem(validator.SHAPES, "semantic", (required[:1], optional))
    with pytest.raises(RuntimeError, match="semantic"):
        schema.rule_schema()


def test_limits_reach_the_schema_from_the_catalog(monkeypatch):
    for name, value in (("keywords", 5), ("name_chars", 33), ("slots", 3), ("min_confidence_low", 0.9),
                        ("max_actions", 50), ("assignee_ref_chars", 64)):
        monkeypatch.setitem(LIMITS, name, value)
    built = schema.rule_schema()
    properties = built["properties"]
    assert properties["keywords"]["maxItems"] == 5 and properties["name"]["maxLength"] == 33
    assert properties["slots"]["maxItems"] == 3 and properties["max_actions"]["maximum"] == 50
    assert properties["semantic"]["properties"]["min_confidence"]["minimum"] == 0.9
    assert properties["assignee_ref"]["maxLength"] == 64
    assert properties["slots"]["items"]["properties"]["assignee_ref"]["maxLength"] == 64


def test_enumerations_are_the_validators():
    properties = schema.rule_schema()["properties"]
    assert properties["timezone"]["enum"] == list(TIMEZONES) == ["Asia/Shanghai"]
    assert properties["trigger"]["enum"] == list(TRIGGERS)
    assert properties["statuses"]["items"]["enum"] == list(STATUSES)
    assert properties["slots"]["items"]["properties"]["weekdays"]["items"]["enum"] == list(WEEKDAYS)
    assert properties["slots"]["items"]["properties"]["time"]["pattern"] == f"^{validator.TIME_RE.pattern}$"


def test_semantic_is_optional_and_the_empty_assignee_is_allowed_in_the_schema():
    built = schema.rule_schema()
    assert "semantic" not in built["required"] and "semantic" in built["properties"]
    assert _accepted_by_schema(WEEKLY) and _accepted_by_schema(KEYWORD)


def test_the_consistency_rules_are_described_to_the_model():
    description = schema.rule_schema()["description"]
    for words in ("weekly", "manual_sample", "message_received", "exactly one", "semantic never"):
        assert words in description
