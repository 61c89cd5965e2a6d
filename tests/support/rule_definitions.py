"""Automation rule definitions for the validator's and the schema's tests: one of each trigger, and
the hypothesis strategy of random rules that follow every rule."""
from hypothesis import strategies as st

from core.text import JS_WHITESPACE
from rules.catalog import LIMITS
from rules.definition import STATUSES, TRIGGERS
from tests.support.definitions import padded, plain_texts

WEEKLY = {
    "schema_version": 1,
    "name": "Weekday rotation",
    "timezone": "Asia/Shanghai",
    "trigger": "weekly",
    "slots": [
        {"weekdays": [1, 2, 3, 4, 5], "time": "09:00", "assignee_ref": "Agent A"},
        {"weekdays": [6, 7], "time": "10:30", "assignee_ref": "Agent B"},
    ],
    "assignee_ref": "",
    "keywords": [],
    "statuses": ["open", "pending"],
    "overwrite_assigned": False,
    "max_actions": 20,
}
KEYWORD = {**WEEKLY, "name": "Refunds to billing", "trigger": "manual_sample", "slots": [],
           "assignee_ref": "Billing desk", "keywords": ["refund", "invoice"], "statuses": ["open"],
           "overwrite_assigned": True, "max_actions": 100}
SEMANTIC = {**WEEKLY, "name": "Intents", "trigger": "message_received", "slots": [], "assignee_ref": "Agent C",
            "semantic": {"labels": ["billing", "delivery"], "min_confidence": 0.85}, "max_actions": 1}
RULES = {"weekly": WEEKLY, "keyword": KEYWORD, "semantic": SEMANTIC}

PLAIN_TEXT = plain_texts(("Cc", "Cs", "Zl", "Zp"))
PADDING = st.sampled_from(["", " ", "\t", "\u3000", "\n", "\ufeff"])
PADDED = padded(PLAIN_TEXT, PADDING)


@st.composite
def whole_numbers(draw, low: int, high: int):
    """An integer, sometimes written as an integral float."""
    number = draw(st.integers(low, high))
    return draw(st.sampled_from([number, float(number)]))


@st.composite
def slots_strategy(draw):
    """1 to 7 slots, no weekday and time twice."""
    slots, used = [], set()
    for _ in range(draw(st.integers(1, LIMITS["slots"]))):
        hour = draw(st.sampled_from([0, 9, 23]) | st.integers(0, 23))
        minute = draw(st.sampled_from([0, 59]) | st.integers(0, 59))
        time = f"{hour:02d}:{minute:02d}"
        free = [day for day in range(1, 8) if (day, time) not in used]
        if not free:
            continue
        days = draw(st.lists(st.sampled_from(free), min_size=1, unique=True))
        used |= {(day, time) for day in days}
        slots.append({"weekdays": [draw(st.sampled_from([day, float(day)])) for day in days], "time": time,
                      "assignee_ref": draw(PADDED)})
    return slots


@st.composite
def filters(draw, required: bool) -> dict:
    """Keywords or a semantic filter (or, unless required, neither); keywords unique ignoring case."""
    kind = draw(st.sampled_from(["keywords", "semantic"] if required else ["keywords", "semantic", None]))
    if kind == "keywords":
        keywords = draw(st.lists(PLAIN_TEXT, min_size=1, max_size=LIMITS["keywords"],
                                 unique_by=lambda s: s.strip(JS_WHITESPACE).casefold()))
        return {"keywords": [draw(PADDING) + keyword for keyword in keywords]}
    if kind == "semantic":
        labels = draw(st.lists(PLAIN_TEXT, min_size=1, max_size=LIMITS["semantic_labels"],
                               unique_by=lambda s: s.strip(JS_WHITESPACE)))
        confidence = draw(st.floats(0.8, 1) | st.just(1))
        return {"keywords": [], "semantic": {"labels": labels, "min_confidence": confidence}}
    return {"keywords": []}


@st.composite
def valid_rules(draw):
    """A random rule that follows every rule, with untrimmed texts and float integers."""
    trigger = draw(st.sampled_from(TRIGGERS))
    return {"schema_version": draw(st.sampled_from([1, 1.0])), "name": draw(PADDED),
            "timezone": "Asia/Shanghai", "trigger": trigger,
            "slots": draw(slots_strategy()) if trigger == "weekly" else [],
            "assignee_ref": draw(PADDING) if trigger == "weekly" else draw(PADDED),
            **draw(filters(required=trigger != "weekly")),
            "statuses": draw(st.lists(st.sampled_from(STATUSES), min_size=1, unique=True)),
            "overwrite_assigned": draw(st.booleans()),
            "max_actions": draw(whole_numbers(1, LIMITS["max_actions"]))}
