"""Text rules shared by every validator: what every store can hold, JavaScript lengths and trimming,
control characters."""
import re

# NUL (PostgreSQL cannot store it) and lone surrogates (no UTF-8 form: SQLite cannot encode them).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(text: str) -> bool:
    """Whether the text has no NUL and no lone surrogate, so SQLite and PostgreSQL can keep it."""
    return _UNSTORABLE.search(text) is None

# What JavaScript's String.prototype.trim removes, so emptiness and lengths match the console's.
JS_WHITESPACE = "\t\n\v\f\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008" \
                "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
# Single-line text: no C0/C1 controls, DEL, line or paragraph separators, or lone surrogates.
SINGLE_LINE_BAD = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
# Multi-line text also allows tab, line feed and carriage return.
MULTI_LINE_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


def utf16_units(value: str) -> int:
    """Length as JavaScript counts it (UTF-16 code units); raises on a lone surrogate."""
    return len(value.encode("utf-16-le")) // 2


def fits_utf16(value: str, limit: int) -> bool:
    """At most `limit` UTF-16 code units, as JavaScript counts; a lone surrogate never fits."""
    try:
        return utf16_units(value) <= limit
    except UnicodeEncodeError:
        return False


def is_blank(value: str) -> bool:
    """Empty after JavaScript's trim()."""
    return not value.strip(JS_WHITESPACE)
