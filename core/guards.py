"""Request guards for the console JSON API: same origin, size limit, JSON object bodies."""
from urllib.parse import urlsplit

from flask import request
from gunicorn.http.errors import ParseException as ServerParseError
from werkzeug.exceptions import BadRequest, RequestEntityTooLarge

from core import strict_json
from core.api import ApiError

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def require_same_origin() -> None:
    """Refuse a state-changing request whose Origin is missing or another site (403 forbidden)."""
    origin = request.headers.get("Origin")
    if not origin:
        raise ApiError("forbidden", 403)
    parts = urlsplit(origin)
    if f"{parts.scheme}://{parts.netloc}" != request.host_url.rstrip("/") or parts.path not in ("", "/"):
        raise ApiError("forbidden", 403)


def read_limited_body(limit: int, malformed: str = "invalid_json") -> bytes:
    """The raw body, refused with 413 above `limit` bytes before anything is parsed.

    A body whose framing is broken (a bad chunk size or terminator, a connection that ends
    early) is `400 <malformed>`: the server's parser raises while the body is read.
    """
    if request.content_length is not None and request.content_length > limit:
        raise ApiError("request_too_large", 413)
    # A chunked body has no length: werkzeug stops reading it quietly at the maximum, so one byte
    # more than allowed is read to tell a body of exactly `limit` bytes from a longer one.
    request.max_content_length = limit + 1
    try:
        raw = request.get_data(cache=True)
    except RequestEntityTooLarge:
        raise ApiError("request_too_large", 413) from None
    except (BadRequest, OSError, ServerParseError):  # werkzeug's server, then gunicorn's parser
        raise ApiError(malformed, 400) from None
    if len(raw) > limit:
        raise ApiError("request_too_large", 413)
    return raw


def parse_json_object(raw: bytes, code: str = "invalid_json", repeated: str | None = None) -> dict:
    """Parse bytes as exactly one JSON object through the strict reader (UTF-8, no NaN/Infinity),
    else `400 code`; a name given twice is `400 repeated` (or `code`) naming it."""
    try:
        body = strict_json.loads(raw)
    except strict_json.DuplicateName as twice:
        raise ApiError(repeated or code, 400, detail=twice.name) from None
    except (ValueError, RecursionError):  # RecursionError: nested too deeply
        raise ApiError(code, 400) from None
    if not isinstance(body, dict):
        raise ApiError(code, 400)
    return body


def console_json_body(limit: int) -> dict:
    """The body of a console JSON POST as one JSON object: 413 above `limit` bytes (before
    parsing), else 400 invalid_json (the session guard checked Origin)."""
    raw = read_limited_body(limit)
    if request.mimetype != "application/json":
        raise ApiError("invalid_json", 400)
    return parse_json_object(raw)


def only_properties(body: dict, allowed: tuple[str, ...], required: tuple[str, ...] = (), *,
                    unknown: str = "invalid_json", at: str = "") -> dict:
    """The body when it has no property outside `allowed` (else 400 `unknown` naming the first) and
    every one of `required` (else 400 required_field_missing naming the first missing); `at` is
    the path prefix of a nested object (`samples[2].`)."""
    extra = [name for name in body if name not in allowed]
    if extra:
        raise ApiError(unknown, 400, detail=f"{at}{extra[0]}")
    missing = [name for name in required if name not in body]
    if missing:
        raise ApiError("required_field_missing", 400, detail=f"{at}{missing[0]}")
    return body
