"""The script sandbox process: evaluates administrator JavaScript, never inside a web process.

Started by the runner as `python -I studio/scripting/sandbox.py <empty dir>` with an empty
environment, it imports nothing of the project, chroots and drops to `nobody` when root, and
answers one JSON line per request line, each in a forked, resource-limited child with a fresh
QuickJS context. Limits and isolation: docs/decisions.md, "Restricted scripts".
"""
import json
import math
import os
import re
import resource
import select
import signal
import sys
import time

import quickjs

HEAP_BYTES = 16 * 1024 * 1024
RUN_SECONDS = 0.5
STACK_BYTES = 256 * 1024
OUTPUT_BYTES = 32 * 1024
# Fork, fresh context and reply take 2-4 ms (measured); the rest of the margin is scheduling slack.
WALL_MARGIN_SECONDS = 0.1
CHILD_WALL_SECONDS = RUN_SECONDS + WALL_MARGIN_SECONDS
CHILD_CPU_SECONDS = 1  # a backstop behind the wall-clock kill (RLIMIT_CPU takes whole seconds)
ADDRESS_SPACE_BYTES = 256 * 1024 * 1024
MAX_PROCESSES = 64
NOBODY = 65534
FUNCTION_HEADER_LINES = 2  # `new Function` compiles "(function anonymous(input\n) {\n" + body

PRELUDE = r"""
(() => {
  "use strict";
  const source = __source, inputJson = __input;
  delete globalThis.__source;
  delete globalThis.__input;
  delete globalThis.__date_clock;
  const out = new Function("input", source)(JSON.parse(inputJson));
  if (out === null || typeof out !== "object" || Object.getPrototypeOf(out) !== Object.prototype) {
    return JSON.stringify({invalid: "the script must return a plain object"});
  }
  for (const [key, value] of Object.entries(out)) {
    const kind = typeof value;
    const scalar = value === null || kind === "string" || kind === "boolean"
      || (kind === "number" && Number.isFinite(value));
    if (!scalar) return JSON.stringify({invalid: "not a JSON value: " + key});
  }
  return JSON.stringify({output: out});
})()
"""
LINE_RE = re.compile(r"<input>:(\d+)")


def _failure(code: str, message: str = "", line: int | None = None) -> dict:
    """A failed execution: the error code, a short message and the script line when known."""
    return {"ok": False, "code": code, "message": message[:300], "line": line}


def _script_line(trace: str) -> int | None:
    """The line of the administrator's source named first in a QuickJS stack trace."""
    match = LINE_RE.search(trace)
    if match is None:
        return None
    line = int(match.group(1)) - FUNCTION_HEADER_LINES
    return line if line >= 1 else None


def _classify(error: Exception) -> dict:
    """Map a QuickJS exception to the script error codes."""
    text = str(error)
    first = text.split("\n", 1)[0]
    if isinstance(error, quickjs.StackOverflow) or "out of memory" in first:
        return _failure("code_resource_limit", first)
    if "interrupted" in first:
        return _failure("code_timeout", first)
    return _failure("code_execution_failed", first, _script_line(text))


def evaluate(source: str, input_json: str) -> dict:
    """Run one script on one input in a fresh context; never raises."""
    context = quickjs.Context()
    context.set_memory_limit(HEAP_BYTES)
    context.set_time_limit(RUN_SECONDS)
    context.set_max_stack_size(STACK_BYTES)
    try:
        context.set("__source", source)
        context.set("__input", input_json)
        result = context.eval(PRELUDE)
    except quickjs.JSException as error:
        return _classify(error)
    if len(result.encode("utf-8", "surrogatepass")) > OUTPUT_BYTES + 16:
        return _failure("code_invalid_output", "the output is larger than 32 KiB")
    envelope = json.loads(result)
    if "invalid" in envelope:
        return _failure("code_invalid_output", envelope["invalid"])
    output = envelope["output"]  # checked again: toJSON or getters can change what JSON.stringify saw
    if not isinstance(output, dict) or not all(_is_scalar(value) for value in output.values()):
        return _failure("code_invalid_output", "the script must return a plain object of JSON values")
    return {"ok": True, "output": output}


def _is_scalar(value: object) -> bool:
    """A JSON string, finite number, boolean or null."""
    return value is None or isinstance(value, (str, bool, int)) or (isinstance(value, float) and math.isfinite(value))


def _child(request: dict, write_fd: int) -> None:
    """In the forked child: tighten the limits, evaluate, write the reply."""
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS))
    data = json.dumps(evaluate(request["source"], request["input"])).encode()
    while data:
        data = data[os.write(write_fd, data):]


def _read_reply(read_fd: int) -> tuple[bytes, bool]:
    """Everything the child writes before it closes the pipe; (data, timed_out)."""
    chunks, deadline = [], time.monotonic() + CHILD_WALL_SECONDS
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([read_fd], [], [], remaining)[0]:
            return b"".join(chunks), True
        chunk = os.read(read_fd, 65536)
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)


def _collect(pid: int, read_fd: int) -> dict:
    """The child's reply within the wall-clock bound; a silent or killed child hit a limit."""
    data, timed_out = _read_reply(read_fd)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    os.close(read_fd)
    if timed_out:
        return _failure("code_timeout", "the script ran past its time limit")
    if not data or not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
        return _failure("code_resource_limit", "the script exceeded a resource limit")
    return json.loads(data)


def run_in_child(request: dict) -> dict:
    """Evaluate one request in a fresh child process with its own limits."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(read_fd)
            _child(request, write_fd)
            status = 0
        finally:
            os._exit(status)  # whatever happened, the child never returns into the serve loop
    os.close(write_fd)
    return _collect(pid, read_fd)


def lock_down(root: str) -> None:
    """Shut this process in: empty root, no privileges, bounded memory and process count."""
    if os.geteuid() == 0:
        os.chroot(root)
        os.chdir("/")
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, ADDRESS_SPACE_BYTES))
    resource.setrlimit(resource.RLIMIT_NPROC, (MAX_PROCESSES, MAX_PROCESSES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def serve(lines, out) -> None:
    """Answer each request line with one reply line until stdin closes."""
    for line in lines:
        try:
            request = json.loads(line)
            reply = run_in_child({"source": str(request["source"]), "input": str(request["input"])})
        except (ValueError, KeyError, TypeError, OSError) as error:
            reply = _failure("code_execution_failed", f"bad request: {type(error).__name__}")
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    lock_down(sys.argv[1])
    serve(sys.stdin, sys.stdout)
