"""The 15-second tick: runs the handlers listed in `jobs.wiring`; the clock process queues it.

The clock imports this module for `tick` and `TICK_SECONDS` alone, without the app: `tick` imports
what it needs when it runs, in a worker.
"""
import logging
import time

log = logging.getLogger(__name__)

TICK_SECONDS = 15
HEARTBEAT_KEY = "jobs:tick:last"


def tick() -> int:
    """One tick: record the heartbeat, run each handler; a failing handler does not stop others."""
    from werkzeug.utils import import_string

    from core.redis import get_redis
    from jobs import wiring

    get_redis().set(HEARTBEAT_KEY, int(time.time()), ex=10 * TICK_SECONDS)
    handlers = wiring.tick_handlers()
    failures = 0
    for path in handlers:
        try:
            import_string(path)()
        except Exception:
            failures += 1
            log.exception("tick handler %s failed", path)
    if failures:
        raise RuntimeError(f"{failures} tick handler(s) failed")
    return len(handlers)
