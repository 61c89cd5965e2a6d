"""Rule previews: synthetic samples and the request that simulates a rule on them."""
from core.capabilities import CAPABILITY_VERSION

MONDAY_MIDNIGHT = "2026-11-22T16:00:00Z"  # Sunday 16:00 UTC is Monday 00:00 Beijing time


def sample(identifier: str, text: str = "I want a refund", status: str = "open",
           assignee_ref: str | None = None) -> dict:
    """A synthetic sample."""
    return {"id": identifier, "text": text, "status": status, "assignee_ref": assignee_ref}


def body(definition: dict, samples: list, instant: str = MONDAY_MIDNIGHT, **extra) -> dict:
    """A preview request."""
    return {"capability_version": CAPABILITY_VERSION, "definition": definition, "samples": samples,
            "instant": instant, **extra}
