"""JSON envelopes, the domain error type and the app-wide error handlers."""
import logging
import uuid

from flask import Flask, g, jsonify, render_template, request
from werkzeug.exceptions import HTTPException

log = logging.getLogger(__name__)

# Werkzeug statuses mapped to the spec's error codes for JSON paths.
HTTP_CODES = {
    400: "invalid_json",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "not_found",
    413: "request_too_large",
    429: "rate_limited",
}


def printable(text: str) -> str:
    """The text with lone surrogates and NUL written as backslash escapes, so any page or JSON
    answer can carry it (a path can name a key that came from the request or a script)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\x00")


class ApiError(Exception):
    """A domain error with the spec's code and HTTP status; `detail` names the offending path."""

    def __init__(self, code: str, status: int = 400, detail: str | None = None,
                 headers: dict | None = None, extra: dict | None = None):
        super().__init__(code)
        self.code = code
        self.status = status
        self.detail = printable(detail) if detail is not None else None
        self.headers = headers or {}
        self.extra = extra or {}


def parse_uuid(value: object, code: str, status: int = 400) -> uuid.UUID:
    """A UUID in its canonical text form (any case), else `<status> <code>`."""
    try:
        parsed = uuid.UUID(value)
    except (TypeError, ValueError, AttributeError):
        raise ApiError(code, status) from None
    if str(parsed) != value.lower():
        raise ApiError(code, status)
    return parsed


def request_id() -> str:
    """The id of the current request, fresh for each request."""
    if "request_id" not in g:
        g.request_id = str(uuid.uuid4())
    return g.request_id


def ok(data, status: int = 200):
    """Success envelope `{request_id, data}`."""
    return jsonify({"request_id": request_id(), "data": data}), status


def error_response(err: ApiError):
    """Failure envelope `{request_id, error:{code}}` with the error's status and headers."""
    body = {"code": err.code, **err.extra}
    if err.detail:
        body["detail"] = err.detail
    response = jsonify({"request_id": request_id(), "error": body})
    response.status_code = err.status
    response.headers.update(err.headers)
    return response


def wants_json() -> bool:
    """JSON answers for API paths; HTML pages everywhere else."""
    return request.path.startswith("/api/")


def html_error(status: int, code: str, headers: dict | None = None):
    """Render the HTML error page for a status; htmx, which swaps refusals that bring their own
    partial (422, 429), leaves a whole error page out of the region it asked for."""
    headers = {**(headers or {}), **({"HX-Reswap": "none"} if request.headers.get("HX-Request") else {})}
    return render_template("errors/error.html", status=status, code=code), status, headers


def answer_unexpected(err: Exception):
    """A 500 for what nobody foresaw, logged with the route's pattern (a path can carry a one-time
    token), never with a trace in the answer."""
    rule = request.url_rule.rule if request.url_rule is not None else "(no route)"
    log.error("unhandled error on %s %s", request.method, rule, exc_info=err)
    if wants_json():
        return error_response(ApiError("internal_error", 500))
    return html_error(500, "internal_error")


def register_error_handlers(app: Flask) -> None:
    """Install the handlers so every failure answers in the surface's own format."""

    @app.errorhandler(ApiError)
    def handle_api_error(err: ApiError):
        if wants_json():
            return error_response(err)
        return html_error(err.status, err.code, err.headers)

    @app.errorhandler(HTTPException)
    def handle_http_error(err: HTTPException):
        status = err.code or 500
        code = HTTP_CODES.get(status, "internal_error" if status >= 500 else "bad_request")
        if wants_json():
            return error_response(ApiError(code, 404 if status == 405 else status))
        return html_error(status, code)

    app.register_error_handler(Exception, answer_unexpected)

    @app.after_request
    def add_request_id(response):
        if wants_json():
            response.headers["X-Request-Id"] = request_id()
        return response
