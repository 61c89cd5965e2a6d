"""gunicorn's access log without secrets or submitted input: the one-time token of a hand-off link
is cut out, and every query string (a search's text, a resume position) is replaced, in the request
line, the query, the referrer and any header or environ atom a log format may name."""
import re
from urllib.parse import urlsplit, urlunsplit

from gunicorn.glogging import Logger

# The hand-off routes of desk/auth_views.py carry a signed one-time login token as their last segment.
_HANDOFF_TOKEN = re.compile(r"(/(?:staff/impersonate|assistant/login)/)[^/?#\s\"]+")
REDACTED = "[redacted]"
# Atoms that hold a URL or a path with its query (besides the request line `r`: gunicorn's own
# letters and the header/environ forms of the same values), and atoms that hold nothing but a
# query string or a credential.
_URL_ATOMS = ("U", "f", "{referer}i", "{raw_uri}e", "{path_info}e", "{request_uri}e", "{http_referer}e")
_WHOLLY_REDACTED = ("q", "{query_string}e", "{cookie}i", "{http_cookie}e", "{authorization}i",
                    "{http_authorization}e")


def redact(text: str) -> str:
    """The text with every hand-off token replaced by `[redacted]`."""
    return _HANDOFF_TOKEN.sub(rf"\1{REDACTED}", text)


def redact_url(text: str) -> str:
    """A URL or path with its hand-off token and its query string replaced; a fragment goes too
    (browsers never send one, so it is only ever a client's own text)."""
    try:
        parts = urlsplit(text)
    except ValueError:  # what no URL parser reads (an unclosed IPv6 bracket): keep nothing of it
        return REDACTED
    cleaned = urlunsplit((parts.scheme, parts.netloc, redact(parts.path), "", ""))
    return f"{cleaned}?{REDACTED}" if "?" in text else cleaned


def redact_request_line(line: str) -> str:
    """`METHOD target PROTOCOL` with the target redacted as a URL."""
    method, _, rest = line.partition(" ")
    target, _, protocol = rest.rpartition(" ")
    return f"{method} {redact_url(target)} {protocol}" if target else redact_url(line)


class AccessLogger(Logger):
    """gunicorn's logger; what it logs of URLs, queries, referrers and credentials is redacted."""

    def atoms(self, resp, req, environ, request_time):
        atoms = super().atoms(resp, req, environ, request_time)
        if isinstance(atoms.get("r"), str):
            atoms["r"] = redact_request_line(atoms["r"])
        for name in _URL_ATOMS:
            if isinstance(atoms.get(name), str) and atoms[name] != "-":
                atoms[name] = redact_url(atoms[name])
        for name in _WHOLLY_REDACTED:
            if atoms.get(name):
                atoms[name] = REDACTED
        return atoms
