"""RQ's worker log lines without job payloads (every worker, runner and clock process); no Flask."""
import logging

RESULT_LINE = "Worker %s: result: %r"  # RQ 3.0 logs every job's return value at DEBUG
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class NoPayloadInLogs(logging.Filter):
    """Drops the line that prints a job's return value (a script's output is submitted data) and
    blanks the arguments RQ attaches to a failed job's log record as `extra`, which a structured
    log handler would print. Job descriptions are neutral already (the import path alone:
    `core.queue.enqueue`)."""

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
