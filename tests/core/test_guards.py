"""Console JSON API guards and envelopes, on a guarded echo route mounted for the test."""
import json
import uuid

import pytest
from flask import Blueprint

from core.api import ok
from core.guards import console_json_body
from desk.handoff import issue_link_token
from desk.sessions import IMPERSONATION, admin_console_required
from tests.conftest import build_app, login

ORIGIN = {"Origin": "http://localhost"}


@pytest.fixture(scope="module")
def guarded_app(app_config):
    """An app with one console JSON route that uses the real guards, plus a failing route."""
    application = build_app(app_config)
    bp = Blueprint("echo", __name__, url_prefix="/api/extensions/_echo")

    @bp.post("")
    @admin_console_required
    def echo():
        return ok({"echo": console_json_body(32_000)}, 201)

    @bp.post("/bodyless")
    @admin_console_required
    def bodyless():
        return ok({"done": True})

    @bp.get("/boom")
    def boom():
        raise RuntimeError("internal detail that must not leak")

    application.register_blueprint(bp)
    return application


@pytest.fixture
def api(guarded_app, app, admin):
    """An administrator's browser on the guarded app."""
    browser = guarded_app.test_client()
    assert login(browser, admin.user.email).status_code == 302
    return browser


def _error(response) -> str:
    body = response.get_json()
    uuid.UUID(body["request_id"])
    return body["error"]["code"]


def test_guarded_post_answers_in_the_success_envelope(api):
    response = api.post("/api/extensions/_echo", json={"a": 1}, headers=ORIGIN)
    assert response.status_code == 201
    body = response.get_json()
    assert body["data"] == {"echo": {"a": 1}}
    uuid.UUID(body["request_id"])


def test_every_json_response_gets_a_fresh_request_id(api):
    first = api.post("/api/extensions/_echo", json={}, headers=ORIGIN).get_json()["request_id"]
    second = api.post("/api/extensions/_echo", json={}, headers=ORIGIN).get_json()["request_id"]
    assert first != second


def test_post_without_origin_is_forbidden(api):
    response = api.post("/api/extensions/_echo", json={"a": 1})
    assert response.status_code == 403 and _error(response) == "forbidden"


def test_guarded_post_that_reads_no_body_still_needs_the_origin(api):
    assert api.post("/api/extensions/_echo/bodyless").status_code == 403
    assert api.post("/api/extensions/_echo/bodyless", headers={"Origin": "http://evil.example"}).status_code == 403
    assert api.post("/api/extensions/_echo/bodyless", headers=ORIGIN).status_code == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "https://localhost", "http://localhost:8080",
                                    "null", "http://localhost.evil.example"])
def test_post_from_another_origin_is_forbidden(api, origin):
    response = api.post("/api/extensions/_echo", json={"a": 1}, headers={"Origin": origin})
    assert response.status_code == 403 and _error(response) == "forbidden"


def test_body_above_32000_bytes_is_refused_before_parsing(api):
    raw = b'{"x": "' + b"a" * 32_000 + b'"}'
    response = api.post("/api/extensions/_echo", data=raw, content_type="application/json", headers=ORIGIN)
    assert response.status_code == 413 and _error(response) == "request_too_large"


def test_body_of_exactly_32000_bytes_is_accepted(api):
    raw = b'{"x": "' + b"a" * (32_000 - 9) + b'"}'
    assert len(raw) == 32_000
    response = api.post("/api/extensions/_echo", data=raw, content_type="application/json", headers=ORIGIN)
    assert response.status_code == 201


@pytest.mark.parametrize("size,status", [(32_000, 201), (32_001, 413), (60_000, 413)])
def test_a_chunked_body_without_a_length_is_held_to_the_same_limit(api, size, status):
    import io

    raw = b'{"x": "' + b"a" * (size - 9) + b'"}'
    # What a WSGI server passes on for `Transfer-Encoding: chunked`: a terminated stream, no length.
    response = api.post("/api/extensions/_echo", input_stream=io.BytesIO(raw), content_type="application/json",
                        headers=ORIGIN, environ_overrides={"wsgi.input_terminated": True})
    assert response.status_code == status
    if status == 413:
        assert _error(response) == "request_too_large"


def test_json_nested_too_deeply_is_invalid_json_not_a_server_error(api):
    raw = b'{"x": ' + b"[" * 5_000 + b"]" * 5_000 + b"}"
    response = api.post("/api/extensions/_echo", data=raw, content_type="application/json", headers=ORIGIN)
    assert response.status_code == 400 and _error(response) == "invalid_json"


def test_oversized_body_that_is_not_even_json_still_gets_413(api):
    response = api.post("/api/extensions/_echo", data=b"<" * 40_000, content_type="text/plain",
                        headers=ORIGIN)
    assert response.status_code == 413


@pytest.mark.parametrize("raw,content_type", [
    (b'{"a": 1}', "text/plain"),
    (b"{not json", "application/json"),
    (b"[1, 2]", "application/json"),
    (b'"text"', "application/json"),
    (b'{"a": NaN}', "application/json"),
    (b"", "application/json"),
    (b'\xff\xfe{}', "application/json"),
])
def test_non_object_or_non_json_body_is_invalid_json(api, raw, content_type):
    response = api.post("/api/extensions/_echo", data=raw, content_type=content_type, headers=ORIGIN)
    assert response.status_code == 400 and _error(response) == "invalid_json"


@pytest.mark.parametrize("raw,named", [
    (b'{"a": 1, "a": 2}', "a"),
    (b'{"a": {"b": 1, "b": 1}}', "b"),
    (b'{"list": [{"x": 1, "x": 2}]}', "x"),
])
def test_a_name_given_twice_is_refused_naming_it(api, raw, named):
    response = api.post("/api/extensions/_echo", data=raw, content_type="application/json", headers=ORIGIN)
    assert response.status_code == 400 and _error(response) == "invalid_json"
    assert response.get_json()["error"]["detail"] == named


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32", "utf-8-sig"])
def test_json_in_another_encoding_than_plain_utf_8_is_refused(api, encoding):
    raw = '{"a": "ok"}'.encode(encoding)
    response = api.post("/api/extensions/_echo", data=raw, content_type="application/json", headers=ORIGIN)
    assert response.status_code == 400 and _error(response) == "invalid_json"


def test_anonymous_console_api_call_is_unauthorized(guarded_app, app):
    response = guarded_app.test_client().post("/api/extensions/_echo", json={}, headers=ORIGIN)
    assert response.status_code == 401 and _error(response) == "unauthorized"


def test_agent_console_api_call_is_forbidden(guarded_app, agent):
    browser = guarded_app.test_client()
    login(browser, agent.user.email)
    response = browser.post("/api/extensions/_echo", json={}, headers=ORIGIN)
    assert response.status_code == 403 and _error(response) == "forbidden"


def test_impersonated_console_api_call_is_refused_by_session_scope(guarded_app, admin):
    browser = guarded_app.test_client()
    browser.get(f"/staff/impersonate/{issue_link_token(IMPERSONATION, admin)}")
    response = browser.post("/api/extensions/_echo", json={}, headers=ORIGIN)
    assert response.status_code == 403 and _error(response) == "session_scope_forbidden"


def test_console_json_api_needs_no_csrf_token_but_pages_do(api):
    assert api.post("/api/extensions/_echo", json={}, headers=ORIGIN).status_code == 201
    assert api.post("/logout").status_code == 400


def test_unknown_api_path_is_a_json_404(guarded_app, app):
    response = guarded_app.test_client().get("/api/nothing/here")
    assert response.status_code == 404 and _error(response) == "not_found"


def test_wrong_method_on_an_api_path_is_a_json_not_found(api):
    response = api.delete("/api/extensions/_echo", headers=ORIGIN)
    assert response.status_code == 404 and _error(response) == "not_found"


def test_unexpected_failure_is_a_json_500_without_internals(guarded_app, app):
    response = guarded_app.test_client().get("/api/extensions/_echo/boom")
    assert response.status_code == 500 and _error(response) == "internal_error"
    assert "internal detail" not in response.get_data(as_text=True)


def test_pages_outside_api_get_html_error_pages(guarded_app, app):
    response = guarded_app.test_client().get("/no/such/page")
    assert response.status_code == 404
    assert response.mimetype == "text/html" and "Not found" in response.get_data(as_text=True)
    with pytest.raises(json.JSONDecodeError):
        json.loads(response.get_data(as_text=True))


def test_responses_vary_on_hx_request(guarded_app, app):
    response = guarded_app.test_client().get("/login")
    assert "HX-Request" in response.headers["Vary"]


def test_behind_a_trusted_proxy_the_public_origin_is_accepted(app_config, app, admin):
    proxied = build_app({**app_config, "TRUSTED_PROXIES": 1})
    bp = Blueprint("echo", __name__)

    @bp.post("/api/extensions/_echo")
    @admin_console_required
    def echo():
        return ok(console_json_body(32_000))

    proxied.register_blueprint(bp)
    browser = proxied.test_client()
    login(browser, admin.user.email)
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "desk.example.com"}
    good = browser.post("/api/extensions/_echo", json={}, headers={**forwarded, "Origin": "https://desk.example.com"})
    bad = browser.post("/api/extensions/_echo", json={}, headers={**forwarded, "Origin": "http://localhost"})
    assert (good.status_code, bad.status_code) == (200, 403)
