"""The routing-rule preview as a kind of AI draft: what the app factory hands the studio generator."""
from core.validation import fail
from rules.catalog import AUTOMATION_PREVIEW_EXAMPLE
from rules.definition import assignee_refs, is_member_id, rule_capabilities, validate_rule
from rules.schema import rule_schema
from studio.draft_kinds import DraftKind

# What a rule preview draft may use: previews on samples only, never an executing capability.
RULE_DRAFTABLE = frozenset({"preview.rotation", "preview.keyword_routing", "ai.semantic_routing",
                            "event.message_received"})

def validate_draft(raw: object) -> dict:
    """A rule the validator accepts whose every assignee is a placeholder: the AI picks no real
    member (document 2), so a member id is refused at its path (the generator answers 502
    model_invalid_definition there)."""
    definition = validate_rule(raw)
    for path, reference in assignee_refs(definition):
        if is_member_id(reference):
            fail(path)
    return definition


RULE_PREVIEW = DraftKind(
    name="automation_preview", validate=validate_draft, capabilities=rule_capabilities, allowed=RULE_DRAFTABLE,
    schema=rule_schema, example=AUTOMATION_PREVIEW_EXAMPLE,
    instructions="When the requirement is about routing conversations to agents (a weekly rotation, keyword "
                 "routing or semantic routing), answer kind \"automation_preview\" with a rule definition in "
                 "`definition` instead, its assignees written as placeholders such as \"Agent A\", never real "
                 "people (never a member id); list in required_capabilities preview.rotation for a weekly rule, "
                 "preview.keyword_routing when it has keywords, ai.semantic_routing when it is semantic and "
                 "event.message_received for the message_received trigger. A rule draft is only previewed: it "
                 "is never saved or executed.")
