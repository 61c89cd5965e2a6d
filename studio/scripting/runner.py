"""The runner's side of script execution: one sandbox process, fed one task at a time.

Only the `python -m jobs.runner` process uses this module. It starts `studio/scripting/sandbox.py` with an
empty environment in an empty directory (the sandbox then locks itself in) and talks to it over
pipes; the runner itself never evaluates a script.
"""
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)

SANDBOX = Path(__file__).with_name("sandbox.py")


class Sandbox:
    """A supervised sandbox process; restarted when it dies."""

    def __init__(self):
        self._process: subprocess.Popen | None = None
        self._root = tempfile.mkdtemp(prefix="studio-sandbox-")
        self._lock = threading.Lock()

    def _start(self) -> subprocess.Popen:
        """Start the sandbox: isolated interpreter, no environment, empty working directory."""
        if os.geteuid() != 0:
            log.warning("the runner is not root: the script sandbox cannot chroot or drop to nobody")
        process = subprocess.Popen(
            [sys.executable, "-I", str(SANDBOX), self._root], env={}, cwd=self._root,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, close_fds=True)
        log.info("script sandbox started (pid %d)", process.pid)
        return process

    def process(self) -> subprocess.Popen:
        """The running sandbox process, started on first use or after a crash."""
        if self._process is None or self._process.poll() is not None:
            self._process = self._start()
        return self._process

    def execute(self, source: str, input_json: str) -> dict:
        """Evaluate one script on one input and return the sandbox's reply."""
        with self._lock:
            process = self.process()
            try:
                process.stdin.write(json.dumps({"source": source, "input": input_json}) + "\n")
                process.stdin.flush()
                line = process.stdout.readline()
            except (BrokenPipeError, OSError):
                line = ""
            except BaseException:  # e.g. the job's timeout: a late reply must not reach the next task
                process.kill()
                raise
            if not line:
                process.kill()
                return {"ok": False, "code": "code_resource_limit", "message": "the sandbox stopped",
                        "line": None}
            return json.loads(line)

    def close(self) -> None:
        """Stop the sandbox process and remove its empty root."""
        if self._process is not None and self._process.poll() is None:
            self._process.stdin.close()
            self._process.wait(timeout=5)
        os.rmdir(self._root)


_sandbox: Sandbox | None = None


def sandbox() -> Sandbox:
    """This process's sandbox."""
    global _sandbox
    if _sandbox is None:
        _sandbox = Sandbox()
    return _sandbox
