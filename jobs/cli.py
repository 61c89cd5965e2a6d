"""`flask jobs worker`: the workers of the trusted queues, inside the app context. The script
runner and the clock run without the app (`python -m jobs.runner`, `python -m jobs.clock`)."""
import click
from flask import current_app
from flask.cli import AppGroup

from core.queue_names import GENERATOR_QUEUES, WORKER_QUEUES
from core.redis import get_redis
from core.redis_policy import refuse_evicting_redis
from jobs import wiring
from jobs.logs import LOG_LEVELS, keep_payloads_out_of_logs
from jobs.worker import AppWorker

jobs_cli = AppGroup("jobs", help="Background processes.")


@jobs_cli.command("worker")
@click.option("--burst", is_flag=True, help="Stop when the queues are empty.")
@click.option("--generator", is_flag=True, help="Serve the model-calling `generation` queue instead.")
@click.option("--log-level", default="INFO", show_default=True, type=click.Choice(LOG_LEVELS, case_sensitive=False),
              help="Level of RQ's worker log lines.")
def worker(burst: bool, generator: bool, log_level: str):
    """Non-forking RQ worker for events, webhooks and default jobs (or, with --generator, for
    generation jobs, which wait on the model). Delayed jobs reach their queue through the clock."""
    keep_payloads_out_of_logs()
    wiring.check()
    refuse_evicting_redis(get_redis(), "flask jobs worker")
    worker = AppWorker(list(GENERATOR_QUEUES if generator else WORKER_QUEUES), connection=get_redis(),
                       app=current_app._get_current_object())
    worker.warm_up()
    worker.work(burst=burst, logging_level=log_level)
