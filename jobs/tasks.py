"""Thin job entry points: take ids (scripts excepted), call the owning package.

Import paths and signatures are a wire format (listed in `jobs.wiring.ENTRY_POINTS`). Each entry
point imports its package when it runs: the script runner imports this module for `run_script`
alone and never loads the app.
"""
import logging
import uuid

log = logging.getLogger(__name__)


def dispatch_event(event: str, **ids: str) -> int:
    """Queue one `notify_subscriber` job per subscriber of a desk event; returns how many. Serves
    events queued by earlier releases: the desk now queues the subscribers' jobs itself."""
    from desk import events
    from jobs import wiring

    return events.dispatch(event, wiring.subscribers(event), **ids)


def notify_subscriber(event: str, subscriber: str, **ids: str) -> bool:
    """Run one subscriber of an event (queue `events`); RQ retries it alone when it raises.

    A subscriber taken off the list since its job was queued is skipped (False).
    """
    from werkzeug.utils import import_string

    from jobs import wiring

    if subscriber not in wiring.subscribers(event):
        log.warning("subscriber %s of %s is no longer listed; skipped", subscriber, event)
        return False
    import_string(subscriber)(**ids)
    return True


def run_script(source: str, input_json: str) -> dict:
    """Evaluate an administrator's script in the runner's sandbox (queue `scripts` only).

    Unlike other jobs it carries data, not ids: the input after the rules is stored nowhere, and
    the runner never opens the database. The web process deletes the job once it has the answer.
    Its description is the import path alone and the runner never logs what it returns.
    """
    from studio.scripting.runner import sandbox

    return sandbox().execute(source, input_json)


def deliver_webhook(event_id: str) -> str:
    """One delivery attempt of an open-API event (queue `webhooks`; RQ retries on failure)."""
    from openapi import webhooks

    return webhooks.deliver(event_id)


def deliver_reply(delivery_id: str) -> str:
    """One delivery attempt of a reply to its channel's endpoint (queue `webhooks`; RQ retries)."""
    from desk import outbound

    return outbound.deliver(delivery_id)


def run_action(run_id: str) -> str:
    """Send one record action run to its bound address (queue `webhooks`; never retried once sent)."""
    from studio import actions

    return actions.execute(uuid.UUID(run_id))


def process_knowledge(document_id: str) -> bool:
    """Safe processing of a published knowledge document (queue `default`); True when usable."""
    from desk import knowledge

    return knowledge.process_document(uuid.UUID(document_id))


def run_generation(generation_id: str) -> str:
    """Draft a definition with the model for one generation request (queue `generation`)."""
    from studio import generation

    return generation.run(uuid.UUID(generation_id))


def plan_rule(run_id: str) -> str:
    """Generate one queued read-only plan of a published rule (queue `default`); its final status."""
    from rules import plans

    return plans.run_plan(uuid.UUID(run_id))


def execute_command(run_id: str, conversation_id: str) -> str:
    """One approved assignment command of a plan through the atomic adapter (queue `default`)."""
    from rules import execution

    return execution.execute_command(uuid.UUID(run_id), uuid.UUID(conversation_id))
