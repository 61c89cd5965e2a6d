"""The model client against a real OpenAI-compatible server on loopback (tests.peers.ModelServer)."""
import json
import logging
import socket

import pytest
from sqlalchemy import select

from core import model
from core.api import ApiError
from core.db import db
from desk.models import Tenant
from desk.tenancy import create_tenant
from tests.conftest import free_port
from tests.peers import completion

SYSTEM = "You build forms. system-secret-marker"
USER = "A visit log for the front desk. user-secret-marker"
SCHEMA = {"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}
SCHEMA_NAME = "intent_label"


def ask() -> model.ModelAnswer:
    """One call with the test's prompt and schema."""
    return model.complete_json(SYSTEM, USER, SCHEMA, SCHEMA_NAME)


def refused(code: str, status: int) -> None:
    """Assert that a call fails with `status` `code`."""
    with pytest.raises(ApiError) as failed:
        ask()
    assert (failed.value.code, failed.value.status) == (code, status)


def test_a_valid_answer_is_parsed_with_its_token_counts(model_server):
    model_server.answer_json({"label": "投诉", "confidence": 0.9}, input_tokens=321, output_tokens=45)
    assert ask() == model.ModelAnswer({"label": "投诉", "confidence": 0.9}, 321, 45)


def test_the_request_carries_the_model_the_key_both_messages_and_the_json_schema(model_server):
    ask()
    (seen,) = model_server.received
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["Authorization"] == "Bearer sk-test-key"
    assert seen.body == {
        "model": "test-model",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": USER}],
        "temperature": 0,
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": SCHEMA_NAME, "schema": SCHEMA, "strict": False}},
    }


def test_no_authorization_header_is_sent_without_a_key(app, model_server, monkeypatch):
    monkeypatch.setitem(app.config, "MODEL_API_KEY", None)
    ask()
    assert "Authorization" not in model_server.received[0].headers


def test_a_trailing_slash_in_the_base_url_is_not_doubled(app, model_server, monkeypatch):
    monkeypatch.setitem(app.config, "MODEL_BASE_URL", model_server.url + "/")
    ask()
    assert model_server.received[0].path == "/v1/chat/completions"


def test_a_refused_json_schema_format_falls_back_once_to_json_object_with_the_schema_in_the_system_message(
        model_server):
    model_server.refuses_json_schema = True
    model_server.answer_json({"label": "咨询"}, input_tokens=5, output_tokens=3)
    assert ask() == model.ModelAnswer({"label": "咨询"}, 5, 3)
    first, second = model_server.received
    assert first.body["response_format"]["type"] == "json_schema"
    assert second.body["response_format"] == {"type": "json_object"}
    system, user = second.body["messages"]
    assert system["content"].startswith(SYSTEM)
    assert "Answer with one JSON object matching this JSON schema: " + json.dumps(SCHEMA) in system["content"]
    assert user == {"role": "user", "content": USER}
    assert second.body["model"] == "test-model"


def test_a_422_about_the_response_format_also_falls_back(model_server):
    model_server.answer_status(422, {"detail": [{"loc": ["body", "response_format", "type"]}]})
    assert ask().content == {"answer": "default"}
    assert [seen.body["response_format"]["type"] for seen in model_server.received] == \
        ["json_schema", "json_object"]


def test_the_fallback_is_tried_only_once(model_server):
    model_server.refuses_json_schema = True
    model_server.answer_status(400, {"error": {"message": "response_format json_object not supported"}})
    refused("model_request_failed", 503)
    assert len(model_server.received) == 2


def test_a_bad_request_not_about_the_response_format_fails_without_a_retry(model_server):
    model_server.answer_status(400, {"error": {"message": "maximum context length exceeded"}})
    refused("model_request_failed", 503)
    assert len(model_server.received) == 1


@pytest.mark.parametrize("setting", ["MODEL_BASE_URL", "MODEL_NAME"])
@pytest.mark.parametrize("absent", [None, ""])
def test_a_missing_base_url_or_model_name_is_model_not_configured(app, model_server, monkeypatch, setting,
                                                                   absent):
    monkeypatch.setitem(app.config, setting, absent)
    assert model.model_state() == "not_configured"
    refused("model_not_configured", 503)
    assert model_server.received == []


@pytest.mark.parametrize("setting,value", [
    ("MODEL_BASE_URL", "ftp://127.0.0.1/v1"),
    ("MODEL_BASE_URL", "127.0.0.1:8000/v1"),
    ("MODEL_BASE_URL", "http:///v1"),
    ("MODEL_BASE_URL", "http://127.0.0.1:8000/v1?api-version=1"),
    ("MODEL_BASE_URL", "http://127.0.0.1:8000/v1?"),
    ("MODEL_BASE_URL", "http://127.0.0.1:8000/v1#part"),
    ("MODEL_BASE_URL", "http://user:pass@127.0.0.1:8000/v1"),
    ("MODEL_BASE_URL", "http://user@127.0.0.1:8000/v1"),
    ("MODEL_BASE_URL", "http://127.0.0.1:99999/v1"),
    ("MODEL_BASE_URL", "http://127.0.0.1:0/v1"),
    ("MODEL_BASE_URL", "http://127.0.0.1:port/v1"),
    ("MODEL_BASE_URL", "http://127.0.0.1:8000/v1 "),
    ("MODEL_BASE_URL", "http://127.0.0.1:8000/v1\n"),
    ("MODEL_BASE_URL", 8000),
    ("MODEL_NAME", "   "),
    ("MODEL_NAME", "gpt\n4o"),
    ("MODEL_NAME", "gpt\x7f4o"),
    ("MODEL_NAME", "gpt\x854o"),
    ("MODEL_NAME", "m" * 201),
    ("MODEL_API_KEY", "sk-test key"),
    ("MODEL_API_KEY", "sk-test-key\r\nX-Injected: 1"),
    ("MODEL_API_KEY", "sk-tést"),
])
def test_a_malformed_configuration_is_model_configuration_invalid(app, model_server, monkeypatch, setting,
                                                                  value):
    monkeypatch.setitem(app.config, setting, value)
    assert model.model_state() == "invalid"
    refused("model_configuration_invalid", 503)
    assert model_server.received == []


@pytest.mark.parametrize("setting,value", [
    ("MODEL_NAME", "m" * 200),
    ("MODEL_NAME", "qwen2.5:7b-instruct"),
    ("MODEL_API_KEY", None),
    ("MODEL_API_KEY", ""),
])
def test_boundary_configurations_are_valid(app, model_server, monkeypatch, setting, value):
    monkeypatch.setitem(app.config, setting, value)
    assert model.model_state() == "configured"
    assert ask().content == {"answer": "default"}


def test_model_state_is_configured_with_the_test_server(model_server):
    assert model.model_state() == "configured"


def test_a_closed_port_is_model_unavailable(app, model_server, monkeypatch):
    monkeypatch.setitem(app.config, "MODEL_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    refused("model_unavailable", 503)


def test_a_dns_failure_is_model_unavailable(app, model_server, monkeypatch):
    system_lookup = socket.getaddrinfo

    def lookup(host, *args, **kwargs):
        if host == "model.invalid":
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return system_lookup(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    monkeypatch.setitem(app.config, "MODEL_BASE_URL", "http://model.invalid/v1")
    refused("model_unavailable", 503)


def test_a_connect_timeout_is_model_unavailable(app, model_server, monkeypatch):
    # A listener whose accept queue is full: Linux drops further SYNs, so the connect never completes.
    with socket.socket() as full:
        full.bind(("127.0.0.1", 0))
        full.listen(0)
        fillers = [socket.socket() for _ in range(3)]
        for filler in fillers:
            filler.setblocking(False)
            filler.connect_ex(full.getsockname())
        monkeypatch.setitem(app.config, "MODEL_BASE_URL", f"http://127.0.0.1:{full.getsockname()[1]}/v1")
        monkeypatch.setitem(app.config, "MODEL_CONNECT_TIMEOUT", 0.2)
        try:
            refused("model_unavailable", 503)
        finally:
            for filler in fillers:
                filler.close()


@pytest.mark.parametrize("status,code", [
    (500, "model_unavailable"),
    (502, "model_unavailable"),
    (503, "model_unavailable"),
    (504, "model_unavailable"),
    (429, "model_rate_limited"),
    (401, "model_request_failed"),
    (403, "model_request_failed"),
    (404, "model_request_failed"),
    (413, "model_request_failed"),
])
def test_http_errors_map_to_the_spec_codes(model_server, status, code):
    model_server.answer_status(status)
    refused(code, 503)
    assert len(model_server.received) == 1


def test_a_redirect_is_not_followed(model_server):
    model_server.answer_status(307, headers={"Location": model_server.url + "/chat/completions"})
    refused("model_request_failed", 503)
    assert len(model_server.received) == 1


def test_an_answer_slower_than_the_read_timeout_is_model_request_failed(app, model_server, monkeypatch):
    monkeypatch.setitem(app.config, "MODEL_READ_TIMEOUT", 0.2)
    model_server.answer_json({"label": "late"}, delay=2.0)
    refused("model_request_failed", 503)


def test_an_answer_within_the_read_timeout_is_accepted(model_server):
    model_server.answer_json({"label": "in time"}, delay=0.2)
    assert ask().content == {"label": "in time"}


def test_environment_proxies_are_not_used(model_server, monkeypatch):
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, dead_proxy)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert ask().content == {"answer": "default"}


@pytest.mark.parametrize("content", [
    '{"label": "咨询"}',
    '  \n{"label": "咨询"}\n  ',
    '```json\n{"label": "咨询"}\n```',
    '\n ```json\n{"label": "咨询"}\n```\n',
    '```JSON {"label": "咨询"} ```',
    '```\n{"label": "咨询"}\n```',
])
def test_a_json_object_bare_or_in_one_fenced_block_is_accepted(model_server, content):
    model_server.answer_content(content)
    assert ask().content == {"label": "咨询"}


@pytest.mark.parametrize("content", [
    "not json at all",
    "",
    '[{"label": "咨询"}]',
    '"咨询"',
    "42",
    "null",
    '{"label": "咨询"} trailing words',
    'Here it is: {"label": "咨询"}',
    '{"label": "咨询"}{"label": "投诉"}',
    '```json\n{"label": "咨询"}\n```\nDone.',
    'Sure!\n```json\n{"label": "咨询"}\n```',
    '```json\n{"label": "咨询"}\n```\n```json\n{"label": "投诉"}\n```',
    '```json\n[1, 2]\n```',
    '{"confidence": NaN}',
    '{"label": "咨询"',
    "[" * 100_000 + "]" * 100_000,
    '{"label": "咨询", "label": "投诉"}',  # which one would count is not for us to guess
])
def test_content_that_is_not_one_json_object_is_model_invalid_response(model_server, content):
    model_server.answer_content(content)
    refused("model_invalid_response", 502)


@pytest.mark.parametrize("body", [
    b"<html>Bad gateway</html>",
    b"",
    [completion('{"label": "x"}')],
    {},
    {"choices": []},
    {"choices": None},
    {"choices": [{}]},
    {"choices": [{"message": {"role": "assistant", "content": None, "refusal": "I cannot"}}]},
    {"choices": [{"message": {"role": "assistant", "content": {"label": "x"}}}]},
])
def test_a_body_that_is_not_a_completion_is_model_invalid_response(model_server, body):
    model_server.answer_body(body)
    refused("model_invalid_response", 502)


def test_missing_usage_counts_zero_tokens(model_server):
    document = completion('{"label": "x"}')
    del document["usage"]
    model_server.answer_body(document)
    assert ask() == model.ModelAnswer({"label": "x"}, 0, 0)


def padded_completion(size: int) -> bytes:
    """A valid completion body of exactly `size` bytes (trailing whitespace is valid JSON)."""
    body = json.dumps(completion('{"label": "x"}')).encode()
    return body + b" " * (size - len(body))


def test_a_body_of_exactly_the_limit_is_accepted(model_server):
    model_server.answer_body(padded_completion(model.RESPONSE_LIMIT))
    assert ask().content == {"label": "x"}


def test_a_body_over_one_mebibyte_is_model_invalid_response(model_server):
    assert model.RESPONSE_LIMIT == 1024 * 1024
    model_server.answer_body(padded_completion(model.RESPONSE_LIMIT + 1))
    refused("model_invalid_response", 502)


def test_a_body_many_times_the_limit_is_model_invalid_response(model_server):
    model_server.answer_json({"label": "x" * (8 * model.RESPONSE_LIMIT)})
    refused("model_invalid_response", 502)


@pytest.mark.parametrize("script", [
    lambda server: server.answer_json({"label": "answer-secret-marker"}),
    lambda server: server.answer_content("answer-secret-marker is not JSON"),
    lambda server: server.answer_status(401, {"error": {"message": "bad key sk-test-key"}}),
    lambda server: setattr(server, "refuses_json_schema", True),
], ids=["success", "invalid_content", "unauthorized", "fallback"])
def test_the_prompt_the_answer_and_the_key_are_never_logged(model_server, caplog, script):
    script(model_server)
    caplog.set_level(logging.DEBUG)
    try:
        ask()
    except ApiError:
        pass
    for secret in ("system-secret-marker", "user-secret-marker", "answer-secret-marker", "sk-test-key"):
        assert secret not in caplog.text
    lines = [record for record in caplog.records if record.name == "core.model"]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO


def test_the_log_line_names_the_outcome_statuses_and_tokens(model_server, caplog):
    model_server.refuses_json_schema = True
    model_server.answer_json({"label": "x"}, input_tokens=321, output_tokens=45)
    caplog.set_level(logging.INFO, logger="core.model")
    ask()
    assert caplog.records[-1].getMessage() == \
        "model call answered (HTTP 400,200): 321 input tokens, 45 output tokens"


def test_a_failure_log_line_names_the_code(model_server, caplog):
    model_server.answer_status(429)
    caplog.set_level(logging.INFO, logger="core.model")
    with pytest.raises(ApiError):
        ask()
    assert caplog.records[-1].getMessage() == "model call failed: model_rate_limited (HTTP 429)"


def test_a_call_after_a_write_in_the_session_is_refused(model_server):
    create_tenant("Writes First", "standard")
    db.session.flush()
    with pytest.raises(RuntimeError):
        ask()
    assert model_server.received == []


def test_a_call_after_reads_only_ends_the_transaction_and_goes_ahead(model_server, tenant):
    assert db.session.scalar(select(Tenant.name).where(Tenant.id == tenant.id)) == "Acme"
    assert db.session().in_transaction()
    assert ask().content == {"answer": "default"}
    assert not db.session().in_transaction()
