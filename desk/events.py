"""Desk events: queued with ids only; each subscriber of an event runs as its own job.

The desk never imports the packages that subscribe, nor `jobs`: the subscribers are listed in
`jobs.wiring`, and the app factory hands the desk that list's reader (`app.extensions[SUBSCRIBERS]`),
so an emitting request queues one `notify_subscriber` job per subscriber itself (one hop to the
subscriber, not two). `jobs.tasks.dispatch_event` still serves events queued by earlier releases.
"""
import logging
import uuid

from flask import current_app
from rq import Retry

from core.queue import enqueue
from core.queue_names import EVENTS

log = logging.getLogger(__name__)

MESSAGE_RECEIVED = "message_received"
KEYS = {MESSAGE_RECEIVED: "message_id"}  # the id naming one occurrence of each event
RETRY_INTERVALS = (10, 60, 300)  # seconds before a failed subscriber's 2nd, 3rd and 4th run
SUBSCRIBERS = "desk.event_subscribers"  # app.extensions key: event name -> subscriber import paths


def emit_message_received(tenant_id: uuid.UUID, conversation_id: uuid.UUID,
                          message_id: uuid.UUID) -> int:
    """Queue the event for each subscriber with ids only (the message text never enters the
    queue); how many jobs."""
    return dispatch(MESSAGE_RECEIVED, current_app.extensions[SUBSCRIBERS](MESSAGE_RECEIVED),
                    tenant_id=str(tenant_id), conversation_id=str(conversation_id), message_id=str(message_id))


def dispatch(event: str, subscribers: tuple[str, ...], **ids: str) -> int:
    """Queue one job per subscriber (import path), so a failing one is retried alone; returns how many.

    Each job id names the occurrence and the subscriber (dots become dashes, which RQ allows): a
    dispatch that runs twice queues nothing twice while the first jobs wait, retry or run.
    """
    for path in subscribers:
        enqueue("jobs.tasks.notify_subscriber", event, path, queue_name=EVENTS,
                job_id=f"event-{event}-{ids[KEYS[event]]}-{path.replace('.', '-')}",
                retry=Retry(max=len(RETRY_INTERVALS), interval=list(RETRY_INTERVALS)), **ids)
    log.info("event %s dispatched to %d subscriber(s)", event, len(subscribers))
    return len(subscribers)
