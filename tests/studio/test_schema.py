"""The JSON schema given to the model is built from the validator's own tables and agrees with it."""
import copy

import pytest
from jsonschema import Draft202012Validator

from core.api import ApiError
from rules.catalog import AUTOMATION_PREVIEW_EXAMPLE
from rules.drafts import RULE_PREVIEW
from studio import definition as validator
from studio import schema
from core.capabilities import CAPABILITY_VERSION
from studio.catalog import LIMITS, STARTER_DEFINITION
from studio.definition import validate_definition
from studio.templates_market import TEMPLATES
from tests.support.app_definitions import FULL
from tests.support.definitions import changed

# Where each object of FULL sits, by its name in the validator's SHAPES.
OBJECTS = {"definition": (), "page": ("page",), "field": ("fields", 0), "workflow": ("workflow",),
           "rule": ("workflow", "rules", 0), "when": ("workflow", "rules", 0, "when"),
           "then": ("workflow", "rules", 0, "then"), "chart": ("charts", 0), "code": ("code",),
           "workbench": ("workbench",), "intent": ("intent",), "action": ("actions", 0)}


@pytest.fixture(autouse=True)
def _fresh_schema():
    """Schemas are built once per process; rebuild them around each test that changes the tables."""
    schema.definition_schema.cache_clear()
    schema.answer_schema.cache_clear()
    yield
    schema.definition_schema.cache_clear()
    schema.answer_schema.cache_clear()


def _accepted_by_schema(definition: dict) -> bool:
    return Draft202012Validator(schema.definition_schema()).is_valid(definition)


def _at(definition: dict, where: tuple):
    value = definition
    for step in where:
        value = value[step]
    return value


def test_the_schemas_are_valid_json_schemas():
    Draft202012Validator.check_schema(schema.definition_schema())
    Draft202012Validator.check_schema(schema.answer_schema((RULE_PREVIEW,)))


@pytest.mark.parametrize("definition", [FULL, STARTER_DEFINITION, *(t["definition"] for t in TEMPLATES)],
                         ids=["full", "starter", *(t["slug"] for t in TEMPLATES)])
def test_every_definition_the_validator_accepts_fits_the_schema(definition):
    assert validate_definition(definition) == definition
    assert _accepted_by_schema(definition)


@pytest.mark.parametrize("name", list(OBJECTS))
@pytest.mark.parametrize("smuggled", ["script", "html", "api_url"])
def test_a_smuggled_property_is_refused_by_both_the_validator_and_the_schema(name, smuggled):
    tampered = changed(FULL, (*OBJECTS[name], smuggled), "x") if OBJECTS[name] else {**FULL, smuggled: "x"}
    with pytest.raises(ApiError):
        validate_definition(tampered)
    assert not _accepted_by_schema(tampered)


@pytest.mark.parametrize("name", [name for name in OBJECTS if validator.SHAPES[name][0]])
def test_a_missing_required_property_is_refused_by_both(name):
    required = validator.SHAPES[name][0][0]
    tampered = copy.deepcopy(FULL)
    del _at(tampered, OBJECTS[name])[required]
    with pytest.raises(ApiError):
        validate_definition(tampered)
    assert not _accepted_by_schema(tampered)


def test_a_property_the_validator_gains_without_a_schema_description_stops_the_build(monkeypatch):
    required, optional = validator.SHAPES["page"]
    monkeypatch.setitem(validator.SHAPES, "page", (required, (*optional, "subtitle")))
    with pytest.raises(RuntimeError, match="page"):
        schema.definition_schema()


def test_limits_reach_the_schema_from_the_catalog(monkeypatch):
    monkeypatch.setitem(LIMITS, "fields", 5)
    monkeypatch.setitem(LIMITS, "name_chars", 33)
    built = schema.definition_schema()
    assert built["properties"]["fields"]["maxItems"] == 5
    assert built["properties"]["name"]["maxLength"] == 33


def test_the_reserved_label_and_keys_are_refused_by_the_schema():
    assert not _accepted_by_schema(changed(FULL, ("intent", "labels"), ["账单无法判断"]))
    assert not _accepted_by_schema(changed(FULL, ("fields", 0, "key"), "tenant_id"))


def test_the_answer_schema_takes_an_app_draft_a_registered_kind_s_draft_or_an_unsupported_result_only():
    check = Draft202012Validator(schema.answer_schema((RULE_PREVIEW,)))
    app = {"capability_version": CAPABILITY_VERSION, "kind": "app", "required_capabilities": ["ui.form"],
           "definition": FULL}
    unsupported = {"capability_version": CAPABILITY_VERSION, "kind": "unsupported",
                   "unsupported_capabilities": ["payment.refund"], "missing_capabilities": ["payment.refund"],
                   "missing_labels": ["Refunds"]}
    assert check.is_valid(app) and check.is_valid(unsupported)
    assert not check.is_valid({**app, "capability_version": "2025-01-01.1"})
    assert not check.is_valid({**app, "kind": "automation_preview"})  # an app definition is no rule
    rule = {**app, "kind": "automation_preview", "required_capabilities": ["preview.rotation"],
            "definition": AUTOMATION_PREVIEW_EXAMPLE}
    assert check.is_valid(rule)
    assert not check.is_valid({**rule, "definition": {**AUTOMATION_PREVIEW_EXAMPLE, "script": "x"}})
    assert not check.is_valid({**app, "required_capabilities": ["sql.run"]})
    assert not check.is_valid({**unsupported, "definition": FULL})
    assert not Draft202012Validator(schema.answer_schema()).is_valid(rule)  # a kind nobody registered
