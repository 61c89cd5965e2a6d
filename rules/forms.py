"""Turning the automation console's HTML forms into what the rule services take, and back: the
rule editor (definition), revision numbers, the preview panel (samples and instant) and error
placement."""
import re
from datetime import datetime

from flask_babel import gettext as _
from flask_babel import lazy_gettext as _l
from werkzeug.datastructures import MultiDict

from core.clock import beijing_to_utc, to_beijing, utcnow
from core.forms import form_decimal, form_integer, number_or_text
from core.labels import RESERVED_LABEL
from rules.catalog import LIMITS
from rules import definition as rule_definition
from rules.preview import INSTANT_YEARS, SAMPLE_ID_CHARS, SAMPLE_STATUSES

WEEKDAYS = tuple(zip(map(str, rule_definition.WEEKDAYS),
                    (_l("Mon"), _l("Tue"), _l("Wed"), _l("Thu"), _l("Fri"), _l("Sat"), _l("Sun"))))
# Conversation statuses as the editor and the sample rows name them (the values stay the codes).
STATUS_LABELS = {"open": _l("open"), "pending": _l("pending"), "resolved": _l("resolved")}
SAMPLE_STATUS_CHOICES = tuple((status, STATUS_LABELS[status]) for status in SAMPLE_STATUSES)
MAX_SLOT_ROWS = LIMITS["slots"]
MAX_SAMPLE_ROWS = 20  # rows typed one by one; more samples can be pasted
# Rows read from a post at most: more than the limits, so the service names the excess itself.
_ROW_CAP = 30
_SPLIT = re.compile(r"[,\n，]")
_PATH_PART = re.compile(r"^(?:definition\.)?(\w+)(?:\[(\d+)\])?(?:\.(\w+))?")
DEFAULT_SAMPLES = [
    {"id": "s1", "text": "Where is my parcel? It has not arrived.", "status": "open", "assignee_ref": ""},
    {"id": "s2", "text": "I want a refund for the broken kettle.", "status": "pending", "assignee_ref": ""},
]


def _assignee(ref: object, bind: bool) -> dict:
    """An assignee reference as the editor's two controls: a member choice (when `bind`) or a
    placeholder."""
    ref = ref if isinstance(ref, str) else ""
    if bind and rule_definition.is_member_id(ref):
        return {"member": ref, "placeholder": ""}
    return {"member": "", "placeholder": ref}


def definition_to_form(definition: dict, bind: bool = True) -> dict:
    """The editor's values for a rule definition; with `bind` false (an AI draft) every assignee is
    shown as placeholder text and no agent is chosen, whatever the draft says."""
    semantic = definition.get("semantic") or None
    keywords = definition.get("keywords") or []
    return {
        "name": definition.get("name", ""),
        "trigger": definition.get("trigger", "weekly"),
        "slots": [{"weekdays": [str(day) for day in slot.get("weekdays", [])], "time": slot.get("time", ""),
                   **_assignee(slot.get("assignee_ref"), bind)} for slot in definition.get("slots") or []],
        "assignee": _assignee(definition.get("assignee_ref"), bind),
        "filter": "semantic" if semantic else ("keywords" if keywords else "none"),
        "keywords": "\n".join(keywords),
        "labels": "\n".join(semantic["labels"]) if semantic else "",
        "min_confidence": str(semantic["min_confidence"]) if semantic else "0.8",
        "statuses": list(definition.get("statuses") or []),
        "overwrite_assigned": bool(definition.get("overwrite_assigned")),
        "max_actions": str(definition.get("max_actions", "")),
    }


def _rows(form: MultiDict, prefix: str) -> int:
    """How many rows of a repeated group the form posted (`<prefix>_count`), bounded."""
    return min(form_integer(form.get(f"{prefix}_count")) or 0, _ROW_CAP)


def _ref(member: str, placeholder: str) -> str:
    """A chosen member wins over the placeholder text typed before binding."""
    return member or placeholder.strip()


def _split(text: str) -> list[str]:
    """A comma or line separated list, blanks dropped."""
    return [part.strip() for part in _SPLIT.split(text) if part.strip()]


def form_values(form: MultiDict) -> dict:
    """The editor's values as posted (what a re-render shows again)."""
    slots = [{"weekdays": form.getlist(f"slots-{i}-weekdays"), "time": form.get(f"slots-{i}-time", ""),
              "member": form.get(f"slots-{i}-member", ""), "placeholder": form.get(f"slots-{i}-placeholder", "")}
             for i in range(_rows(form, "slots"))]
    return {
        "name": form.get("name", ""), "trigger": form.get("trigger", "weekly"), "slots": slots,
        "assignee": {"member": form.get("assignee-member", ""), "placeholder": form.get("assignee-placeholder", "")},
        "filter": form.get("filter", "none"), "keywords": form.get("keywords", ""),
        "labels": form.get("labels", ""), "min_confidence": form.get("min_confidence", ""),
        "statuses": form.getlist("statuses"), "overwrite_assigned": form.get("overwrite_assigned") == "on",
        "max_actions": form.get("max_actions", ""),
    }


def values_to_definition(values: dict) -> dict:
    """A rule definition from the editor's values: only the controls of the chosen trigger and
    filter count, so a hidden section's leftovers never reach the rule."""
    weekly = values["trigger"] == "weekly"
    definition = {
        "schema_version": rule_definition.SCHEMA_VERSIONS[-1], "name": values["name"],
        "timezone": rule_definition.TIMEZONES[0], "trigger": values["trigger"],
        "slots": [{"weekdays": [number_or_text(day) for day in slot["weekdays"]], "time": slot["time"].strip(),
                   "assignee_ref": _ref(slot["member"], slot["placeholder"])}
                  for slot in values["slots"]] if weekly else [],
        "assignee_ref": "" if weekly else _ref(values["assignee"]["member"], values["assignee"]["placeholder"]),
        "keywords": _split(values["keywords"]) if values["filter"] == "keywords" else [],
        "statuses": values["statuses"],
        "overwrite_assigned": values["overwrite_assigned"],
        "max_actions": number_or_text(values["max_actions"]),
    }
    if values["filter"] == "semantic":
        definition["semantic"] = {"labels": _split(values["labels"]),
                                  "min_confidence": number_or_text(values["min_confidence"], form_decimal)}
    return definition


def revision_number(text: str | None) -> int:
    """A revision number a form carries (`core.forms.form_integer`); anything else is 0, which the
    services refuse as invalid_version like every number below 1."""
    return form_integer(text) or 0


def add_row(rows: list, blank: dict, limit: int) -> list:
    """The rows with one blank row appended, unless the limit is reached."""
    return rows + [dict(blank)] if len(rows) < limit else rows


def remove_row(rows: list, index: int) -> list:
    """The rows without the one at `index` (an index out of range changes nothing)."""
    return [row for i, row in enumerate(rows) if i != index]


BLANK_SLOT = {"weekdays": [], "time": "09:00", "member": "", "placeholder": ""}
BLANK_SAMPLE = {"id": "", "text": "", "status": "open", "assignee_ref": ""}


# --- the preview panel --------------------------------------------------------------------------

def sample_rows(form: MultiDict) -> list[dict]:
    """The sample rows as posted (a re-render shows them again, blank ones included)."""
    return [{"id": form.get(f"samples-{i}-id", ""), "text": form.get(f"samples-{i}-text", ""),
             "status": form.get(f"samples-{i}-status", "open"),
             "assignee_ref": form.get(f"samples-{i}-assignee", "")} for i in range(_rows(form, "samples"))]


def pasted_samples(text: str) -> list[dict]:
    """One sample per non-blank line: `text`, or `status<TAB>text`; ids p1, p2, …"""
    samples = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line.strip():
            continue
        status, _tab, rest = line.partition("\t")
        if rest and status.strip() in SAMPLE_STATUSES:
            line, chosen = rest, status.strip()
        else:
            chosen = "open"
        samples.append({"id": f"p{len(samples) + 1}", "text": line.strip(), "status": chosen, "assignee_ref": None})
    return samples


def samples_for_preview(rows: list[dict], pasted: str) -> tuple[list[dict], list[tuple[str, int]]]:
    """The typed rows that have text (ids default to s1, s2, …) followed by the pasted lines, and
    where each came from (`("row", 2)`: sample row 2, `("pasted", 1)`: pasted sample 1) to place the
    preview's errors."""
    typed = [(i, {"id": row["id"].strip() or f"s{i + 1}", "text": row["text"], "status": row["status"],
                  "assignee_ref": row["assignee_ref"].strip() or None})
             for i, row in enumerate(rows) if row["text"].strip()]
    lines = pasted_samples(pasted)
    origins = [("row", i + 1) for i, _sample in typed] + [("pasted", n + 1) for n in range(len(lines))]
    return [sample for _row, sample in typed] + lines, origins


def instant_value(moment: datetime | None = None) -> str:
    """A moment as the datetime-local control's Beijing wall-clock value (now by default)."""
    return to_beijing(moment or utcnow()).strftime("%Y-%m-%dT%H:%M")


def instant_to_utc(text: str) -> str:
    """The datetime-local value (Beijing time) as the UTC ISO 8601 instant the preview takes;
    text that is not a time of the accepted years is passed on for the service to refuse."""
    try:
        local = datetime.fromisoformat(text.strip())
    except ValueError:
        return text
    if local.tzinfo is not None or not INSTANT_YEARS[0] <= local.year <= INSTANT_YEARS[1]:
        return text  # converting year 1 or 9999 would leave datetime's range
    return beijing_to_utc(local).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- errors at their place ----------------------------------------------------------------------

def error_place(detail: str | None) -> str:
    """Which editor control a service error's JSON path belongs to: `slots.1.time`, `slots.1`,
    `keywords`, `semantic.labels` …, or `form` when no control matches."""
    match = _PATH_PART.match(detail or "")
    if not match:
        return "form"
    top, index, sub = match.groups()
    if top == "slots":
        if index is None:
            return "slots"
        return f"slots.{index}.{sub}" if sub in ("weekdays", "time", "assignee_ref") else f"slots.{index}"
    if top == "semantic":
        return f"semantic.{sub}" if sub in ("labels", "min_confidence") else "semantic"
    if top in ("name", "trigger", "assignee_ref", "keywords", "statuses", "overwrite_assigned", "max_actions"):
        return top
    return "form"


# What an error means, in words, next to its control (the code and path are shown beside it).
_INVALID_MESSAGES = {
    "name": _l("Give the rule a name of at most %(max)s characters on one line.", max=LIMITS["name_chars"]),
    "trigger": _l("Choose one of the three triggers."),
    "slots": _l("A weekly rule needs 1 to %(max)s slots; the other triggers use no slots.", max=LIMITS["slots"]),
    "slot": _l("This slot is not valid."),
    "slot.weekdays": _l("Tick at least one weekday; a weekday and time may occur only once across the slots."),
    "slot.time": _l("Enter the time as HH:mm, 00:00 to 23:59 (Beijing time)."),
    "slot.assignee_ref": _l("Choose an agent, or type a placeholder of at most %(max)s characters.",
                            max=LIMITS["assignee_ref_chars"]),
    "assignee_ref": _l("Manual and message rules need an assignee: choose an agent or type a placeholder."),
    "keywords": _l("Manual and message rules need exactly one filter. Keywords: at most %(max)s, each at most "
                   "%(chars)s characters, no repeats (case is ignored).",
                   max=LIMITS["keywords"], chars=LIMITS["keyword_chars"]),
    "semantic": _l("Use keywords or semantic labels, not both."),
    "semantic.labels": _l("1 to %(max)s distinct labels of at most %(chars)s characters each; %(reserved)s is "
                          "reserved.", max=LIMITS["semantic_labels"], chars=LIMITS["semantic_label_chars"],
                          reserved=RESERVED_LABEL),
    "semantic.min_confidence": _l("The confidence threshold is a number from %(low)s to %(high)s.",
                                  low=LIMITS["min_confidence_low"], high=LIMITS["min_confidence_high"]),
    "statuses": _l("Tick open, pending or both."),
    "overwrite_assigned": _l("Tick or untick the box."),
    "max_actions": _l("A whole number from 1 to %(max)s.", max=LIMITS["max_actions"]),
}
_CODE_MESSAGES = {
    "required_field_missing": _l("This is required."),
    "rule_member_binding_required": _l("Bind this assignee: choose one of the bindable agents instead of the "
                                       "placeholder."),
    "rule_member_unavailable": _l("This member cannot be assigned: only active, synchronized agents of this "
                                  "tenant can. Choose another agent."),
    "version_conflict": _l("Someone saved a newer revision of this rule meanwhile. Your changes are still in the "
                           "form; open the rule again to see theirs before saving yours."),
    "rule_limit": _l("This tenant already has %(max)s rules, the most allowed.", max=LIMITS["rules_per_tenant"]),
    "revision_limit": _l("This rule already has %(max)s revisions, the most allowed.",
                         max=LIMITS["revisions_per_rule"]),
}


def error_message(code: str, place: str) -> str:
    """A sentence for an error shown at `place` (see error_place), in the page's language."""
    if code in _CODE_MESSAGES:
        return str(_CODE_MESSAGES[code])
    kind = re.sub(r"^slots\.\d+", "slot", place)
    return str(_INVALID_MESSAGES[kind]) if kind in _INVALID_MESSAGES else _("This value is not valid here.")


_SAMPLE_PATH = re.compile(r"^samples\[(\d+)\](?:\.(\w+))?$")
_SAMPLE_FIELDS = {"id": _l("its id must be unique, on one line and at most %(max)s characters", max=SAMPLE_ID_CHARS),
                  "text": _l("its text may be at most %(max)s characters", max=f"{LIMITS['sample_text_chars']:,}"),
                  "status": _l("its status must be open, pending or resolved"),
                  "assignee_ref": _l("its current assignee must be one line of at most %(max)s characters",
                                     max=LIMITS["assignee_ref_chars"])}


def _sample_problem(origin: tuple[str, int] | None, number: int, problem: str) -> str:
    """The sentence naming a sample's problem by the row or pasted line it came from."""
    if origin is None:
        return _("The sample %(num)s is not valid: %(problem)s.", num=number, problem=problem)
    kind, number = origin
    if kind == "row":
        return _("The sample row %(num)s is not valid: %(problem)s.", num=number, problem=problem)
    return _("The pasted sample %(num)s is not valid: %(problem)s.", num=number, problem=problem)


def preview_error_message(code: str, detail: str | None, origins: list[tuple[str, int]]) -> str:
    """A sentence for a refused preview; sample paths name the row or pasted line they came from."""
    if detail and detail.startswith("definition"):
        problem = error_message(code, error_place(detail))
        # The English sentence continues in lower case; other scripts (and `HH:mm` in them) stay as written.
        return _("The rule in the editor is not valid: %(problem)s",
                 problem=problem.lower() if problem.isascii() else problem)
    if code == "semantic_confirmation_required":
        return _("Tick the confirmation for a semantic preview: the samples go to the platform's model and use AI "
                 "points.")
    if code == "invalid_instant":
        return _("Choose the instant as a date and time (Beijing time) from %(first)s to %(last)s.",
                 first=INSTANT_YEARS[0], last=INSTANT_YEARS[1])
    match = _SAMPLE_PATH.match(detail or "")
    if code in ("invalid_samples", "required_field_missing") and match:
        index, name = int(match[1]), match[2]
        problem = str(_SAMPLE_FIELDS[name]) if name in _SAMPLE_FIELDS else _("check its values")
        return _sample_problem(origins[index] if index < len(origins) else None, index + 1, problem)
    if code == "invalid_samples":
        return _("A preview takes at most %(max)s samples (%(semantic)s for a semantic rule).",
                 max=LIMITS["preview_samples"], semantic=LIMITS["semantic_preview_samples"])
    if code.startswith("model_"):
        return _("The platform's model could not classify the samples; the points of the calls it answered still "
                 "count.")
    return _("The preview was refused.")
