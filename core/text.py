"""Text that every store can hold."""
import re

# NUL (PostgreSQL cannot store it) and lone surrogates (no UTF-8 form: SQLite cannot encode them).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> bool:
    """Whether the text has no NUL and no lone surrogate, so SQLite and PostgreSQL can keep it."""
    return _UNSTORABLE.search(text) is None
