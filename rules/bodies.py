"""The console API's JSON bodies (document 2) read into the typed arguments of the rule services.

Refused here: a property a body may not have (400 invalid_json naming it) or lacks (400
required_field_missing), a `rule_id` that is not a UUID (400 invalid_rule_id), a preview's
`capability_version` and a `semantic_confirmed` that is not a JSON boolean. The services check
every other value, in their documented order; so that a value of the wrong JSON kind is still
refused in its place in that order, it reaches its service as a value the service refuses with the
same code and detail: a revision number that is not a JSON integer as 0, a text that is not a JSON
string as "", permissions that are not an array of strings as none, and `confirm` anything but
true as not confirmed. A rule definition and a preview's samples are documents the services
validate: they are passed on as sent.
"""
from core.api import ApiError, parse_uuid
from core.capabilities import CAPABILITY_VERSION
from core.guards import only_properties
from rules.preview import Simulation, checked_rule
from rules.service import Publication, RuleChange

SAVE = ("definition", "rule_id", "expected_revision")
PUBLISH = ("revision", "expected_active_revision", "permissions", "confirm", "execution_mode")
PUBLISH_REQUIRED = ("revision", "expected_active_revision")
PREVIEW = ("capability_version", "definition", "samples", "instant")
APPROVAL = ("confirm", "permission")
NOT_A_REVISION = 0  # what a revision number of another JSON kind becomes: refused as invalid_version


def _revision(value: object) -> int:
    """A JSON integer as it is; a boolean, a fraction, a text or anything else as NOT_A_REVISION."""
    return value if isinstance(value, int) and not isinstance(value, bool) else NOT_A_REVISION


def _text(value: object) -> str:
    """A JSON string as it is; any other value as ""."""
    return value if isinstance(value, str) else ""


def _texts(value: object) -> tuple[str, ...]:
    """A JSON array of strings as a tuple; any other value as the empty tuple."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    return ()


def empty(body: dict) -> None:
    """A body that must be `{}` (a pause, a plan): 400 invalid_json naming its first property."""
    only_properties(body, ())


def rule_to_save(body: dict) -> tuple[object, RuleChange | None]:
    """The definition to save, and for a change (`rule_id` and `expected_revision`, both or
    neither) which rule and revision it changes."""
    only_properties(body, SAVE, ("definition",))
    if "rule_id" not in body and "expected_revision" not in body:
        return body["definition"], None
    only_properties(body, SAVE, SAVE)
    change = RuleChange(parse_uuid(body["rule_id"], "invalid_rule_id"), _revision(body["expected_revision"]))
    return body["definition"], change


def publication(body: dict) -> Publication:
    """What a publish body asks for; `execution_mode` left out or null is None (plan_only)."""
    only_properties(body, PUBLISH, PUBLISH_REQUIRED)
    expected, mode = body["expected_active_revision"], body.get("execution_mode")
    return Publication(revision=_revision(body["revision"]),
                       expected_active_revision=None if expected is None else _revision(expected),
                       permissions=_texts(body.get("permissions")), confirmed=body.get("confirm") is True,
                       execution_mode=None if mode is None else _text(mode))


def simulation(body: dict) -> Simulation:
    """What a preview body asks to simulate. `semantic_confirmed` may be left out (false); when it
    is not a boolean, a refused definition is still named first, as the preview names it."""
    only_properties(body, PREVIEW + ("semantic_confirmed",), PREVIEW)
    if body["capability_version"] != CAPABILITY_VERSION:
        raise ApiError("invalid_capability_version", 400, detail="capability_version")
    confirmed = body.get("semantic_confirmed", False)
    if not isinstance(confirmed, bool):
        checked_rule(body["definition"])
        raise ApiError("invalid_json", 400, detail="semantic_confirmed")
    return Simulation(body["definition"], body["samples"], _text(body["instant"]), confirmed)


def approval(body: dict) -> tuple[bool, str]:
    """Whether an execute-plan body confirms (`confirm` exactly true), and the permission it names."""
    only_properties(body, APPROVAL, APPROVAL)
    return body["confirm"] is True, _text(body["permission"])
