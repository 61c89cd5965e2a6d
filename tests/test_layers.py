"""The import contracts (`.importlinter`): layers import only downwards, no package imports the app
(`app.py`), no package has an import cycle, rules never reach scripts, webhooks, channels or an
HTTP client. They hold on the tree, and each fails when a copy of the tree breaks it."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core.config import PROJECT_ROOT

PACKAGES = ("core", "desk", "studio", "openapi", "rules", "jobs")
LINT = str(Path(sys.executable).parent / "lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess:
    """lint-imports on the tree at `root` (its own packages first on the path)."""
    return subprocess.run([LINT, "--no-cache", "--no-logo", str(root / ".importlinter")], cwd=root,
                          capture_output=True, text=True)


def test_the_import_contracts_hold():
    result = _lint(PROJECT_ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 kept, 0 broken" in result.stdout


@pytest.mark.parametrize("module, line, broken", [
    ("core/text.py", "import desk.models", "Layers import only downwards"),  # a lower layer reaching up
    ("desk/models.py", "import studio.models", "Layers import only downwards"),
    ("studio/catalog.py", "import rules.catalog", "Layers import only downwards"),  # the cycle issue 19 removed
    ("studio/apps.py", "import openapi.records", "Layers import only downwards"),  # independent features
    ("jobs/cron.py", "import app", "No package imports the app"),
    ("rules/lookup.py", "import rules.service", "No import cycle"),  # service imports lookup
    ("studio/engine.py", "import studio.definition", "No import cycle"),  # definition imports engine
    ("rules/deciding.py", "import socket", "Rules never run scripts"),
    ("rules/plans.py", "import core.egress", "Rules never run scripts"),
])
def test_a_tree_that_breaks_a_contract_fails(tmp_path, module, line, broken):
    for package in PACKAGES:
        shutil.copytree(PROJECT_ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_ROOT / ".importlinter", tmp_path)
    shutil.copy(PROJECT_ROOT / "app.py", tmp_path)
    target = tmp_path / module
    target.write_text(f"{target.read_text()}\n{line}\n")
    result = _lint(tmp_path)
    assert result.returncode == 1
    assert broken in result.stdout.split("Broken contracts", 1)[1]
