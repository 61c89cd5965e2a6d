"""The Simplified Chinese catalog is complete and current: every marked string of the tree is in it,
translated, none fuzzy or left over, placeholders and spec-fixed words (codes, permission ids,
`无法判断`) kept exactly; the compiled catalog is not older than its source."""
import re
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.pofile import read_po

from core.config import PROJECT_ROOT
from tests.support.i18n import CATALOG

PYBABEL = str(Path(sys.executable).parent / "pybabel")
# Identifiers that read the same in every language: error codes and keys (snake_case), permission
# and capability ids (dotted), and the spec's reserved intent label.
FIXED = re.compile(r"\b[a-z][a-z0-9]*(?:[._][a-z0-9]+)+\b|无法判断")


def _read(path: Path):
    with path.open("rb") as source:
        return read_po(source, locale="zh_CN")


@pytest.fixture(scope="module")
def catalog():
    return _read(CATALOG)


def _ids(messages) -> set:
    return {message.id if isinstance(message.id, str) else message.id[0] for message in messages if message.id}


def test_every_marked_string_of_the_tree_is_in_the_catalog_and_nothing_else(catalog, tmp_path):
    template = tmp_path / "messages.pot"
    subprocess.run([PYBABEL, "-q", "extract", "-F", "babel.cfg", "-k", "_l", "-k", "lazy_gettext",
                    "-k", "lazy_pgettext:1c,2",
                    "--ignore-dirs=.* ._ .venv instance node_modules", "-o", str(template), "."],
                   cwd=PROJECT_ROOT, check=True)
    extracted, catalogued = _ids(_read(template)), _ids(catalog)
    assert extracted - catalogued == set(), "new text: run `make messages` and translate it"
    assert catalogued - extracted == set(), "text no longer used: run `make messages`"
    assert len(extracted) > 500


def test_every_entry_is_translated_and_none_is_fuzzy(catalog):
    untranslated = [message.id for message in catalog if message.id and not all(
        message.string if isinstance(message.string, tuple) else (message.string,))]
    fuzzy = [message.id for message in catalog if message.id and message.fuzzy]
    assert untranslated == [] and fuzzy == []


def test_translations_keep_their_placeholders(catalog):
    assert [(message.id, errors) for message, errors in catalog.check()] == []


def test_codes_permission_ids_and_reserved_labels_stay_as_written(catalog):
    changed = []
    for message in catalog:
        if not message.id:
            continue
        source = message.id if isinstance(message.id, str) else message.id[0]
        target = message.string if isinstance(message.string, str) else message.string[0]
        changed += [(source, word) for word in FIXED.findall(re.sub(r"%\(\w+\)[sd]", "", source)) if word not in target]
    assert changed == []


def test_the_compiled_catalog_is_built_from_the_current_source():
    compiled = CATALOG.with_suffix(".mo")
    assert compiled.exists() and compiled.stat().st_mtime >= CATALOG.stat().st_mtime, "run `make test` (it compiles)"
