"""`make test` on a fresh machine: the Debian packages the suite runs (Chromium, PostgreSQL, Redis)
are installed by `make tools` as root, else it stops at once with the one command to run.

make runs with a PATH of a directory of our own holding only `id`, an `apt-get` that records its
calls instead of installing, and stand-ins for the commands a case has; as a non-root user it runs
under setpriv as nobody (or as the user running the tests). `make test` gets VENV in that directory,
so a recipe run after a broken check fails at once (python3 is not on PATH) instead of installing
or running the suite, and shows in the output."""
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAKE = shutil.which("make")
SETPRIV = shutil.which("setpriv")
ID = shutil.which("id")
# Each command make checks for, with the Debian package that brings it.
PACKAGES = {"chromium": "chromium", "pg_createcluster": "postgresql", "redis-server": "redis-server"}
ALL = list(PACKAGES)
MESSAGE = "Missing for make test; run this, then make test again:"

def test_make_id_and_setpriv_are_there():
    """What these tests run (make itself; id and setpriv from Debian's essential packages): never
    skipped for want of them."""
    assert MAKE and ID and SETPRIV


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


@pytest.fixture
def bin_dir():
    """A PATH directory the user nobody can read as well (pytest's tmp_path is private to root)."""
    with tempfile.TemporaryDirectory(prefix="make-tools-") as directory:
        os.chmod(directory, 0o755)
        yield Path(directory)


def make(bin_dir: Path, target: str, *, present=(), root: bool, apt_get_status: int = 0):
    """`make <target>` in the project with PATH=bin_dir holding only `id`, a recording `apt-get`
    (exiting with apt_get_status) and stand-ins for the commands in `present`; returns (process,
    apt-get calls)."""
    for command in present:
        _script(bin_dir / command, "exit 0\n")
    log = bin_dir / "apt-get.log"
    _script(bin_dir / "apt-get", f'echo "${{DEBIAN_FRONTEND:-}}|$*" >> {log}\nexit {apt_get_status}\n')
    prefix = []
    if root and os.getuid() != 0:  # the root case without root: only `id` says so
        _script(bin_dir / "id", 'echo 0\n')
    else:
        (bin_dir / "id").symlink_to(ID)
        if not root and os.getuid() == 0:
            prefix = [SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups"]
    env = {"PATH": str(bin_dir), "LC_ALL": "C"}  # no MAKEFLAGS/MAKELEVEL from an outer make
    command = [*prefix, MAKE, target, f"VENV={bin_dir / 'venv'}"]
    running = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = running.communicate(timeout=60)
    finally:
        if running.poll() is None:  # timed out: the whole process group goes
            os.killpg(running.pid, signal.SIGKILL)
            running.wait()
    process = subprocess.CompletedProcess(command, running.returncode, stdout, stderr)
    calls = log.read_text().splitlines() if log.exists() else []
    return process, calls


def test_the_path_really_lacks_the_commands(bin_dir):
    """The cases below mean something only if the stand-ins decide: nothing else is on their PATH."""
    for command in ALL:
        found = subprocess.run(["/bin/sh", "-c", f"command -v {command}"], env={"PATH": str(bin_dir)},
                               capture_output=True)
        assert found.returncode != 0, command


@pytest.mark.parametrize("present", [[], ["chromium"], ["pg_createcluster", "redis-server"]],
                         ids=["none", "chromium", "servers"])
def test_as_a_user_it_stops_at_once_naming_the_one_command(bin_dir, present):
    process, calls = make(bin_dir, "test", present=present, root=False)
    missing = " ".join(PACKAGES[command] for command in ALL if command not in present)
    assert process.returncode != 0
    assert process.stdout == ""  # no recipe ran after the check: no pip, no pybabel, no pytest
    lines = process.stderr.splitlines()
    assert lines[:2] == [MESSAGE, f"  sudo apt-get install -y {missing}"], process.stderr
    assert [line for line in lines if "apt-get" in line] == [f"  sudo apt-get install -y {missing}"]
    assert "pytest" not in process.stderr
    assert calls == []


@pytest.mark.parametrize("root", [False, True], ids=["user", "root"])
def test_with_everything_present_the_check_is_silent(bin_dir, root):
    process, calls = make(bin_dir, "tools", present=ALL, root=root)
    assert (process.returncode, process.stdout, process.stderr) == (0, "", "")
    assert calls == []


@pytest.mark.parametrize("present", [[], ["chromium"], ["chromium", "redis-server"]],
                         ids=["none", "chromium", "chromium+redis"])
def test_as_root_it_installs_exactly_what_is_missing(bin_dir, present):
    process, calls = make(bin_dir, "tools", present=present, root=True)
    missing = " ".join(PACKAGES[command] for command in ALL if command not in present)
    assert process.returncode == 0, process.stderr
    assert process.stdout == f"Installing {missing}\n"
    assert calls == ["|update -qq", f"noninteractive|install -y -qq {missing}"]


def test_as_root_a_failed_apt_get_fails_make(bin_dir):
    process, calls = make(bin_dir, "test", present=["chromium"], root=True, apt_get_status=100)
    assert process.returncode != 0
    assert calls == ["|update -qq"]  # no install after a failed update, and no pytest
    assert "pytest" not in process.stdout + process.stderr


def test_make_test_checks_before_anything_else():
    """`tools` is the first prerequisite of `test`, so nothing is built before the check."""
    database = subprocess.run([MAKE, "-pqrR", "test"], cwd=ROOT, env={"PATH": os.environ["PATH"]},
                              capture_output=True, text=True).stdout
    rule = next(line for line in database.splitlines() if line.startswith("test:"))
    assert rule.split()[1] == "tools", rule
