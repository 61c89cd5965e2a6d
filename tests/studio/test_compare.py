"""Comparing two versions (issue 38): each kind of change at the deepest property where the two
differ, in the validator's path form; plain arrays whole; fields, charts and actions matched by key
(a new order reported as the key order); rules by position (order matters: the last match wins);
the script's source; a version against itself is empty; and the console API's answer and refusals."""
import copy

from studio.compare import Change, compare
from studio.definition import validate_definition
from tests.conftest import seat
from tests.support.desk import browser_of
from tests.support.studio import SECTIONS, ConsoleApi, sample_definition


def definition(**changes) -> dict:
    return validate_definition(sample_definition(**{**copy.deepcopy(SECTIONS), **changes}))


def changed(edit) -> list[Change]:
    """The changes an `edit` of a copy of the full definition makes."""
    before = definition()
    after = copy.deepcopy(before)
    edit(after)
    return compare(before, validate_definition(after))


def test_a_version_against_itself_has_no_change():
    assert compare(definition(), definition()) == []


def test_a_field_label_type_and_required_change_at_their_property():
    def edit(d):
        d["fields"][0]["label"] = "Subject"
        d["fields"][1]["required"] = True
    assert changed(edit) == [Change("fields[0].label", "changed", "Title", "Subject"),
                             Change("fields[1].required", "changed", False, True)]


def test_an_option_renamed_reports_the_options_whole():
    def edit(d):
        d["fields"][2]["options"] = ["minor", "high"]
    assert changed(edit) == [Change("fields[2].options", "changed", ["low", "high"], ["minor", "high"])]


def test_a_field_added_and_one_removed_are_matched_by_key():
    def edit(d):
        d["fields"].append({"key": "notes", "label": "Notes", "type": "textarea", "required": False})
        del d["fields"][3]  # due
    assert changed(edit) == [
        Change("fields[4]", "added", None, {"key": "notes", "label": "Notes", "type": "textarea", "required": False}),
        Change("fields[3]", "removed", {"key": "due", "label": "Due date", "type": "date", "required": False}, None)]


def test_fields_in_a_new_order_report_the_key_order_and_nothing_else():
    def edit(d):
        d["fields"][0], d["fields"][1] = d["fields"][1], d["fields"][0]
    assert changed(edit) == [Change("fields", "changed", ["title", "amount", "priority", "due", "urgent"],
                                    ["amount", "title", "priority", "due", "urgent"])]


def test_reordered_table_columns_report_both_arrays():
    def edit(d):
        d["table_columns"] = ["priority", "title", "amount"]
    assert changed(edit) == [Change("table_columns", "changed", ["title", "priority", "amount"],
                                    ["priority", "title", "amount"])]


def test_a_rule_moved_in_the_array_is_a_change_at_each_position():
    first = {"name": "Big orders are high priority", "when": {"field": "amount", "operator": "gte", "value": 100},
             "then": {"field": "priority", "value": "high"}}
    second = {"name": "Urgent is high", "when": {"field": "urgent", "operator": "equals", "value": True},
              "then": {"field": "priority", "value": "high"}}
    before = definition(workflow={"trigger": "form.submitted", "rules": [first, second]})
    after = definition(workflow={"trigger": "form.submitted", "rules": [second, first]})
    paths = [(c.path, c.kind) for c in compare(before, after)]
    assert paths == [("workflow.rules[0].name", "changed"), ("workflow.rules[0].when.field", "changed"),
                     ("workflow.rules[0].when.operator", "changed"), ("workflow.rules[0].when.value", "changed"),
                     ("workflow.rules[1].name", "changed"), ("workflow.rules[1].when.field", "changed"),
                     ("workflow.rules[1].when.operator", "changed"), ("workflow.rules[1].when.value", "changed")]


def test_a_rule_added_and_its_result_changed():
    def edit(d):
        d["workflow"]["rules"][0]["then"]["value"] = "low"
        d["workflow"]["rules"].append({"name": "Urgent is high", "then": {"field": "priority", "value": "high"},
                                       "when": {"field": "urgent", "operator": "equals", "value": True}})
    found = changed(edit)
    assert found[0] == Change("workflow.rules[0].then.value", "changed", "high", "low")
    assert (found[1].path, found[1].kind, found[1].before) == ("workflow.rules[1]", "added", None)
    assert len(found) == 2


def test_a_script_edit_is_a_change_of_its_source():
    def edit(d):
        d["code"]["source"] = "const total = input.amount * 2;\nreturn {amount: total};"
    [change] = changed(edit)
    assert (change.path, change.kind) == ("code.source", "changed")
    assert change.after.startswith("const total = input.amount * 2;")


def test_sections_charts_workbench_intent_actions_and_page_texts():
    def edit(d):
        d["charts"][0]["title"] = "Requests by priority"
        d["workbench"]["theme"] = "violet"
        d["intent"]["labels"] = ["refund", "delivery", "complaint"]
        d["actions"][0]["fields"] = ["title"]
        d["page"]["submit_label"] = "Send"
    assert changed(edit) == [
        Change("page.submit_label", "changed", "Save", "Send"),
        Change("charts[0].title", "changed", "By priority", "Requests by priority"),
        Change("workbench.theme", "changed", "blue", "violet"),
        Change("intent.labels", "changed", ["refund", "delivery"], ["refund", "delivery", "complaint"]),
        Change("actions[0].fields", "changed", ["title", "amount"], ["title"])]


def test_a_section_added_or_removed_is_reported_whole():
    before, after = validate_definition(sample_definition()), definition()
    assert [(c.path, c.kind) for c in compare(before, after)] == [
        ("charts", "added"), ("code", "added"), ("workbench", "added"), ("intent", "added"), ("actions", "added")]
    assert [(c.path, c.kind, c.after) for c in compare(after, before)] == [
        ("charts", "removed", None), ("code", "removed", None), ("workbench", "removed", None),
        ("intent", "removed", None), ("actions", "removed", None)]


# --- the console API --------------------------------------------------------------------------

def test_the_api_answers_the_changes_between_two_versions(api, draft_app):
    edited = sample_definition()
    edited["fields"][0]["label"] = "Subject"
    assert api.post(f"/{draft_app}/versions", {"definition": edited}).status_code == 201
    answer = api.get(f"/{draft_app}/versions/compare?from=1&to=2")
    assert answer.status_code == 200
    data = answer.get_json()["data"]
    versions = {v["version"]: v["definition_hash"] for v in api.get(f"/{draft_app}").get_json()["data"]["versions"]}
    assert (data["from"], data["to"], data["from_hash"], data["to_hash"]) == (1, 2, versions[1], versions[2])
    assert data["changes"] == [{"path": "fields[0].label", "kind": "changed", "before": "Title", "after": "Subject"}]
    assert api.get(f"/{draft_app}/versions/compare?from=2&to=2").get_json()["data"]["changes"] == []


def test_the_api_refuses_bad_numbers_missing_versions_and_foreign_applications(app, api, draft_app, other_tenant):
    for query in ("", "?from=1", "?to=1", "?from=one&to=1", "?from=1&to=1.5", "?from=1&to=", "?from=+1&to=1"):
        answer = api.get(f"/{draft_app}/versions/compare{query}")
        assert (answer.status_code, answer.get_json()["error"]["code"]) == (400, "invalid_version"), query
    for query in ("?from=1&to=9", "?from=0&to=1", "?from=-3&to=1"):
        answer = api.get(f"/{draft_app}/versions/compare{query}")
        assert (answer.status_code, answer.get_json()["error"]["code"]) == (404, "not_found"), query
    stranger = ConsoleApi(browser_of(app, seat(other_tenant, "admin")))
    answer = stranger.get(f"/{draft_app}/versions/compare?from=1&to=1")
    assert (answer.status_code, answer.get_json()["error"]["code"]) == (404, "not_found")
