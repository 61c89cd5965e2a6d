"""The script runner process, `python -m jobs.runner`: serves only the `scripts` queue, one task at
a time, through its sandbox process (studio/scripting). It runs one job, `jobs.tasks.run_script`,
which never opens the database, so it only talks to Redis (REDIS_URL) and never loads the app."""
import argparse
import logging
import os

from redis import Redis
from rq import SimpleWorker
from werkzeug.utils import import_string

from core.queue_names import RUNNER_QUEUES
from core.redis_policy import refuse_evicting_redis
from jobs.logs import FORMAT, LOG_LEVELS, keep_payloads_out_of_logs
from jobs.steady import RidesOutRedis
from studio.scripting.runner import sandbox

ENTRY_POINT = "jobs.tasks.run_script"


class RunnerWorker(RidesOutRedis, SimpleWorker):
    """RQ's non-forking worker, riding out a Redis restart."""


def main(argv: list[str] | None = None) -> None:
    """Start the sandbox, then serve the queue (until it is empty with --burst)."""
    parser = argparse.ArgumentParser(prog="python -m jobs.runner", description=__doc__)
    parser.add_argument("--burst", action="store_true", help="stop when the queue is empty")
    parser.add_argument("--log-level", default="INFO", type=str.upper, choices=LOG_LEVELS,
                        help="level of RQ's worker log lines (no level logs job arguments or results)")
    options = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format=FORMAT)
    keep_payloads_out_of_logs()
    url = os.environ.get("REDIS_URL")
    if not url:
        raise SystemExit("the runner needs REDIS_URL (make run sets it for the embedded Redis)")
    import_string(ENTRY_POINT)  # a broken entry point stops the process now, not at the first task
    connection = Redis.from_url(url)
    refuse_evicting_redis(connection, "the script runner")
    sandbox().process()  # start the sandbox before the first task arrives
    try:
        RunnerWorker(list(RUNNER_QUEUES), connection=connection).work(
            burst=options.burst, logging_level=options.log_level)
    finally:
        sandbox().close()


if __name__ == "__main__":
    main()
