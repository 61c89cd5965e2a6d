"""The one list of job entry points, tick handlers and event subscribers.

Nothing registers itself when imported: what runs on a tick or on an event is written here, and
every process reads it from here (`flask jobs worker` checks it at start; the web process loads it
with the commands the app registers; the app-free runner and clock import only the entry point
each runs). Every name is an import path, which jobs already queued
carry: rename one only together with a shim for them.

The production lists are tuples. An app's config may add to them (`EXTRA_TICK_HANDLERS`,
`EXTRA_EVENT_SUBSCRIBERS`), which is how tests subscribe without touching these lists.
"""
from flask import current_app
from werkzeug.utils import import_string

from desk.events import MESSAGE_RECEIVED

# The functions jobs are queued for, with their queue. Their import paths and signatures are a wire format.
ENTRY_POINTS = (
    "jobs.cron.tick",                # () on default: the 15-second tick
    "jobs.tasks.dispatch_event",     # (event, **ids) on events: events queued by earlier releases
    "jobs.tasks.notify_subscriber",  # (event, subscriber, **ids) on events: one subscriber, retried alone
    "jobs.tasks.deliver_webhook",    # (event_id) on webhooks: one delivery attempt
    "jobs.tasks.deliver_reply",      # (delivery_id) on webhooks: one attempt of a reply to its channel
    "jobs.tasks.run_action",         # (run_id) on webhooks: one record action run, sent at most once
    "jobs.tasks.run_script",         # (source, input_json) on scripts: the runner's sandbox
    "jobs.tasks.process_knowledge",  # (document_id) on default: safe processing of a published body
    "jobs.tasks.run_generation",     # (generation_id) on generation: draft a definition with the model
    "jobs.tasks.plan_rule",          # (run_id) on default: a read-only plan of a published rule
    "jobs.tasks.execute_command",    # (run_id, conversation_id) on default: one approved command
)

# Called with no arguments on every tick, in this order.
TICK_HANDLERS = (
    "openapi.webhooks.sweep",
    "desk.outbound.sweep",
    "studio.generation.sweep",
    "studio.actions.sweep",
    "rules.plans.sweep",
    "rules.execution.sweep",
    "rules.message_events.sweep",
    "rules.scheduler.tick",
    "desk.drain.sweep",
    "desk.service_timers.sweep",
    "desk.drafts.sweep",
    "desk.snooze.sweep",
)

# Called with the event's ids, each in a job of its own.
EVENT_SUBSCRIBERS: dict[str, tuple[str, ...]] = {
    MESSAGE_RECEIVED: ("rules.message_events.on_message_received",),
}


def tick_handlers() -> tuple[str, ...]:
    """The tick handlers of the current app."""
    return TICK_HANDLERS + tuple(current_app.config.get("EXTRA_TICK_HANDLERS", ()))


def subscribers(event: str) -> tuple[str, ...]:
    """The subscribers of `event` in the current app."""
    extra = current_app.config.get("EXTRA_EVENT_SUBSCRIBERS", {})
    return EVENT_SUBSCRIBERS[event] + tuple(extra.get(event, ()))


def check() -> None:
    """Import every listed path, so a process with a broken list fails at start, not at a tick."""
    for path in (*ENTRY_POINTS, *tick_handlers(), *(path for event in EVENT_SUBSCRIBERS
                                                    for path in subscribers(event))):
        import_string(path)
