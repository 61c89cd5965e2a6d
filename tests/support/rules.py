"""Automation rules through the console API: the client, the grants rules are published with, the
switches their execution needs, and rules bound to members."""
import copy

from desk.models import Member
from rules.catalog import AUTOMATION_PREVIEW_EXAMPLE
from tests.support.studio import ExtensionsApi

READ_ONLY = ["conversation.read_for_plan", "automation.schedule_plan"]
SCHEDULED = READ_ONLY + ["conversation.assign_scheduled"]
MESSAGE_EVENT = SCHEDULED + ["conversation.message_event"]
KEYWORD = ["conversation.keyword_routing"]
SEMANTIC = ["conversation.semantic_routing", "ai.points.consume"]
# What single-run execution of an approved plan needs on, and what continuous assignment (scheduled
# slots, message events) needs on.
SINGLE_RUN_SWITCHES = ("AUTOMATION_PLANNING_ENABLED", "AUTOMATION_EXECUTION_ENABLED", "ATOMIC_ASSIGNMENT_ENABLED")
CONTINUOUS_SWITCHES = ("AUTOMATION_PLANNING_ENABLED", "AUTOMATION_SCHEDULE_EXECUTION_ENABLED",
                       "ATOMIC_ASSIGNMENT_ENABLED")


def weekly_rule(first: Member, second: Member | None = None, **changes) -> dict:
    """The preview example with its two placeholder assignees bound to members."""
    definition = copy.deepcopy(AUTOMATION_PREVIEW_EXAMPLE)
    definition["slots"][0]["assignee_ref"] = str(first.id)
    definition["slots"][1]["assignee_ref"] = str((second or first).id)
    return {**definition, **changes}


def message_rule(member: Member, **changes) -> dict:
    """A keyword rule on new customer messages, assigning to `member`."""
    return {"schema_version": 1, "name": "Refund desk", "timezone": "Asia/Shanghai",
            "trigger": "message_received", "slots": [], "assignee_ref": str(member.id),
            "keywords": ["refund"], "statuses": ["open", "pending"], "overwrite_assigned": False,
            "max_actions": 10, **changes}


def semantic_rule(member: Member, **changes) -> dict:
    """A semantic rule on new customer messages, assigning to `member`."""
    return message_rule(member, keywords=[], semantic={"labels": ["billing"], "min_confidence": 0.9},
                        **changes)


class RulesApi(ExtensionsApi):
    """The automation rules API."""

    def save(self, definition: dict, **change):
        return self.post("/automation-rules", {"definition": definition, **change})

    def create(self, definition: dict) -> str:
        response = self.save(definition)
        assert response.status_code == 201, response.get_json()
        return response.get_json()["data"]["rule_id"]

    def publish(self, rule_id: str, permissions: list, revision: int = 1, expected=None, **extra):
        body = {"revision": revision, "expected_active_revision": expected, "permissions": permissions,
                "confirm": True, **extra}
        return self.post(f"/{rule_id}/rule-publish", body)

    def pause(self, rule_id: str, body: dict | None = None):
        return self.post(f"/{rule_id}/rule-pause", {} if body is None else body)

    def rule(self, rule_id: str) -> dict:
        return self.get(f"/{rule_id}/rule-versions").get_json()["data"]["rule"]


def error(response) -> tuple:
    """(status, code, detail) of a refusal."""
    body = response.get_json()["error"]
    return response.status_code, body["code"], body.get("detail")
