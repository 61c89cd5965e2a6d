"""Untrusted text inside a prompt for the platform model: one way to fence it (docs/security.md,
"AI drafts (generation)")."""
import re

_DELIMITER_RUN = re.compile(r"<{3,}|>{3,}")


def fenced(texts: list[str], fence: tuple[str, str]) -> str:
    """Untrusted texts between the fence's opening and closing lines; every run of three or more
    `<` or `>` inside them is spaced out, so no text can open or close the block."""
    inside = [_DELIMITER_RUN.sub(lambda m: " ".join(m[0]), text) for text in texts]
    return "\n".join([fence[0], *inside, fence[1]])
