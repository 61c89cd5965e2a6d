"""Thin job entry points: take ids (scripts excepted), call the owning package. Import paths are a wire format."""
from desk import events
from openapi import webhooks
from studio.runner import sandbox


def dispatch_event(event: str, **ids: str) -> int:
    """Deliver a desk event to its subscribers inside a worker."""
    return events.dispatch(event, **ids)


def run_script(source: str, input_json: str) -> dict:
    """Evaluate an administrator's script in the runner's sandbox (queue `scripts` only).

    Unlike other jobs it carries data, not ids: the input after the rules is stored nowhere, and
    the runner never opens the database. The web process deletes the job once it has the answer.
    Its description is the import path alone and the runner never logs what it returns.
    """
    return sandbox().execute(source, input_json)


def deliver_webhook(event_id: str) -> str:
    """One delivery attempt of an open-API event (queue `webhooks`; RQ retries on failure)."""
    return webhooks.deliver(event_id)
