"""Generation with the model: the requirement the console sends, the model's answers (an
application draft, a routing rule draft, or what cannot be done), and a generation run to its end."""
from core.capabilities import CAPABILITY_VERSION
from core.queue_names import GENERATION
from rules.catalog import AUTOMATION_PREVIEW_EXAMPLE
from rules.definition import rule_capabilities, validate_rule
from studio.definition import capability_manifest
from tests.support.jobs import work
from tests.support.studio import sample_definition

REQUIREMENT = "A form to log warranty claims with the product, purchase date and amount."
UNSUPPORTED = {"capability_version": CAPABILITY_VERSION, "kind": "unsupported",
               "unsupported_capabilities": ["payment.refund"], "missing_capabilities": ["payment.refund"],
               "missing_labels": ["Refund the customer's payment"]}


def app_answer(definition: dict | None = None, **changes) -> dict:
    """A model answer drafting `definition` with exactly the capabilities it uses."""
    definition = definition or sample_definition()
    return {"capability_version": CAPABILITY_VERSION, "kind": "app",
            "required_capabilities": capability_manifest(definition), "definition": definition, **changes}


def rule_answer(definition: dict | None = None, **changes) -> dict:
    """A model answer drafting a routing rule with exactly the capabilities it uses."""
    definition = definition or AUTOMATION_PREVIEW_EXAMPLE
    declared = changes.pop("required_capabilities", None)
    return {"capability_version": CAPABILITY_VERSION, "kind": "automation_preview", "definition": definition,
            "required_capabilities": rule_capabilities(validate_rule(definition)) if declared is None else declared,
            **changes}


def generate(api, app, redis_conn, **body):
    """POST /generate, run its job, then read the outcome as the console's poll does."""
    started = api.post("/generate", {"prompt": REQUIREMENT, **body})
    if started.status_code != 202:
        return started
    work(app, redis_conn, GENERATION)
    return api.get(f"/generate/{started.get_json()['data']['generation_id']}")
