"""What the docs name exists in the code: every error code they give with its status (`404
not_found`), every dotted name of ours (`core.db.watch_engine`), and every path (`studio/api.py`,
with its function after a colon). A rename that leaves the docs behind fails here."""
import importlib
import re

import pytest

from core.config import PROJECT_ROOT

PACKAGES = ("core", "desk", "studio", "openapi", "rules", "jobs", "app", "bench")
DOCS = sorted((PROJECT_ROOT / "docs").glob("*.md")) + [PROJECT_ROOT / "README.md"]
FILE_SUFFIXES = (".py", ".css", ".js", ".yaml", ".yml", ".html", ".md", ".txt", ".json")
CODE_WITH_STATUS = re.compile(r"`(\d{3}) ([a-z][a-z0-9_]+)`")
DOTTED = re.compile(r"`((?:%s)(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(\))?`" % "|".join(PACKAGES))
PATH = re.compile(r"`((?:%s|tests|templates|static|migrations|docs)/[A-Za-z0-9_./-]*[A-Za-z0-9_])"
                  r"(?::([A-Za-z_][A-Za-z0-9_.]*))?`" % "|".join(PACKAGES))


def _docs_text() -> str:
    return "\n".join(doc.read_text() for doc in DOCS)


def _source() -> str:
    """Every Python file of the app's packages, as one text."""
    return "\n".join(path.read_text() for package in PACKAGES for path in (PROJECT_ROOT / package).rglob("*.py"))


def _resolves(dotted: str) -> bool:
    """A module, or an attribute chain of the longest importable module prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                found = getattr(found, name)
        except AttributeError:
            return False
        return True
    return False


def test_every_error_code_the_docs_give_with_a_status_is_one_the_code_raises():
    source = _source()
    codes = {code for _status, code in CODE_WITH_STATUS.findall(_docs_text())}
    assert len(codes) > 30  # the pattern still finds them
    assert sorted(code for code in codes if f'"{code}"' not in source and f"'{code}'" not in source) == []


def test_every_dotted_name_of_ours_in_the_docs_exists():
    source = _source()
    names = set(DOTTED.findall(_docs_text()))
    assert len(names) > 50
    missing = [name for name in sorted(names)
               if not name.endswith(FILE_SUFFIXES) and not _resolves(name)
               and f'"{name}"' not in source and name not in source]  # an event or audit name, `app.extensions`
    assert missing == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_every_path_and_function_the_docs_name_exists(doc):
    missing = []
    for path, function in PATH.findall(doc.read_text()):
        file = PROJECT_ROOT / path
        if not file.exists():
            missing.append(path)
        elif function and not re.search(rf"^\s*(?:async )?(?:def|class) {re.escape(function.split('.')[-1])}\b"
                                        rf"|^\s*{re.escape(function.split('.')[-1])}\s*[:=]", file.read_text(), re.M):
            missing.append(f"{path}:{function}")
    assert missing == []
