"""The platform's model client: one JSON object from an OpenAI-compatible chat completions API.

The endpoint, model name and key are platform configuration (`MODEL_BASE_URL`, `MODEL_NAME`,
`MODEL_API_KEY`), never arguments, so no tenant can choose them; as operator configuration the
endpoint is not checked by core/egress.py, which guards the addresses tenants choose.

The model is asked for a JSON schema response format and, when the server refuses that format,
once more for a plain JSON object with the schema in the system message. Every failure is an
`ApiError` with the spec's model error codes. Redirects are not followed, environment proxies
are not used, the body is read up to `RESPONSE_LIMIT`, and each call logs one line: the HTTP
statuses, the outcome and the token counts, never the prompt, the answer or the key.
"""
import json
import logging
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
import urllib3
from flask import current_app

from core import strict_json
from core.api import ApiError
from core.db import end_reads

log = logging.getLogger(__name__)

RESPONSE_LIMIT = 1024 * 1024  # bytes of an answer's body; a longer one is model_invalid_response
ERROR_LIMIT = 64 * 1024  # bytes of a refusal's body read to see what it is about
MODEL_NAME_LIMIT = 200
NOT_CONFIGURED = "model_not_configured"
CONFIGURATION_INVALID = "model_configuration_invalid"
UNAVAILABLE = "model_unavailable"
REQUEST_FAILED = "model_request_failed"
RATE_LIMITED = "model_rate_limited"
INVALID_RESPONSE = "model_invalid_response"
# What a server that does not support the json_schema response format says in its 400 or 422.
_FORMAT_REFUSAL = re.compile(rb"response_format|json_schema", re.IGNORECASE)
# Content that is one fenced block: ```json … ``` (the language tag optional), nothing around it.
_FENCED = re.compile(r"```(?:json)?\s*(.*?)\s*```", re.DOTALL | re.IGNORECASE)
_SCHEMA_INSTRUCTION = "Answer with one JSON object matching this JSON schema: "


@dataclass(frozen=True)
class ModelAnswer:
    """The single JSON object the model answered with and the tokens the call used."""

    content: dict
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class _Endpoint:
    """Where and as what model to ask, from the platform's configuration."""

    url: str
    model: str
    key: str | None


def _has_control(text: str) -> bool:
    """Whether `text` holds a control character (C0, DEL or C1)."""
    return any(unicodedata.category(char) == "Cc" for char in text)


def _valid_base_url(url: object) -> bool:
    """An http(s) URL with a host and valid port, and no query, fragment, credentials or spaces."""
    if not isinstance(url, str) or _has_control(url) or any(char.isspace() for char in url):
        return False
    try:
        parts = urlsplit(url)
        port = parts.port  # ValueError for a port that is not a number in range
    except ValueError:
        return False
    return (parts.scheme in ("http", "https") and bool(parts.hostname) and port != 0
            and "@" not in parts.netloc and "?" not in url and "#" not in url)


def _valid_model_name(name: object) -> bool:
    """A non-blank name of at most MODEL_NAME_LIMIT characters without control characters."""
    return (isinstance(name, str) and bool(name.strip()) and len(name) <= MODEL_NAME_LIMIT
            and not _has_control(name))


def _valid_key(key: object) -> bool:
    """No key, or one an Authorization header can carry as is: visible ASCII characters only."""
    return key is None or (isinstance(key, str) and all("!" <= char <= "~" for char in key))


def _configuration_problem() -> str | None:
    """The error code the platform's model configuration earns, None when it is usable.

    An absent (None or empty) base URL or model name is `model_not_configured`; anything set but
    malformed is `model_configuration_invalid`. An empty key means no key.
    """
    config = current_app.config
    url, name = config.get("MODEL_BASE_URL"), config.get("MODEL_NAME")
    if url in (None, "") or name in (None, ""):
        return NOT_CONFIGURED
    key_ok = _valid_key(config.get("MODEL_API_KEY") or None)
    if not (_valid_base_url(url) and _valid_model_name(name) and key_ok):
        return CONFIGURATION_INVALID
    return None


def model_state() -> str:
    """'configured' | 'not_configured' | 'invalid', from the app's MODEL_* configuration."""
    problem = _configuration_problem()
    if problem is None:
        return "configured"
    return "not_configured" if problem == NOT_CONFIGURED else "invalid"


def _endpoint() -> _Endpoint:
    """The configured endpoint; 503 model_not_configured or model_configuration_invalid."""
    problem = _configuration_problem()
    if problem is not None:
        raise ApiError(problem, 503)
    config = current_app.config
    return _Endpoint(url=config["MODEL_BASE_URL"].rstrip("/") + "/chat/completions",
                     model=config["MODEL_NAME"], key=config.get("MODEL_API_KEY") or None)


def _payload(endpoint: _Endpoint, system: str, user: str, response_format: dict) -> dict:
    """A chat completion request: the configured model, temperature 0, both messages."""
    return {
        "model": endpoint.model,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        "temperature": 0,
        "response_format": response_format,
    }


def _headers(endpoint: _Endpoint) -> dict[str, str]:
    """Accept JSON; the bearer key when one is configured."""
    headers = {"Accept": "application/json"}
    if endpoint.key:
        headers["Authorization"] = f"Bearer {endpoint.key}"
    return headers


def _read_body(response: requests.Response, limit: int) -> bytes:
    """The (decoded) body up to `limit` + 1 bytes; a read timeout is model_request_failed."""
    chunks, size = [], 0
    try:
        while size <= limit:
            chunk = response.raw.read(min(65536, limit + 1 - size), decode_content=True)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except urllib3.exceptions.ReadTimeoutError:
        raise ApiError(REQUEST_FAILED, 503) from None
    except urllib3.exceptions.DecodeError:
        raise ApiError(INVALID_RESPONSE, 502) from None
    except (urllib3.exceptions.HTTPError, OSError):
        raise ApiError(UNAVAILABLE, 503) from None
    return b"".join(chunks)


def _body_limit(status: int) -> int:
    """How much of the body to read: an answer's, a refusal's (400, 422) or none."""
    if 200 <= status < 300:
        return RESPONSE_LIMIT
    return ERROR_LIMIT if status in (400, 422) else 0


def _post(session: requests.Session, endpoint: _Endpoint, payload: dict) -> tuple[int, bytes]:
    """One POST: its status and the body as far as it is needed. Transport failures raise."""
    config = current_app.config
    timeout = (config["MODEL_CONNECT_TIMEOUT"], config["MODEL_READ_TIMEOUT"])
    try:
        with session.post(endpoint.url, json=payload, headers=_headers(endpoint), timeout=timeout,
                          allow_redirects=False, stream=True) as response:
            limit = _body_limit(response.status_code)
            return response.status_code, _read_body(response, limit) if limit else b""
    except requests.ConnectTimeout:
        raise ApiError(UNAVAILABLE, 503) from None
    except requests.Timeout:
        raise ApiError(REQUEST_FAILED, 503) from None
    except requests.ConnectionError:  # refused, DNS failure, TLS failure, connection lost
        raise ApiError(UNAVAILABLE, 503) from None
    except requests.RequestException:
        raise ApiError(REQUEST_FAILED, 503) from None


def _refuses_format(status: int, body: bytes) -> bool:
    """Whether a first attempt's answer refuses the json_schema response format."""
    return status in (400, 422) and _FORMAT_REFUSAL.search(body) is not None


def _check_status(status: int) -> None:
    """Success is 2xx; 429 is model_rate_limited, 5xx model_unavailable, the rest request_failed."""
    if 200 <= status < 300:
        return
    if status == 429:
        raise ApiError(RATE_LIMITED, 503)
    raise ApiError(UNAVAILABLE if status >= 500 else REQUEST_FAILED, 503)


def _parse_json(text: str | bytes) -> object:
    """The strict reader's JSON (a name given twice too is refused); anything else, deeply nested
    too, is 502 model_invalid_response."""
    try:
        return strict_json.loads(text)
    except (ValueError, RecursionError):
        raise ApiError(INVALID_RESPONSE, 502) from None


def _message_content(document: object) -> str:
    """choices[0].message.content of a chat completion, else 502 model_invalid_response."""
    try:
        content = document["choices"][0]["message"]["content"]
    except (TypeError, KeyError, IndexError):
        raise ApiError(INVALID_RESPONSE, 502) from None
    if not isinstance(content, str):
        raise ApiError(INVALID_RESPONSE, 502)
    return content


def _json_object(content: str) -> dict:
    """The one JSON object the content is, bare or as a single ```json fenced block."""
    text = content.strip()
    fenced = _FENCED.fullmatch(text)
    answer = _parse_json(fenced.group(1) if fenced else text)
    if not isinstance(answer, dict):
        raise ApiError(INVALID_RESPONSE, 502)
    return answer


def _tokens(document: dict, name: str) -> int:
    """A usage count the server reported, 0 when it gave none (or nonsense)."""
    usage = document.get("usage")
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _answer(body: bytes) -> ModelAnswer:
    """The model's answer from a 2xx body, else 502 model_invalid_response."""
    if len(body) > RESPONSE_LIMIT:
        raise ApiError(INVALID_RESPONSE, 502)
    document = _parse_json(body)
    content = _json_object(_message_content(document))
    return ModelAnswer(content=content, input_tokens=_tokens(document, "prompt_tokens"),
                       output_tokens=_tokens(document, "completion_tokens"))


def _schema_format(schema: dict, schema_name: str) -> dict:
    """The json_schema response format (not strict: optional properties stay optional)."""
    return {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema, "strict": False}}


def _with_schema(system: str, schema: dict) -> str:
    """The system message of the fallback: the schema appended as text."""
    return f"{system}\n\n{_SCHEMA_INSTRUCTION}{json.dumps(schema, ensure_ascii=False)}"


def _complete(statuses: list[int], system: str, user: str, schema: dict, schema_name: str) -> ModelAnswer:
    """Ask with the json_schema format, once more with json_object if it is refused; the answer.

    `statuses` collects the HTTP status of each attempt for the call's log line.
    """
    endpoint = _endpoint()
    first = _payload(endpoint, system, user, _schema_format(schema, schema_name))
    fallback = _payload(endpoint, _with_schema(system, schema), user, {"type": "json_object"})
    with requests.Session() as session:
        session.trust_env = False  # no proxies, .netrc credentials or CA bundles from the environment
        status, body = _post(session, endpoint, first)
        statuses.append(status)
        if _refuses_format(status, body):
            status, body = _post(session, endpoint, fallback)
            statuses.append(status)
    _check_status(status)
    return _answer(body)


def complete_json(system: str, user: str, schema: dict, schema_name: str) -> ModelAnswer:
    """The one JSON object the platform's model answers to `system` and `user`, asked for by `schema`.

    POSTs {MODEL_BASE_URL}/chat/completions with MODEL_NAME, temperature 0 and the response format
    {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema, "strict": false}},
    with `Authorization: Bearer MODEL_API_KEY` when a key is set. Raises ApiError with the spec's
    model codes, and RuntimeError when the session's transaction has written (core.db.end_reads):
    never wait on the model with a transaction open.
    """
    end_reads()
    statuses: list[int] = []
    try:
        answer = _complete(statuses, system, user, schema, schema_name)
    except ApiError as error:
        log.info("model call failed: %s (HTTP %s)", error.code, _statuses(statuses))
        raise
    log.info("model call answered (HTTP %s): %d input tokens, %d output tokens",
             _statuses(statuses), answer.input_tokens, answer.output_tokens)
    return answer


def _statuses(statuses: list[int]) -> str:
    """The attempts' HTTP statuses for a log line, `-` when no answer came."""
    return ",".join(map(str, statuses)) or "-"
