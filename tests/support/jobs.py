"""Queued jobs run as the worker runs them."""
from rq import Queue

from jobs.worker import AppWorker


def work(app, redis_conn, *names: str) -> None:
    """Drain the queues with the worker class `flask jobs worker` runs (non-forking, in burst mode)."""
    AppWorker([Queue(n, connection=redis_conn) for n in names], connection=redis_conn, app=app).work(burst=True)
