"""Moved to `core.queue` (issue 11); kept until every importer has switched."""
from core.queue import (DEFAULT, EVENTS, RUNNER_QUEUES, SCRIPTS, WEBHOOKS, WORKER_QUEUES,  # noqa: F401
                        enqueue, queue)
