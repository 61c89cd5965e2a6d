"""What changed between two versions of an application (issue 38), in the definition's own terms.

Both definitions are validated and normalized, so they compare property by property. A change is
reported at the deepest property where the two differ, its path in the validator's JSON-path form
(`fields[0].label`, as `error.detail` names it): objects property by property; arrays of plain values
(`options`, `table_columns`, an action's `fields`, intent `labels`) whole; arrays of objects with a
`key` (fields, charts, actions) matched by key, at the element's index in the later version (the
earlier one for a removal), with a change of their order reported as the array's key order; other
arrays of objects (rules, whose order matters: the last match wins) by position.
"""
from dataclasses import dataclass

from core.validation import item_at, prop_at

ADDED, REMOVED, CHANGED = "added", "removed", "changed"


@dataclass(frozen=True)
class Change:
    """One difference: where, what kind, the value before (None: added) and after (None: removed)."""
    path: str
    kind: str
    before: object
    after: object

    def as_json(self) -> dict:
        return {"path": self.path, "kind": self.kind, "before": self.before, "after": self.after}


def compare(before: dict, after: dict) -> list[Change]:
    """The changes from the `before` definition to the `after` one (none for equal definitions)."""
    changes: list[Change] = []
    _walk(before, after, "", changes)
    return changes


def _walk(before, after, path: str, changes: list[Change]) -> None:
    if before == after:
        return
    if isinstance(before, dict) and isinstance(after, dict):
        for name in [*before, *(name for name in after if name not in before)]:
            at = prop_at(path, name)
            if name not in after:
                changes.append(Change(at, REMOVED, before[name], None))
            elif name not in before:
                changes.append(Change(at, ADDED, None, after[name]))
            else:
                _walk(before[name], after[name], at, changes)
    elif _objects(before) and _objects(after):
        if all("key" in item for item in [*before, *after]):
            _keyed(before, after, path, changes)
        else:
            _positional(before, after, path, changes)
    else:
        changes.append(Change(path, CHANGED, before, after))


def _objects(value) -> bool:
    """An array of objects (an empty array is one too: it may have held some)."""
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _keyed(before: list[dict], after: list[dict], path: str, changes: list[Change]) -> None:
    """Elements matched by key: changed and added at their later index, removed at their earlier
    one; a new order of the elements both have is the array's change of key order."""
    earlier = {item["key"]: (index, item) for index, item in enumerate(before)}
    later = {item["key"]: item for item in after}
    kept_before = [item["key"] for item in before if item["key"] in later]
    kept_after = [item["key"] for item in after if item["key"] in earlier]
    if kept_before != kept_after:
        changes.append(Change(path, CHANGED, [item["key"] for item in before], [item["key"] for item in after]))
    for index, item in enumerate(after):
        at = item_at(path, index)
        if item["key"] in earlier:
            _walk(earlier[item["key"]][1], item, at, changes)
        else:
            changes.append(Change(at, ADDED, None, item))
    for key, (index, item) in earlier.items():
        if key not in later:
            changes.append(Change(item_at(path, index), REMOVED, item, None))


def _positional(before: list[dict], after: list[dict], path: str, changes: list[Change]) -> None:
    """Elements compared at the same position; the longer array's extra ones added or removed."""
    for index in range(max(len(before), len(after))):
        at = item_at(path, index)
        if index >= len(after):
            changes.append(Change(at, REMOVED, before[index], None))
        elif index >= len(before):
            changes.append(Change(at, ADDED, None, after[index]))
        else:
            _walk(before[index], after[index], at, changes)
