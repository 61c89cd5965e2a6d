"""The tests' own layout: what test modules share lives in conftest.py fixtures and in tests/support,
so no module under tests/ imports a test module (a `test_*.py`), however the import is written."""
import ast

import pytest

from core.config import PROJECT_ROOT

TESTS = PROJECT_ROOT / "tests"


def is_test_module(dotted: str) -> bool:
    """Whether a dotted name is a `test_*.py` module under tests/."""
    parts = dotted.split(".")
    return parts[0] == "tests" and parts[-1].startswith("test_") and \
        PROJECT_ROOT.joinpath(*parts).with_suffix(".py").is_file()


def imported_test_modules(source: str, package: list[str]) -> list[tuple[int, str]]:
    """(line, module) of each test module that a module of `package` imports: `import tests.x.test_y`,
    `from tests.x.test_y import …`, `from tests.x import test_y` and their relative forms."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            names = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        else:
            continue
        found += [(node.lineno, name) for name in names if is_test_module(name)]
    return found


def test_no_module_under_tests_imports_a_test_module():
    imports = []
    for path in sorted(TESTS.rglob("*.py")):
        package = list(path.parent.relative_to(PROJECT_ROOT).parts)
        imports += [f"{path.relative_to(PROJECT_ROOT)}:{line}: {module}"
                    for line, module in imported_test_modules(path.read_text(), package)]
    assert imports == [], "shared helpers belong in tests/support, shared fixtures in a conftest.py:\n" + \
        "\n".join(imports)


@pytest.mark.parametrize("line", [
    "from tests.rules.test_plans import by_conversation",
    "import tests.rules.test_plans",
    "import tests.rules.test_plans as plans",
    "from tests.rules import test_plans",
    "from .test_plans import by_conversation",
    "from . import test_plans",
    "from ..rules.test_plans import by_conversation",
])
def test_every_way_of_importing_a_test_module_is_found(line):
    assert imported_test_modules(f"x = 1\n{line}\n", ["tests", "rules"]) == [(2, "tests.rules.test_plans")]


def test_support_modules_conftest_files_and_peers_are_not_test_modules():
    source = ("from tests.support.rules import RulesApi\nfrom tests.conftest import seat\nimport tests.peers\n"
              "from tests.rules import conftest\nfrom .conftest import planning\nfrom rules import plans\n")
    assert imported_test_modules(source, ["tests", "rules"]) == []
