"""JSON documents as the definition validators' tests handle them (rules and Studio applications):
paths, copies with one change, and the hypothesis strategies of random and mutated documents."""
import copy

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from core.labels import RESERVED_LABEL
from core.text import JS_WHITESPACE

INVALID = "invalid_definition"
MISSING = "required_field_missing"
DROP = object()  # `changed` removes the property instead of setting it
SAFE_CHARS = st.characters(blacklist_categories=("Cs",))
# Short texts, lone surrogates and an astral character among their characters.
ODD_STRINGS = st.text(alphabet=SAFE_CHARS | st.sampled_from(["\ud83d", "\udc00", "😀"]), max_size=12)
PROPERTY_SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def json_path(where: tuple) -> str:
    """The validator's path notation for a tuple of keys and indexes."""
    path = ""
    for step in where:
        path += f"[{step}]" if isinstance(step, int) else (f".{step}" if path else step)
    return path


def changed(document: dict, where: tuple, value) -> dict:
    """A deep copy with the value at `where` replaced (or removed with DROP)."""
    result = copy.deepcopy(document)
    parent = result
    for step in where[:-1]:
        parent = parent[step]
    if value is DROP:
        del parent[where[-1]]
    else:
        parent[where[-1]] = value
    return result


def json_slots(node, found: list) -> list:
    """Every (container, key-or-index) pair inside a JSON value."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        found.append((node, key))
        json_slots(child, found)
    return found


def random_json(names: list, scalars: st.SearchStrategy) -> st.SearchStrategy:
    """Random JSON of `scalars`, its objects keyed by `names` or short random texts."""
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=5) | st.dictionaries(
            st.sampled_from(names) | st.text(max_size=6), children, max_size=6),
        max_leaves=30)


@st.composite
def mutated(draw, documents: list, names: list, values: st.SearchStrategy):
    """One of `documents` with one to three random drops, replacements or additions (of `values`,
    added properties named from `names`)."""
    document = copy.deepcopy(draw(st.sampled_from(documents)))
    for _ in range(draw(st.integers(1, 3))):
        container, key = draw(st.sampled_from(json_slots(document, [])))
        operation = draw(st.sampled_from(["drop", "replace", "add"]))
        if operation == "drop":
            del container[key]
        elif operation == "replace":
            container[key] = draw(values)
        elif isinstance(container, dict):
            container[draw(st.sampled_from(names))] = draw(values)
        else:
            container.insert(key, draw(values))
    return document


def plain_texts(excluded_categories: tuple) -> st.SearchStrategy:
    """1 to 12 characters outside `excluded_categories`, not blank and never holding the reserved label."""
    return st.text(alphabet=st.characters(blacklist_categories=excluded_categories), min_size=1,
                   max_size=12).filter(lambda s: s.strip(JS_WHITESPACE) and RESERVED_LABEL not in s)


@st.composite
def padded(draw, text: st.SearchStrategy, padding: st.SearchStrategy):
    """A `text` with optional JavaScript whitespace (`padding`) around it."""
    return draw(padding) + draw(text) + draw(padding)
