"""`flask jobs worker|runner|cron`: long-running processes inside the app context."""
import logging

import click
from flask import current_app
from flask.cli import AppGroup
from rq import SimpleWorker
from rq.cron import CronScheduler

from core.queue import DEFAULT, GENERATOR_QUEUES, RUNNER_QUEUES, WORKER_QUEUES
from core.redis import get_redis
from jobs import wiring
from jobs.cron import TICK_SECONDS, tick
from jobs.worker import AppWorker
from studio.scripting.runner import sandbox

jobs_cli = AppGroup("jobs", help="Background processes.")
RESULT_LINE = "Worker %s: result: %r"  # RQ 3.0 logs every job's return value at DEBUG


class NoPayloadInLogs(logging.Filter):
    """RQ's worker log lines without job payloads.

    Job descriptions are neutral already (the import path alone: `core.queue.enqueue`). This drops
    the line that prints a job's return value (a script's output is submitted data) and blanks the
    arguments RQ attaches to a failed job's log record as `extra`, which a structured log handler
    would print.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == RESULT_LINE:
            return False
        for name in ("arguments", "kwargs"):
            if name in record.__dict__:
                setattr(record, name, None)
        return True


def keep_payloads_out_of_logs() -> None:
    """Install the filter on RQ's worker logger (once)."""
    logger = logging.getLogger("rq.worker")
    if not any(isinstance(existing, NoPayloadInLogs) for existing in logger.filters):
        logger.addFilter(NoPayloadInLogs())


LOG_LEVEL = click.option("--log-level", default="INFO", show_default=True,
                         type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
                         help="Level of RQ's worker log lines.")


@jobs_cli.command("worker")
@click.option("--burst", is_flag=True, help="Stop when the queues are empty.")
@click.option("--generator", is_flag=True, help="Serve the model-calling `generation` queue instead.")
@LOG_LEVEL
def worker(burst: bool, generator: bool, log_level: str):
    """Non-forking RQ worker for events, webhooks and default jobs (or, with --generator, for
    generation jobs, which wait on the model), with RQ's scheduler for retries."""
    keep_payloads_out_of_logs()
    wiring.check()
    AppWorker(list(GENERATOR_QUEUES if generator else WORKER_QUEUES), connection=get_redis(),
              app=current_app._get_current_object()).work(burst=burst, with_scheduler=True,
                                                          logging_level=log_level)


@jobs_cli.command("runner")
@click.option("--burst", is_flag=True, help="Stop when the queue is empty.")
@LOG_LEVEL
def runner(burst: bool, log_level: str):
    """Script runner: serves only `scripts`, one task at a time, through its sandbox process."""
    keep_payloads_out_of_logs()
    wiring.check()
    sandbox().process()  # start the sandbox before the first task arrives
    try:
        SimpleWorker(list(RUNNER_QUEUES), connection=get_redis()).work(burst=burst, logging_level=log_level)
    finally:
        sandbox().close()


@jobs_cli.command("cron")
def cron():
    """Enqueue the tick every 15 seconds (RQ's cron scheduler)."""
    wiring.check()
    scheduler = CronScheduler(connection=get_redis())
    scheduler.register(tick, queue_name=DEFAULT, interval=TICK_SECONDS)
    scheduler.start()
