"""The OpenAPI document: served, matching the URL map, and fuzzed by schemathesis against a live server."""
import re
import subprocess
import sys

from openapi.api import bp, openapi_document
from openapi.apps import SCOPES
from tests.support.openapi import add_customers

METHODS = {"get", "post", "put", "patch", "delete"}


def test_the_document_is_served_without_a_token(client):
    response = client.get("/api/v1/open/openapi.json")
    assert response.status_code == 200 and response.get_json()["openapi"] == "3.1.0"


def test_the_document_describes_exactly_the_routes_of_the_api(app):
    documented = {(path, method.upper()) for path, item in openapi_document()["paths"].items()
                  for method in item if method in METHODS}
    served = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint.startswith(f"{bp.name}.") and rule.endpoint != f"{bp.name}.openapi_json":
            path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule.removeprefix(bp.url_prefix))
            served |= {(path, method) for method in rule.methods - {"HEAD", "OPTIONS"}}
    assert documented == served


def test_every_operation_names_the_scopes_that_open_it():
    operations = [operation for item in openapi_document()["paths"].values()
                  for method, operation in item.items() if method in METHODS]
    assert operations and all(operation["x-scopes"] and set(operation["x-scopes"]) <= set(SCOPES)
                              for operation in operations)


def test_every_error_code_the_api_raises_is_documented():
    codes = set(openapi_document()["components"]["schemas"]["Error"]["properties"]["error"]["properties"]["code"]["enum"])
    assert {"invalid_record", "invalid_cursor", "idempotency_key_required", "unauthorized", "insufficient_scope",
            "not_found", "idempotency_conflict", "request_too_large", "record_too_large", "rate_limited",
            "record_limit", "open_platform_disabled"} <= codes


def test_schemathesis_finds_no_server_error_or_schema_violation(live_server, make_open_app, app, monkeypatch,
                                                                 tenant, tmp_path):
    monkeypatch.setitem(app.config, "OPEN_API_RATE_LIMIT", 100_000)
    add_customers(tenant, 3)
    _, client, _ = make_open_app()
    run = subprocess.run(
        [sys.executable, "-m", "schemathesis.cli", "run", f"{live_server}/api/v1/open/openapi.json",
         "--url", f"{live_server}/api/v1/open", "-H", f"Authorization: Bearer {client.token}",
         "--checks", "not_a_server_error,response_schema_conformance,status_code_conformance,"
                     "content_type_conformance,response_headers_conformance",
         "--max-examples", "40", "--generation-deterministic",
         "--report-dir", str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)  # its crash cache stays out of the tree
    assert run.returncode == 0, run.stdout[-4000:]
