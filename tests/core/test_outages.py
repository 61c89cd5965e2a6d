"""A store outage is a 503 with Retry-After, never a 500: pages show the friendly page, each JSON API
its specification's code, everything else service_unavailable; /readyz names what is away. Outages
here are real: the app is pointed at a port nobody listens on (a restart, a failover and a paused
store are the fault suite's, tests/faults)."""
import psycopg
import pytest
from sqlalchemy.exc import IntegrityError, InternalError, OperationalError

from core.db import db, is_store_outage
from core.web import OUTAGE_RETRY_SECONDS
from openapi.apps import create_app as create_open_app
from tests.conftest import build_app
from tests.support.metrics import delta, scrape
from tests.support.studio import ORIGIN

AWAY = {"SQLALCHEMY_DATABASE_URI": "postgresql+psycopg://studio@127.0.0.1:1/none",
        "REDIS_URL": "redis://127.0.0.1:1/0"}  # nothing listens on port 1


def _away(app_config, client, *stores: str):
    """A browser with `client`'s session cookie on an app whose `stores` are away."""
    broken = build_app({**app_config, **{store: AWAY[store] for store in stores}}).test_client()
    if client.get_cookie("session") is not None:
        broken.set_cookie("session", client.get_cookie("session").value)
    return broken


def _unavailable(response, code: str) -> None:
    assert response.status_code == 503, response.get_data(as_text=True)[:300]
    assert response.headers["Retry-After"] == str(OUTAGE_RETRY_SECONDS)
    assert "Traceback" not in response.get_data(as_text=True)
    if response.mimetype == "application/json":
        assert response.get_json()["error"]["code"] == code


@pytest.mark.parametrize("store", ["SQLALCHEMY_DATABASE_URI", "REDIS_URL"])
@pytest.mark.parametrize("path", ["/workbench", "/extensions", "/login"])
def test_pages_answer_the_friendly_503_while_a_store_is_away(app_config, admin_client, store, path):
    response = _away(app_config, admin_client, store).get(path)
    _unavailable(response, "service_unavailable")
    page = response.get_data(as_text=True)
    assert "Temporarily unavailable" in page and "service_unavailable" in page
    assert "Try again in a few seconds" in page


@pytest.mark.parametrize(("store", "name"), [("SQLALCHEMY_DATABASE_URI", "database"), ("REDIS_URL", "redis")])
def test_each_outage_answer_is_counted_by_store(app_config, admin_client, store, name):
    before = scrape(admin_client)
    _unavailable(_away(app_config, admin_client, store).get("/workbench"), "service_unavailable")
    after = scrape(admin_client)
    assert delta(before, after, "unavailable_answers_total", store=name) == 1
    assert sum(delta(before, after, "unavailable_answers_total", store=other) for other in ("database", "redis")) == 1


def test_an_htmx_request_keeps_its_region_while_a_store_is_away(app_config, admin_client):
    response = _away(app_config, admin_client, "REDIS_URL").get("/workbench", headers={"HX-Request": "true"})
    _unavailable(response, "service_unavailable")
    assert response.headers["HX-Reswap"] == "none"


@pytest.mark.parametrize("store", ["SQLALCHEMY_DATABASE_URI", "REDIS_URL"])
def test_the_console_api_is_extensions_unavailable_with_retry_after(app_config, admin_client, store):
    _unavailable(_away(app_config, admin_client, store).get("/api/extensions/"), "extensions_unavailable")


@pytest.mark.parametrize("store", ["SQLALCHEMY_DATABASE_URI", "REDIS_URL"])
def test_the_open_api_is_open_platform_unavailable_with_retry_after(app_config, client, tenant, admin, store):
    token = create_open_app(tenant.id, admin.user_id, "Partner", ["app.records.read"], processing_confirmed=True,
                            confirmed_scopes=()).token
    db.session.commit()
    response = _away(app_config, client, store).get("/api/v1/open/records",
                                                    headers={"Authorization": f"Bearer {token}"})
    _unavailable(response, "open_platform_unavailable")


def test_the_inbound_endpoint_is_service_unavailable_with_retry_after(app_config, client):
    response = _away(app_config, client, "SQLALCHEMY_DATABASE_URI").post(
        "/api/channels/00000000-0000-0000-0000-000000000000/messages", data=b"{}",
        headers={"X-Channel-Timestamp": "1", "X-Channel-Signature": "v1=00", **ORIGIN},
        content_type="application/json")
    _unavailable(response, "service_unavailable")


def test_readyz_answers_ready_when_both_stores_answer(client):
    response = client.get("/readyz")
    assert response.status_code == 200 and response.get_json() == {"status": "ready"}


@pytest.mark.parametrize("stores, named", [(("SQLALCHEMY_DATABASE_URI",), "database"), (("REDIS_URL",), "redis"),
                                           (("SQLALCHEMY_DATABASE_URI", "REDIS_URL"), "database,redis")])
def test_readyz_names_the_stores_that_are_away(app_config, client, stores, named):
    response = _away(app_config, client, *stores).get("/readyz")
    _unavailable(response, "service_unavailable")
    assert response.get_json()["error"]["detail"] == named


def test_healthz_touches_no_store(app_config, client):
    assert _away(app_config, client, "SQLALCHEMY_DATABASE_URI", "REDIS_URL").get("/healthz").status_code == 200


def test_a_read_only_database_or_a_statement_timeout_is_an_outage_and_other_database_errors_are_not():
    read_only = InternalError("INSERT", {}, psycopg.errors.ReadOnlySqlTransaction("read-only transaction"))
    unique = IntegrityError("INSERT", {}, psycopg.errors.UniqueViolation("duplicate key"))
    gone = OperationalError("SELECT 1", {}, psycopg.OperationalError("server closed the connection"))
    timed_out = OperationalError("UPDATE", {}, psycopg.errors.QueryCanceled("canceling statement due to timeout"))
    assert is_store_outage(read_only) and is_store_outage(gone) and is_store_outage(timed_out)
    assert not is_store_outage(unique)
