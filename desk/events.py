"""Desk events: a registry other packages subscribe to, so the desk never imports them."""
import logging
import uuid

from werkzeug.utils import import_string

from jobs.queues import EVENTS, enqueue

log = logging.getLogger(__name__)

MESSAGE_RECEIVED = "message_received"
_subscribers: dict[str, list[str]] = {MESSAGE_RECEIVED: []}


def subscribe(event: str, handler_path: str) -> None:
    """Register a handler (import path) to run in a worker for each `event`."""
    handlers = _subscribers[event]
    if handler_path not in handlers:
        handlers.append(handler_path)


def unsubscribe(event: str, handler_path: str) -> None:
    """Remove a handler registered with subscribe()."""
    if handler_path in _subscribers[event]:
        _subscribers[event].remove(handler_path)


def emit_message_received(tenant_id: uuid.UUID, conversation_id: uuid.UUID,
                          message_id: uuid.UUID):
    """Queue the event with ids only; the message text never enters the queue."""
    return enqueue("jobs.tasks.dispatch_event", MESSAGE_RECEIVED, queue_name=EVENTS,
                   job_id=f"event-{MESSAGE_RECEIVED}-{message_id}",
                   tenant_id=str(tenant_id), conversation_id=str(conversation_id),
                   message_id=str(message_id))


def dispatch(event: str, **ids: str) -> int:
    """Run every subscriber of `event` with the ids; returns how many ran."""
    handlers = list(_subscribers[event])
    for path in handlers:
        import_string(path)(**ids)
    log.info("event %s dispatched to %d subscriber(s)", event, len(handlers))
    return len(handlers)
