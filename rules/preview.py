"""POST /automation-preview: a rule simulated on synthetic samples; nothing real is read or written.

The administrator supplies the samples, so no conversation or member is read, no rule is saved,
no job is started and nothing is assigned. Only a semantic rule calls the model (one call per
sample still in play) and meters the tokens afterwards, also when a later call failed (the view
commits the ledger row). Checks, reasons and codes: docs/decisions.md, "Automation preview".
The service takes a `Simulation`; a JSON body is read into one by `rules.bodies`, the editor's
form by the console view.
"""
import re
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from core.api import ApiError
from core.capabilities import CAPABILITY_VERSION
from core.guards import only_properties
from core.text import JS_WHITESPACE, SINGLE_LINE_BAD, fits_utf16
from desk.points import points_for
from rules.calendar import next_times, slot_in_effect
from rules.catalog import LIMITS
from rules.deciding import Usage, cap, decide
from rules.definition import validate_rule

SAMPLE = (("id", "text", "status"), ("assignee_ref",))
SAMPLE_STATUSES = ("open", "pending", "resolved")
SAMPLE_ID_CHARS = 64
# A UTC ISO 8601 date-time: seconds and fraction optional, the zone `Z` or `+00:00` only.
INSTANT_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|\+00:00)", re.ASCII)
INVALID_SAMPLES = "invalid_samples"
# The instants a preview accepts: UTC years 2000 to 2199 (docs/decisions.md, "Automation preview").
INSTANT_YEARS = (2000, 2199)


@dataclass(frozen=True)
class Simulation:
    """What a preview simulates: a rule definition and synthetic samples, both as sent (the preview
    checks them), at `instant` (UTC ISO 8601 text), and whether the administrator confirmed that a
    semantic rule's samples go to the model and use AI points (`semantic_confirmed`, only True counts)."""

    definition: object
    samples: object
    instant: str
    semantic_confirmed: bool = False


def preview(tenant_id: uuid.UUID, simulation: Simulation) -> dict:
    """Simulate a rule on the samples at the instant; meters the model's tokens (flush only).

    A semantic rule is refused (400 semantic_confirmation_required) and no model called unless
    `semantic_confirmed` is True. The first problem wins, in this order: the definition, the
    semantic confirmation, the instant, then the samples.
    """
    rule, samples, instant = _checked(simulation)
    slot = slot_in_effect(rule["slots"], instant) if rule["trigger"] == "weekly" else None
    usage = Usage()
    try:
        decisions = [decide(rule, sample, slot, usage) for sample in samples]
    finally:  # a model error: what the model already did is still metered (the view commits it)
        usage.meter(tenant_id, "semantic_preview", None)
    cap(decisions, rule["max_actions"])
    return {
        "executed": False, "real_conversations_read": 0, "capability_version": CAPABILITY_VERSION,
        "trigger": rule["trigger"], "planned_count": sum(d.planned for d in decisions),
        "samples": [d.answer() for d in decisions],
        "next_planned_times": next_times(rule["slots"], instant) if rule["trigger"] == "weekly" else [],
        "ai_usage": _usage_answer(usage) if "semantic" in rule else None,
    }


# --- the request --------------------------------------------------------------------------------

def _checked(simulation: Simulation) -> tuple[dict, list[dict], datetime]:
    """The validated rule, samples and instant, or the first problem as a 400 ApiError."""
    rule = checked_rule(simulation.definition)
    if "semantic" in rule and simulation.semantic_confirmed is not True:
        raise ApiError("semantic_confirmation_required", 400)
    instant = _instant(simulation.instant)
    limit = LIMITS["semantic_preview_samples" if "semantic" in rule else "preview_samples"]
    return rule, _samples(simulation.samples, limit), instant


def checked_rule(raw: object) -> dict:
    """The validated definition; the validator's problem keeps its code, its path under `definition`."""
    try:
        return validate_rule(raw)
    except ApiError as error:
        path = "definition" if error.detail in (None, "$") else f"definition.{error.detail}"
        raise ApiError(error.code, error.status, detail=path) from None


def _instant(value: str) -> datetime:
    """A UTC ISO 8601 date-time (`Z` or `+00:00`) of the years 2000 to 2199 as an aware datetime,
    else 400 invalid_instant (so the week and next-times arithmetic stays far from datetime's ends)."""
    if not INSTANT_RE.fullmatch(value):
        raise ApiError("invalid_instant", 400, detail="instant")
    try:
        instant = datetime.fromisoformat(value).astimezone(timezone.utc)
    except ValueError:  # no such calendar day or hour
        raise ApiError("invalid_instant", 400, detail="instant") from None
    if not INSTANT_YEARS[0] <= instant.year <= INSTANT_YEARS[1]:
        raise ApiError("invalid_instant", 400, detail="instant")
    return instant


def _samples(value: object, limit: int) -> list[dict]:
    """At most `limit` valid samples with distinct ids."""
    if not isinstance(value, list) or len(value) > limit:
        raise ApiError(INVALID_SAMPLES, 400, detail="samples")
    samples, seen = [], set()
    for index, item in enumerate(value):
        sample = _sample(item, f"samples[{index}]")
        if sample["id"] in seen:
            raise ApiError(INVALID_SAMPLES, 400, detail=f"samples[{index}].id")
        seen.add(sample["id"])
        samples.append(sample)
    return samples


def _sample(value: object, path: str) -> dict:
    """One sample: id, text, status and assignee_ref (null when absent)."""
    if not isinstance(value, dict):
        raise ApiError(INVALID_SAMPLES, 400, detail=path)
    only_properties(value, SAMPLE[0] + SAMPLE[1], SAMPLE[0], unknown=INVALID_SAMPLES, at=f"{path}.")
    identifier, text, status = value["id"], value["text"], value["status"]
    assignee = value.get("assignee_ref")
    if not _single_line(identifier, SAMPLE_ID_CHARS):
        raise ApiError(INVALID_SAMPLES, 400, detail=f"{path}.id")
    if not isinstance(text, str) or not fits_utf16(text, LIMITS["sample_text_chars"]):
        raise ApiError(INVALID_SAMPLES, 400, detail=f"{path}.text")
    if status not in SAMPLE_STATUSES:
        raise ApiError(INVALID_SAMPLES, 400, detail=f"{path}.status")
    if assignee is not None and not _single_line(assignee, LIMITS["assignee_ref_chars"]):
        raise ApiError(INVALID_SAMPLES, 400, detail=f"{path}.assignee_ref")
    return {"id": identifier, "text": text, "status": status,
            "assignee_ref": assignee.strip(JS_WHITESPACE) if assignee is not None else None}


def _single_line(value: object, limit: int) -> bool:
    """A non-blank text of at most `limit` UTF-16 units without control characters."""
    return (isinstance(value, str) and bool(value.strip(JS_WHITESPACE))
            and not SINGLE_LINE_BAD.search(value) and fits_utf16(value, limit))


def _usage_answer(usage: Usage) -> dict:
    """The tokens and points a semantic preview used."""
    return {"model_calls": usage.calls, "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "points": points_for(usage.input_tokens, usage.output_tokens)}
