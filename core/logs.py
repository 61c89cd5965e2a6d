"""gunicorn's access log without secrets: the one-time token of a hand-off link is cut out."""
import re

from gunicorn.glogging import Logger

# The hand-off routes of desk/auth.py carry a signed one-time login token as their last segment.
_HANDOFF_TOKEN = re.compile(r"(/(?:staff/impersonate|assistant/login)/)[^/?#\s\"]+")


def redact(text: str) -> str:
    """The text with every hand-off token replaced by `[redacted]`."""
    return _HANDOFF_TOKEN.sub(r"\1[redacted]", text)


class AccessLogger(Logger):
    """gunicorn's logger; the request line, path and referrer it logs are redacted."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        for name in ("r", "U", "f"):
            if isinstance(atoms.get(name), str):
                atoms[name] = redact(atoms[name])
        return atoms
