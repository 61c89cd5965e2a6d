"""The comparison in words (issue 38): what each change is to, its values in each version's own names,
sections added or removed whole, new orders, the script's line diff with its unchanged runs skipped,
and which sections and elements did not change."""
import copy

import pytest

from studio.compare import compare
from studio.compare_words import Line, described, line_diff
from studio.definition import validate_definition
from tests.support.studio import SECTIONS, sample_definition


@pytest.fixture(autouse=True)
def english(app):
    with app.test_request_context(headers={"Accept-Language": "en"}):
        yield


def items(before: dict, after: dict) -> list[tuple]:
    """(section name, item) of each change."""
    before, after = validate_definition(before), validate_definition(after)
    return [(section.name, item) for section in described(before, after, compare(before, after)).sections
            for item in section.items]


def words(before: dict, after: dict) -> list[tuple]:
    """(section, kind word, subject, before, after) of each change."""
    return [(name, item.kind_word, item.subject, item.before, item.after) for name, item in items(before, after)]


def full() -> dict:
    return sample_definition(**copy.deepcopy(SECTIONS))


def test_a_rules_condition_and_result_are_named_by_the_rule_and_worded_by_field_labels():
    after = full()
    after["workflow"]["rules"][0]["when"] = {"field": "urgent", "operator": "equals", "value": True}
    after["workflow"]["rules"][0]["then"]["value"] = "low"
    assert words(full(), after) == [
        ("rules", "Changed", "Rule 1 “Big orders are high priority” · Condition field", "“Amount”", "“Urgent”"),
        ("rules", "Changed", "Rule 1 “Big orders are high priority” · Condition operator", "≥", "equals"),
        ("rules", "Changed", "Rule 1 “Big orders are high priority” · Condition value", "100", "yes"),
        ("rules", "Changed", "Rule 1 “Big orders are high priority” · Result value", "“high”", "“low”")]


def test_a_removed_rule_reads_as_its_sentence_in_the_earlier_versions_names():
    before = full()
    after = full()
    after["workflow"]["rules"] = []
    after["fields"][1]["label"] = "Order total"
    found = words(before, after)
    assert ("rules", "Removed", "Rule 1 “Big orders are high priority”",
            "“Big orders are high priority”: if “Amount” ≥ 100, then “Priority” = “high”", None) in found


def test_sections_added_or_removed_whole_are_summarized():
    found = words(sample_definition(), full())
    assert found[0] == ("charts", "Added", "Charts", None,
                        "“By priority” (Type: “bar”; Grouped by: “Priority”; Metric: “count”)")
    assert ("workbench", "Added", "Workbench settings", None, "Title: “Requests”; Theme: “blue”") in found
    assert ("intent", "Added", "Intent labels", None, "Labels: “refund”, “delivery”") in found
    [script] = [item for name, item in items(full(), sample_definition()) if name == "code"]
    assert (script.kind_word, [(line.sign, line.text) for line in script.lines]) == (
        "Removed", [("-", "const total = input.amount;"), ("-", "return {amount: total};")])


def test_a_new_order_of_fields_or_charts_is_named_as_an_order():
    before = full()
    before["charts"].append({"key": "by_due", "title": "By due date", "type": "line", "group_by": "due",
                             "metric": "count"})
    after = copy.deepcopy(before)
    after["fields"][0], after["fields"][1] = after["fields"][1], after["fields"][0]
    after["charts"].reverse()
    assert words(before, after) == [
        ("fields", "Changed", "Field order", "“Title”, “Amount”, “Priority”, “Due date”, “Urgent”",
         "“Amount”, “Title”, “Priority”, “Due date”, “Urgent”"),
        ("charts", "Changed", "Chart order", "“By priority”, “By due date”", "“By due date”, “By priority”")]


def test_page_texts_and_the_name_are_named_by_their_property():
    after = full()
    after["name"], after["page"]["title"] = "Claims", "New claim"
    assert words(full(), after) == [("page", "Changed", "Name", "“Service request”", "“Claims”"),
                                    ("page", "Changed", "Page title", "“New request”", "“New claim”")]


def test_the_line_diff_keeps_two_lines_of_context_and_marks_what_it_skips():
    old = "\n".join(f"line {n}" for n in range(1, 11))
    new = old.replace("line 6", "line six")
    assert line_diff(old, new) == [
        Line("…", None, None, ""), Line(" ", 4, 4, "line 4"), Line(" ", 5, 5, "line 5"),
        Line("-", 6, None, "line 6"), Line("+", None, 6, "line six"),
        Line(" ", 7, 7, "line 7"), Line(" ", 8, 8, "line 8"), Line("…", None, None, "")]
    assert line_diff(old, old) == []


def test_unchanged_sections_and_elements_are_listed_apart():
    after = full()
    after["fields"][2]["required"] = True
    comparison = described(validate_definition(full()), validate_definition(after),
                           compare(validate_definition(full()), validate_definition(after)))
    [fields] = comparison.sections
    assert fields.unchanged == ["Field “Title”", "Field “Amount”", "Field “Due date”", "Field “Urgent”"]
    assert comparison.unchanged == ["Page texts", "Table columns", "Rules", "Charts", "Script",
                                    "Workbench settings", "Intent labels", "Actions"]
    assert comparison.count == 1
