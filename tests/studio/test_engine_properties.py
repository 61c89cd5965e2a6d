"""Property tests of the rule engine over the built-in templates' definitions."""
from hypothesis import given, settings
from hypothesis import strategies as st

from core.api import ApiError
from studio.definition import validate_definition
from studio.engine import run_rules, validate_input
from studio.templates_market import TEMPLATES
from core.text import is_blank

DEFINITIONS = [validate_definition(t["definition"]) for t in TEMPLATES]
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**13, 10**13), st.floats(allow_nan=True),
                    st.text(max_size=30), st.sampled_from(["2026-02-28", "2026-02-30", "high", "billing", "", " "]))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                         max_size=3), max_leaves=6)
# What a person types on one line: no surrogates, controls or line/paragraph separators.
LINE_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")),
                    min_size=1, max_size=40).filter(lambda text: not is_blank(text))


def _valid_value(field: dict):
    """Values a person could legitimately submit for the field."""
    kind = field["type"]
    if kind == "number":
        return st.integers(-10**12, 10**12) | st.floats(-1e12, 1e12)
    if kind == "date":
        return st.dates().map(lambda d: d.isoformat())
    if kind == "select":
        return st.sampled_from(field["options"])
    if kind == "checkbox":
        return st.booleans()
    return LINE_TEXT


def _submissions(definition: dict, value):
    """Objects with every required field and any optional ones, valued by `value(field)`."""
    required = {f["key"]: value(f) for f in definition["fields"] if f["required"]}
    optional = {f["key"]: value(f) for f in definition["fields"] if not f["required"]}
    return st.fixed_dictionaries(required, optional=optional)


def _cases(value):
    return st.sampled_from(DEFINITIONS).flatmap(lambda d: st.tuples(st.just(d), _submissions(d, value)))


@settings(max_examples=200, deadline=None)
@given(_cases(_valid_value))
def test_a_valid_submission_always_gives_a_valid_record_of_declared_fields(case):
    definition, raw = case
    result = run_rules(definition, raw)
    assert result["external_effects"] is False
    assert len(result["trace"]) == len(definition["workflow"]["rules"])
    assert validate_input(definition, result["data"]) == result["data"]  # rule constants keep it valid
    assert all(result["data"][key] == raw[key] for key in raw
               if key not in {r["then"]["field"] for r in definition["workflow"]["rules"]})


@settings(max_examples=200, deadline=None)
@given(_cases(lambda field: _valid_value(field) | SCALARS) | st.tuples(st.sampled_from(DEFINITIONS), JSON))
def test_any_input_is_either_refused_cleanly_or_saved_valid(case):
    definition, raw = case
    try:
        result = run_rules(definition, raw)
    except ApiError as err:
        assert err.code in {"invalid_json", "required_field_missing"} and err.status == 400
        assert err.detail == "input" or err.detail.startswith("input.")
        return
    assert validate_input(definition, result["data"]) == result["data"]
