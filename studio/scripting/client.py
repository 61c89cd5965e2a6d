"""Running a version's script from a web process: rate limit, hand to the runner, revalidate.

The web process only enqueues the task on the `scripts` queue and waits for the runner's answer
within the 2-second task bound; nothing here evaluates the script. A tenant has at most one task
in flight (a Redis semaphore shared by every web process): its further tasks wait for their turn
inside their own bound instead of filling the queue ahead of other tenants.
"""
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from rq.job import Job, JobStatus
from rq.results import Result

from core.api import ApiError
from core.db import end_reads
from core.limits import Semaphore, hit_fixed_window
from core.metrics import SCRIPT_RUNS, SCRIPT_SECONDS
from core.redis import get_redis
from core.queue import enqueue
from core.queue_names import SCRIPTS
from studio.catalog import LIMITS
from studio.engine import validate_input

TASK_SECONDS = LIMITS["script_task_ms"] / 1000
TENANT_TASKS_IN_FLIGHT = 1
# A slot outlives any task it admitted: the task starts within the bound at the latest and the
# sandbox kills it 0.6 s later. The job's queue TTL is the same 3 s.
SLOT_LEASE_SECONDS = TASK_SECONDS + 1
# How script_runs_total names each failure.
OUTCOMES = {"code_timeout": "timeout", "code_resource_limit": "memory", "code_invalid_output": "invalid_output",
            "code_execution_failed": "error", "code_runner_busy": "busy", "code_rate_limited": "rate_limited"}
STATUS = {"code_timeout": 422, "code_resource_limit": 422, "code_execution_failed": 422,
          "code_invalid_output": 422, "code_runner_busy": 503, "code_rate_limited": 429}


def script_error(code: str, detail: str | None = None, headers: dict | None = None,
                 **extra) -> ApiError:
    """A script failure with its documented HTTP status (`extra`: the script's line and message)."""
    return ApiError(code, STATUS[code], detail=detail, headers=headers,
                    extra={name: value for name, value in extra.items() if value is not None})


def _reserve(tenant_id: uuid.UUID) -> None:
    """30 executions per tenant per minute across all web processes; failures count too."""
    window = hit_fixed_window(get_redis(), f"scripts:tenant:{tenant_id}",
                              LIMITS["script_executions_per_tenant_per_minute"], 60)
    if not window.allowed:
        raise script_error("code_rate_limited", headers={"Retry-After": str(window.reset_after)})


def _wait_for_result(job: Job, deadline: float) -> Result | None:
    """Block on the job's result stream until it has an entry or the deadline passes."""
    remaining_ms = int((deadline - time.monotonic()) * 1000)
    if remaining_ms > 0:
        job.connection.xread({Result.get_key(job.id): "0-0"}, block=remaining_ms)
    return job.latest_result()


def _tenant_slots(tenant_id: uuid.UUID) -> Semaphore:
    """The tenant's tasks in flight (queued or running), across all web processes."""
    return Semaphore(get_redis(), f"scripts:tenant:{tenant_id}", TENANT_TASKS_IN_FLIGHT, SLOT_LEASE_SECONDS)


@contextmanager
def _tenant_turn(tenant_id: uuid.UUID, deadline: float) -> Iterator[None]:
    """Hold one of the tenant's slots around a hand-over, waiting for it until the deadline."""
    slots = _tenant_slots(tenant_id)
    token = slots.acquire(timeout=max(0.0, deadline - time.monotonic()))
    if token is None:  # the tenant's own earlier tasks took the whole bound
        raise script_error("code_runner_busy", headers={"Retry-After": "1"})
    keep = False
    try:
        yield
    except ApiError as error:
        # code_timeout here: the runner started the task and may still be running it, so the slot
        # is left to end with its lease, after the task.
        keep = error.code == "code_timeout"
        raise
    finally:
        if not keep:
            slots.release(token)


def _hand_to_runner(source: str, input_json: str, deadline: float | None = None) -> dict:
    """Enqueue the task and wait for the runner's reply until the deadline (the task bound)."""
    deadline = time.monotonic() + TASK_SECONDS if deadline is None else deadline
    job = enqueue("jobs.tasks.run_script", source, input_json, queue_name=SCRIPTS, job_timeout=5,
                  ttl=int(TASK_SECONDS) + 1, result_ttl=30, failure_ttl=30)
    try:
        result = _wait_for_result(job, deadline)
        if result is None:
            started = job.get_status(refresh=True) not in (JobStatus.QUEUED, JobStatus.SCHEDULED)
            if not started:
                job.cancel()
            raise script_error("code_timeout" if started else "code_runner_busy",
                               headers=None if started else {"Retry-After": "1"})
        if result.type != Result.Type.SUCCESSFUL:
            raise script_error("code_runner_busy", headers={"Retry-After": "1"})
        return result.return_value
    finally:
        job.delete()  # the payload holds submitted data: do not keep it in Redis


def _revalidate(definition: dict, data: dict, output: dict) -> dict:
    """Merge the script's output into the record and check it like a submission."""
    declared = {field["key"] for field in definition["fields"]}
    for key in output:
        if key not in declared:
            raise script_error("code_invalid_output", detail=f"output.{key}")
    merged = dict(data)
    for key, value in output.items():
        if value is None:
            merged.pop(key, None)  # null clears an optional field, like an empty submission
        else:
            merged[key] = value
    try:
        return validate_input(definition, merged)
    except ApiError as err:
        field = (err.detail or "").removeprefix("input.")
        raise script_error("code_invalid_output", detail=f"output.{field}") from None


def run_code(tenant_id: uuid.UUID, definition: dict, data: dict) -> dict:
    """The record's data after the version's script (unchanged when it has none), counted by
    outcome and timed."""
    code = definition.get("code")
    if code is None:
        return data
    started = time.monotonic()
    try:
        result = _run(tenant_id, definition, data, code)
    except ApiError as err:
        SCRIPT_RUNS.labels(OUTCOMES.get(err.code, "error")).inc()
        raise
    finally:
        SCRIPT_SECONDS.observe(time.monotonic() - started)
    SCRIPT_RUNS.labels("ok").inc()
    return result


def _run(tenant_id: uuid.UUID, definition: dict, data: dict, code: dict) -> dict:
    """Run the script in the runner and check its output."""
    input_json = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    if len(input_json.encode()) > LIMITS["script_input_bytes"]:
        raise script_error("code_resource_limit", detail="input")
    end_reads()  # nothing waits on the runner while holding a transaction (and its connection)
    _reserve(tenant_id)
    deadline = time.monotonic() + TASK_SECONDS  # the tenant's turn and the task share the bound
    with _tenant_turn(tenant_id, deadline):
        reply = _hand_to_runner(code["source"], input_json, deadline)
    if not reply["ok"]:
        failed = reply["code"] == "code_execution_failed"
        raise script_error(reply["code"], detail="code.source", line=reply.get("line"),
                           message=reply.get("message") if failed else None)
    return _revalidate(definition, data, reply["output"])
