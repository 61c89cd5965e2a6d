"""What every process checks of Redis at start-up, without the app (the clock and the runner
import it too)."""
import logging

import redis

log = logging.getLogger(__name__)


def refuse_evicting_redis(connection: redis.Redis, process: str) -> None:
    """Stop `process` at start-up when Redis may evict keys: sessions, limits, leases and queued jobs
    would vanish without a word. A Redis that cannot be asked (away, or CONFIG renamed by a
    provider) is let through with a warning: the process waits it out like any outage."""
    try:
        policy = connection.config_get("maxmemory-policy").get("maxmemory-policy", "noeviction")
    except redis.RedisError as error:
        log.warning("%s could not read Redis's maxmemory-policy (%s); it must be noeviction",
                    process, type(error).__name__)
        return
    if policy != "noeviction":
        raise SystemExit(
            f"{process}: Redis may evict keys (maxmemory-policy {policy}), and sessions, rate limits, the "
            "clock's lease and queued jobs would silently vanish. Set it to noeviction: "
            "`redis-cli CONFIG SET maxmemory-policy noeviction`, and `maxmemory-policy noeviction` in "
            "redis.conf (or your provider's parameter group) so it stays after a restart.")
