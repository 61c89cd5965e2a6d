"""Numbers typed into HTML forms, read one way: ASCII digits only, bounded in length and range, so
odd input (superscript or other scripts' digits, thousands of digits) is the page's own error,
never a 500 (DESIGN.md §4.8)."""
import re

_WHOLE = re.compile(r"[0-9]{1,18}", re.ASCII)
_DECIMAL = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?(?:[eE][-+]?[0-9]{1,3})?", re.ASCII)


def form_integer(text: str | None, low: int = 0, high: int = 10**18 - 1) -> int | None:
    """A whole number from `low` to `high` written in ASCII digits (surrounding spaces allowed);
    None for anything else, the empty text included."""
    text = (text or "").strip()
    if not _WHOLE.fullmatch(text):
        return None
    value = int(text)
    return value if low <= value <= high else None


def form_decimal(text: str | None) -> int | float | None:
    """A number in ASCII decimal notation as an `<input type=number>` sends it (`-12`, `0.85`,
    `1e3`; at most 15 digits on each side of the point), an int when it is plain digits; None for
    anything else. A huge exponent gives an infinite float, which the validators refuse."""
    text = (text or "").strip()
    if not _DECIMAL.fullmatch(text):
        return None
    return int(text) if text.lstrip("-").isdigit() else float(text)


def number_or_text(text: str, read=form_integer) -> int | float | str:
    """The number a form field holds as `read` (form_integer or form_decimal) takes it, or its text
    unchanged for the service to refuse at its path with its own code (a revision that is not a
    number is `invalid_version`, not a guess)."""
    number = read(text)
    return text if number is None else number
