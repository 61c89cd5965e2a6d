"""The vendored code editor (static/vendor/editor.js and its licences) is exactly what
editor/build.sh makes from the committed package-lock.json. Rebuilding needs node, npm and the npm
registry: without them the test says so and is skipped (the bundle itself is committed, so nothing
else depends on a build)."""
import hashlib
import shutil
import subprocess

import pytest

from core.config import PROJECT_ROOT

BUILT = ("static/vendor/editor.js", "static/vendor/editor.LICENSE.txt")
OFFLINE = ("ENOTFOUND", "EAI_AGAIN", "ETIMEDOUT", "ECONNREFUSED", "ENETUNREACH")


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_vendored_editor_is_what_the_build_makes(tmp_path):
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are not installed here: the committed bundle cannot be rebuilt")
    shutil.copytree(PROJECT_ROOT / "editor", tmp_path / "editor", ignore=shutil.ignore_patterns("node_modules"))
    (tmp_path / "static" / "vendor").mkdir(parents=True)
    built = subprocess.run(["bash", str(tmp_path / "editor" / "build.sh")], capture_output=True, text=True, timeout=600)
    if built.returncode and any(code in built.stderr for code in OFFLINE):
        pytest.skip(f"the npm registry is out of reach: {built.stderr.strip().splitlines()[-1]}")
    assert built.returncode == 0, built.stderr
    for name in BUILT:
        assert _digest(tmp_path / name) == _digest(PROJECT_ROOT / name), f"{name}: run editor/build.sh and commit it"
