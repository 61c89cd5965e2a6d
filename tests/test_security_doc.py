"""docs/security.md names only tests that exist, so its promises stay backed by real tests."""
import re

from core.config import PROJECT_ROOT

REFERENCE = re.compile(r"`(tests/[\w/]+\.py)?(?:::(\w+))?`")


def test_every_test_the_security_promises_name_exists():
    text = (PROJECT_ROOT / "docs" / "security.md").read_text()
    current, named = None, []
    for path, name in REFERENCE.findall(text):
        current = path or current
        if current:
            named.append((current, name))
    assert len(named) > 50
    for path, name in named:
        source = (PROJECT_ROOT / path).read_text()
        assert not name or re.search(rf"^def {name}\(", source, re.M), f"{path}::{name}"
