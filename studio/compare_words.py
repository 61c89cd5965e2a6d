"""The comparison of two versions in words, for the console page and the publish confirmation
(issue 38): each change of `studio.compare` under its section ("Fields", "Rules", …), named by what
it changes ("Field “Priority” · Options") and labelled "Added", "Removed" or "Changed", its values
as the definition holds them; a plain array's added and removed values; the script as a line diff.
Sections and elements without a change are listed apart, for the page to collapse."""
import difflib
import re
from dataclasses import dataclass, field

from flask_babel import gettext as _
from flask_babel import lazy_pgettext

from studio.compare import ADDED, CHANGED, REMOVED, Change

# The comparison's words have a context of their own: "Changed" or "Source" mean something else elsewhere.
KIND_WORDS = {
    ADDED: lazy_pgettext("comparison", "Added"),
    REMOVED: lazy_pgettext("comparison", "Removed"),
    CHANGED: lazy_pgettext("comparison", "Changed"),
}
SCRIPT_CONTEXT_LINES = 2

# Each section: its name, the top-level properties it shows and its heading, in the definition's order.
SECTIONS = (
    ("page", ("schema_version", "name", "description", "page"), lazy_pgettext("comparison", "Page texts")),
    ("fields", ("fields",), lazy_pgettext("comparison", "Fields")),
    ("table_columns", ("table_columns",), lazy_pgettext("comparison", "Table columns")),
    ("rules", ("workflow",), lazy_pgettext("comparison", "Rules")),
    ("charts", ("charts",), lazy_pgettext("comparison", "Charts")),
    ("code", ("code",), lazy_pgettext("comparison", "Script")),
    ("workbench", ("workbench",), lazy_pgettext("comparison", "Workbench settings")),
    ("intent", ("intent",), lazy_pgettext("comparison", "Intent labels")),
    ("actions", ("actions",), lazy_pgettext("comparison", "Actions")),
)
_SECTION_OF = {name: section for section, names, _heading in SECTIONS for name in names}

PROPERTY_WORDS = {
    "schema_version": lazy_pgettext("comparison", "Schema version"),
    "name": lazy_pgettext("comparison", "Name"),
    "description": lazy_pgettext("comparison", "Description"),
    "page": lazy_pgettext("comparison", "Page"),
    "page.title": lazy_pgettext("comparison", "Page title"),
    "page.description": lazy_pgettext("comparison", "Page description"),
    "page.columns": lazy_pgettext("comparison", "Page columns"),
    "page.submit_label": lazy_pgettext("comparison", "Submit button label"),
    "key": lazy_pgettext("comparison", "Key"),
    "label": lazy_pgettext("comparison", "Label"),
    "type": lazy_pgettext("comparison", "Type"),
    "required": lazy_pgettext("comparison", "Required"),
    "options": lazy_pgettext("comparison", "Options"),
    "trigger": lazy_pgettext("comparison", "Trigger"),
    "when": lazy_pgettext("comparison", "Condition"),
    "when.field": lazy_pgettext("comparison", "Condition field"),
    "when.operator": lazy_pgettext("comparison", "Condition operator"),
    "when.value": lazy_pgettext("comparison", "Condition value"),
    "then": lazy_pgettext("comparison", "Result"),
    "then.field": lazy_pgettext("comparison", "Result field"),
    "then.value": lazy_pgettext("comparison", "Result value"),
    "title": lazy_pgettext("comparison", "Title"),
    "group_by": lazy_pgettext("comparison", "Grouped by"),
    "metric": lazy_pgettext("comparison", "Metric"),
    "value_field": lazy_pgettext("comparison", "Value field"),
    "language": lazy_pgettext("comparison", "Language"),
    "source": lazy_pgettext("comparison", "Source"),
    "theme": lazy_pgettext("comparison", "Theme"),
    "density": lazy_pgettext("comparison", "Density"),
    "list_width": lazy_pgettext("comparison", "List width"),
    "details_width": lazy_pgettext("comparison", "Details width"),
    "tools_position": lazy_pgettext("comparison", "Tools position"),
    "labels": lazy_pgettext("comparison", "Labels"),
    "kind": lazy_pgettext("comparison", "Kind"),
    "fields": lazy_pgettext("comparison", "Fields"),
    "name_field": lazy_pgettext("comparison", "Name field"),
    "content_field": lazy_pgettext("comparison", "Content field"),
    "audience_tag_field": lazy_pgettext("comparison", "Audience tag field"),
}
OPERATOR_WORDS = {
    "equals": lazy_pgettext("comparison", "equals"),
    "not_equals": lazy_pgettext("comparison", "does not equal"),
    "gte": "≥",
    "gt": ">",
    "lt": "<",
    "lte": "≤",
    "contains": lazy_pgettext("comparison", "contains"),
    "starts_with": lazy_pgettext("comparison", "starts with"),
    "ends_with": lazy_pgettext("comparison", "ends with"),
}
_FIELD_KEY_PROPERTIES = {"field", "group_by", "value_field", "name_field", "content_field", "audience_tag_field",
                         "table_columns"}
_TOKEN = re.compile(r"\[(\d+)\]|\.?([^.\[\]]+)")


@dataclass(frozen=True)
class Line:
    """One line of the script's diff: `sign` "+" added, "-" removed, " " kept, "…" lines skipped."""
    sign: str
    old: int | None
    new: int | None
    text: str


@dataclass
class Item:
    """One change in words; a plain array also lists the values it gained and lost."""
    kind: str
    subject: str
    before: str | None
    after: str | None
    gained: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    lines: list[Line] = field(default_factory=list)

    @property
    def kind_word(self) -> str:
        return str(KIND_WORDS[self.kind])


@dataclass
class Section:
    """A section of the definition: its changes and the names of its elements that did not change."""
    name: str
    heading: str
    items: list[Item] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


@dataclass
class Comparison:
    """The changed sections in the definition's order and the headings of the unchanged ones."""
    sections: list[Section]
    unchanged: list[str]

    @property
    def count(self) -> int:
        return sum(len(section.items) for section in self.sections)


def described(before: dict, after: dict, changes: list[Change]) -> Comparison:
    """The `changes` from the `before` definition to the `after` one, in words."""
    words = _Words(before, after)
    by_section: dict[str, list[Item]] = {}
    for change in changes:
        tokens = _tokens(change.path)
        by_section.setdefault(_SECTION_OF.get(tokens[0], "page"), []).append(words.item(change, tokens))
    sections, unchanged = [], []
    for name, properties, heading in SECTIONS:
        if not any(prop in before or prop in after for prop in properties):
            continue
        if name in by_section:
            sections.append(Section(name, str(heading), by_section[name], words.unchanged(name, changes)))
        else:
            unchanged.append(str(heading))
    return Comparison(sections, unchanged)


def line_diff(before: str, after: str) -> list[Line]:
    """The changed lines of a script with two lines of context, the unchanged runs between skipped."""
    old, new = before.splitlines(), after.splitlines()
    lines: list[Line] = []
    for group in difflib.SequenceMatcher(None, old, new, autojunk=False).get_grouped_opcodes(SCRIPT_CONTEXT_LINES):
        if lines or group[0][1] > 0:
            lines.append(Line("…", None, None, ""))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                lines += [Line(" ", i + 1, j1 + i - i1 + 1, old[i]) for i in range(i1, i2)]
                continue
            lines += [Line("-", i + 1, None, old[i]) for i in range(i1, i2)]
            lines += [Line("+", None, j + 1, new[j]) for j in range(j1, j2)]
    if lines and (group[-1][2] < len(old) or group[-1][4] < len(new)):
        lines.append(Line("…", None, None, ""))
    return lines


def _tokens(path: str) -> list:
    """`workflow.rules[2].when.value` → ["workflow", "rules", 2, "when", "value"]."""
    return [int(index) if index else name for index, name in _TOKEN.findall(path)]


class _Words:
    """What each change is to, by the names of the version that holds it (a removed element by the
    earlier version's, everything else by the later one's); values by their own version's names."""

    def __init__(self, before: dict, after: dict):
        self.before, self.after = before, after
        self.earlier, self.later = _Values(before, after), _Values(after, before)

    def item(self, change: Change, tokens: list) -> Item:
        subject = self._subject(change, tokens)
        if tokens in (["code"], ["code", "source"]):
            before, after = ((value or {}).get("source", "") if tokens == ["code"] else value or ""
                             for value in (change.before, change.after))
            return Item(change.kind, subject, None, None, lines=line_diff(before, after))
        item = Item(change.kind, subject, self.earlier.shown(change.before, tokens),
                    self.later.shown(change.after, tokens))
        if change.kind == CHANGED and _plain_list(change.before) and _plain_list(change.after):
            item.gained = [self.later.shown(v, [*tokens, 0]) for v in change.after if v not in change.before]
            item.lost = [self.earlier.shown(v, [*tokens, 0]) for v in change.before if v not in change.after]
        return item

    def _subject(self, change: Change, tokens: list) -> str:
        """What the change is to: "Field “Priority” · Options", "Rule 2 “VIP” · Condition value"."""
        head, rest = tokens[0], tokens[1:]
        if head == "workflow":
            if rest[:1] != ["rules"]:
                return str(PROPERTY_WORDS.get(".".join(map(str, rest)), rest[0]))
            head, rest = "rules", rest[1:]
        if not rest or not isinstance(rest[0], int):
            if head in ("page", "schema_version", "name", "description"):
                return str(PROPERTY_WORDS.get(".".join(map(str, tokens)), tokens[-1]))
            words = {"fields": _("Field order"), "table_columns": _("Columns and their order"),
                     "charts": _("Chart order"), "actions": _("Action order")}
            if head in words and change.kind == CHANGED and not rest:
                return words[head]
            return " · ".join([_section_heading(head), *(str(PROPERTY_WORDS.get(t, t)) for t in rest)])
        index, rest = rest[0], rest[1:]
        removed = change.kind == REMOVED and not rest
        named = _element_name(head, index, _elements(self.before if removed else self.after, head)[index])
        prop = ".".join(str(t) for t in rest)
        return f"{named} · {PROPERTY_WORDS.get(prop, prop)}" if rest else named

    def unchanged(self, section: str, changes: list[Change]) -> list[str]:
        """The elements of a keyed or positional section that no change touches, by name."""
        if section not in ("fields", "rules", "charts", "actions"):
            return []
        prefix = "workflow.rules" if section == "rules" else section
        touched = {int(m.group(1)) for change in changes
                   if (m := re.match(re.escape(prefix) + r"\[(\d+)\]", change.path)) and change.kind != REMOVED}
        return [_element_name(section, index, item) for index, item in enumerate(_elements(self.after, section))
                if index not in touched]


class _Values:
    """Values in words by one version's names (a key only the other version has, by the other's)."""

    def __init__(self, definition: dict, other: dict):
        self.labels = {f["key"]: f["label"] for d in (other, definition) for f in d["fields"]}
        self.titles = {item["key"]: item["title"] for d in (other, definition)
                       for section in ("charts", "actions") for item in d.get(section, [])}

    def shown(self, value, tokens: list) -> str | None:
        """A value in words: texts quoted, yes/no, a field's key as its label, elements summarized."""
        if value is None:
            return None
        if isinstance(value, bool):
            return _("yes") if value else _("no")
        if isinstance(value, str):
            if _holds_field_keys(tokens):
                return self.field_name(value)
            if tokens[-1] == "operator":
                return str(OPERATOR_WORDS.get(value, value))
            return f"“{value}”"
        if isinstance(value, (int, float)):
            return str(value)
        if isinstance(value, list):
            if tokens in (["fields"], ["charts"], ["actions"]) and all(isinstance(v, str) for v in value):
                return ", ".join(self._named_key(tokens[0], key) for key in value)  # a new order of keys
            return ", ".join(filter(None, (self.shown(v, [*tokens, 0]) for v in value))) or _("none")
        return self._summary(value, tokens)

    def field_name(self, key: str) -> str:
        return f"“{self.labels.get(key, key)}”"

    def _named_key(self, head: str, key: str) -> str:
        return self.field_name(key) if head == "fields" else f"“{self.titles.get(key, key)}”"

    def _summary(self, value: dict, tokens: list) -> str:
        """A whole element or section in one line."""
        head = tokens[0] if tokens[0] != "workflow" else "rules"
        if head == "rules" and "when" in value and "then" in value:
            return self.rule_sentence(value)
        if head == "rules" and {"field", "operator", "value"} <= value.keys():
            return self._condition(value)
        if head == "rules" and {"field", "value"} <= value.keys():
            return self._result(value)
        if head == "fields":
            parts = [value["type"], _("required") if value.get("required") else _("optional")]
            if value.get("options"):
                parts.append(_("options: %(options)s", options=self.shown(value["options"], ["fields", 0, "options"])))
            return f"“{value['label']}” ({'; '.join(parts)})"
        if head in ("charts", "actions") and "title" in value:
            details = [f"{PROPERTY_WORDS.get(k, k)}: {self.shown(v, [head, 0, k])}"
                       for k, v in value.items() if k not in ("key", "title")]
            return f"“{value['title']}” ({'; '.join(details)})"
        return "; ".join(f"{PROPERTY_WORDS.get(k, k)}: {self.shown(v, [*tokens, k])}" for k, v in value.items())

    def rule_sentence(self, rule: dict) -> str:
        return _("“%(name)s”: if %(condition)s, then %(result)s", name=rule["name"],
                 condition=self._condition(rule["when"]), result=self._result(rule["then"]))

    def _condition(self, when: dict) -> str:
        return f"{self.field_name(when['field'])} {OPERATOR_WORDS.get(when['operator'], when['operator'])} " \
               f"{self.shown(when['value'], ['rules', 'value'])}"

    def _result(self, then: dict) -> str:
        return f"{self.field_name(then['field'])} = {self.shown(then['value'], ['rules', 'value'])}"


def _elements(definition: dict, section: str) -> list[dict]:
    """A version's fields, rules, charts or actions."""
    return definition["workflow"]["rules"] if section == "rules" else definition.get(section, [])


def _element_name(section: str, index: int, element: dict) -> str:
    if section == "rules":
        return _("Rule %(number)s “%(name)s”", number=index + 1, name=element["name"])
    if section == "fields":
        return _("Field “%(label)s”", label=element["label"])
    if section == "charts":
        return _("Chart “%(title)s”", title=element["title"])
    return _("Action “%(title)s”", title=element["title"])


def _section_heading(name: str) -> str:
    return next((str(heading) for section, _names, heading in SECTIONS if section == name),
                str(PROPERTY_WORDS.get(name, name)))


def _holds_field_keys(tokens: list) -> bool:
    """Whether a text at `tokens` is a field's key (a rule's field, a chart's group, a column…)."""
    names = [token for token in tokens if isinstance(token, str)]
    return names[-1] in _FIELD_KEY_PROPERTIES or names[-1] == "fields" and names[0] == "actions"


def _plain_list(value) -> bool:
    return isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value)
