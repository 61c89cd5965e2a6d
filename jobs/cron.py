"""The 15-second tick: packages register periodic handlers; `rq cron` enqueues the tick."""
import logging
import time

from werkzeug.utils import import_string

from core.redis import get_redis

log = logging.getLogger(__name__)

TICK_SECONDS = 15
HEARTBEAT_KEY = "jobs:tick:last"
_tick_handlers: list[str] = []


def register_tick(handler_path: str) -> None:
    """Run the handler (import path, no arguments) on every tick."""
    if handler_path not in _tick_handlers:
        _tick_handlers.append(handler_path)


def unregister_tick(handler_path: str) -> None:
    """Stop running a handler on ticks."""
    if handler_path in _tick_handlers:
        _tick_handlers.remove(handler_path)


def tick() -> int:
    """One tick: record the heartbeat, run each handler; a failing handler does not stop others."""
    get_redis().set(HEARTBEAT_KEY, int(time.time()), ex=10 * TICK_SECONDS)
    failures = 0
    for path in list(_tick_handlers):
        try:
            import_string(path)()
        except Exception:
            failures += 1
            log.exception("tick handler %s failed", path)
    if failures:
        raise RuntimeError(f"{failures} tick handler(s) failed")
    return len(_tick_handlers)
