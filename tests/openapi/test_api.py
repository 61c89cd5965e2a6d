"""Open API v1 through its public surface: auth, scopes, customers, records, limits, errors."""
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from core.api import ApiError
from core.clock import utcnow
from core.crypto import sha256_hex
from core.db import db
from desk.models import Customer, Tenant
from openapi.models import OpenApp, OpenRecord, WebhookEvent
from tests.conftest import LONG_WINDOW
from tests.support.openapi import OpenClient, add_customers


def code(response) -> str:
    return response.get_json()["error"]["code"]


# --- authentication ------------------------------------------------------------------------

@pytest.mark.parametrize("header", [None, "Basic abc", "Bearer", "Bearer ", "Bearer a b", "Token x"])
def test_missing_or_malformed_authorization_is_unauthorized(app, open_client, header):
    headers = {"Authorization": header} if header is not None else {}
    response = app.test_client().get("/api/v1/open/records", headers=headers)
    assert response.status_code == 401 and code(response) == "unauthorized"
    uuid.UUID(response.get_json()["request_id"])


def test_a_wrong_token_is_unauthorized(app, open_client):
    assert code(OpenClient(app.test_client(), open_client.token + "x").get("/records")) == "unauthorized"


def test_an_expired_token_is_unauthorized(make_open_app):
    found, client, _ = make_open_app()
    assert client.get("/records").status_code == 200
    db.session.execute(update(OpenApp).where(OpenApp.id == found.id).values(expires_at=utcnow() - timedelta(seconds=1)))
    db.session.commit()
    response = client.get("/records")
    assert response.status_code == 401 and code(response) == "unauthorized"


@pytest.mark.parametrize("age,status", [(timedelta(days=90), 401), (timedelta(days=90, minutes=-1), 200)],
                         ids=["ninety days old", "a minute younger"])
def test_tokens_expire_after_ninety_days(make_open_app, monkeypatch, age, status):
    created = utcnow() - age
    with monkeypatch.context() as then:
        then.setattr("openapi.apps.utcnow", lambda: created)  # the application was created then
        _, client, _ = make_open_app()
    response = client.get("/records")
    assert response.status_code == status
    if status == 401:
        assert code(response) == "unauthorized"


def test_a_revoked_token_is_unauthorized(make_open_app, tenant, admin):
    from openapi.apps import revoke

    found, client, _ = make_open_app()
    revoke(tenant.id, admin.user_id, found.id)
    db.session.commit()
    assert code(client.get("/records")) == "unauthorized"


def test_a_token_of_an_inactive_tenant_is_unauthorized(make_open_app, tenant):
    _, client, _ = make_open_app()
    db.session.execute(update(Tenant).where(Tenant.id == tenant.id).values(active=False))
    db.session.commit()
    assert code(client.get("/records")) == "unauthorized"


def test_tokens_are_stored_only_as_sha256(make_open_app):
    found, _, made = make_open_app()
    assert found.token_hash == sha256_hex(made.token) and made.token.startswith("csk_")
    row = db.session.execute(select(OpenApp.__table__)).mappings().one()
    assert made.token not in json.dumps({k: str(v) for k, v in row.items()})


def test_a_console_session_is_not_a_token(admin_client, open_client):
    response = admin_client.get("/api/v1/open/records")
    assert response.status_code == 401 and code(response) == "unauthorized"


def test_a_token_cannot_call_the_console_or_other_interfaces(app, open_client):
    client = app.test_client()
    headers = open_client.headers({"Origin": "http://localhost"})
    assert client.get("/api/extensions/", headers=headers).status_code == 401
    assert client.post("/api/extensions/", json={"definition": {}}, headers=headers).status_code == 401
    assert client.get("/extensions", headers=headers).status_code == 302  # to the login page
    assert client.get("/open-platform", headers=headers).status_code == 302
    assert client.get("/workbench", headers=headers).status_code == 302


# --- scopes ----------------------------------------------------------------------------------

@pytest.mark.parametrize("scopes,path", [
    (["app.records.read"], "/customers"), (["app.records.write"], "/customers"),
    (["customers.basic.read"], "/records"),
])
def test_missing_scope_is_insufficient_scope(make_open_app, scopes, path):
    response = make_open_app(scopes)[1].get(path)
    assert response.status_code == 403 and code(response) == "insufficient_scope"


def test_writing_records_needs_the_write_scope(make_open_app):
    response = make_open_app(["app.records.read"])[1].post_record({"a": 1}, str(uuid.uuid4()))
    assert response.status_code == 403 and code(response) == "insufficient_scope"


@pytest.mark.parametrize("scopes,fields", [
    (["customers.basic.read"], {"id", "name", "created_at", "updated_at"}),
    (["customers.contact.read"], {"id", "phone", "email"}),
    (["customers.notes.read"], {"id", "support_note"}),
    (["customers.basic.read", "customers.notes.read"], {"id", "name", "created_at", "updated_at", "support_note"}),
    (["customers.basic.read", "customers.contact.read", "customers.notes.read"],
     {"id", "name", "created_at", "updated_at", "phone", "email", "support_note"}),
])
def test_customer_fields_are_cut_to_the_scopes(make_open_app, tenant, scopes, fields):
    (customer,) = add_customers(tenant, 1)
    client = make_open_app(scopes)[1]
    one = client.get(f"/customers/{customer.id}").get_json()["data"]
    assert set(one) == fields and one["id"] == str(customer.id)
    assert set(client.get("/customers").get_json()["data"]["items"][0]) == fields


def test_unfilled_contact_fields_are_null_and_a_missing_note_is_empty(make_open_app, tenant):
    customer = Customer(tenant_id=tenant.id, name="No contact")
    db.session.add(customer)
    db.session.commit()
    data = make_open_app()[1].get(f"/customers/{customer.id}").get_json()["data"]
    assert data["phone"] is None and data["email"] is None and data["support_note"] == ""


def test_another_tenants_customer_is_not_found(make_open_app, other_tenant):
    (foreign,) = add_customers(other_tenant, 1)
    client = make_open_app()[1]
    assert code(client.get(f"/customers/{foreign.id}")) == "not_found"
    assert code(client.get(f"/customers/{uuid.uuid4()}")) == "not_found"
    assert client.get("/customers").get_json()["data"]["items"] == []


# --- pagination -------------------------------------------------------------------------------

def test_customer_pages_cover_120_customers_without_duplicates_or_gaps(open_client, tenant, other_tenant):
    created = add_customers(tenant, 120)
    add_customers(other_tenant, 5)
    seen, after, pages = [], None, 0
    while True:
        query = {"after": after} if after else {}
        page = open_client.get("/customers", query_string=query).get_json()["data"]
        seen += [item["id"] for item in page["items"]]
        pages += 1
        after = page["next_after"]
        if after is None:
            break
    assert pages == 3 and len(seen) == 120 and len(set(seen)) == 120
    assert seen == sorted(str(c.id) for c in created)


@pytest.mark.parametrize("cursor", ["nope", "123", str(uuid.uuid4()) + "x", "", "{" + str(uuid.uuid4()) + "}"])
def test_a_bad_cursor_is_refused(open_client, cursor):
    for path in ("/customers", "/records"):
        response = open_client.get(path, query_string={"after": cursor})
        assert response.status_code == 400 and code(response) == "invalid_cursor"


def test_records_are_listed_only_for_their_own_application(make_open_app):
    _, mine, _ = make_open_app()
    _, other, _ = make_open_app(name="Other app")
    ids = {mine.post_record({"n": n}, str(uuid.uuid4())).get_json()["data"]["record_id"] for n in range(3)}
    other.post_record({"n": 99}, str(uuid.uuid4()))
    items = mine.get("/records").get_json()["data"]["items"]
    assert {item["record_id"] for item in items} == ids
    assert set(items[0]) == {"record_id", "data", "created_at"}


def test_record_pages_follow_the_keyset(open_client):
    for n in range(55):
        open_client.post_record({"n": n}, str(uuid.uuid4()))
    first = open_client.get("/records").get_json()["data"]
    second = open_client.get("/records", query_string={"after": first["next_after"]}).get_json()["data"]
    ids = [i["record_id"] for i in first["items"] + second["items"]]
    assert len(first["items"]) == 50 and second["next_after"] is None and len(set(ids)) == 55
    assert ids == sorted(ids)


# --- records ------------------------------------------------------------------------------------

def test_creating_a_record_returns_it(open_client):
    response = open_client.post_record({"customer_ref": "C-1", "amount": 12.5, "vip": True, "note": None},
                                       str(uuid.uuid4()))
    assert response.status_code == 201
    data = response.get_json()["data"]
    assert data["data"] == {"customer_ref": "C-1", "amount": 12.5, "vip": True, "note": None}
    assert set(data) == {"record_id", "data", "created_at"}


def test_the_same_key_and_json_return_the_same_record(open_client):
    key = str(uuid.uuid4())
    first = open_client.post_record({"a": 1, "b": "x"}, key)
    again = open_client.post_record({"a": 1, "b": "x"}, key)
    assert again.status_code == 200 and again.get_json()["data"] == first.get_json()["data"]
    assert db.session.scalar(select(func.count()).select_from(OpenRecord)) == 1


def test_the_same_key_with_other_json_or_key_order_is_a_conflict(open_client):
    key = str(uuid.uuid4())
    open_client.post_record(None, key, raw=b'{"data": {"a": 1, "b": "x"}}')
    for raw in (b'{"data": {"a": 2, "b": "x"}}', b'{"data": {"b": "x", "a": 1}}'):
        response = open_client.post_record(None, key, raw=raw)
        assert response.status_code == 409 and code(response) == "idempotency_conflict"
    assert open_client.post_record(None, key, raw=b'{ "data" : {"a":1,"b":"x"} }').status_code == 200


@pytest.mark.parametrize("key", [None, "", "not-a-uuid", "123"])
def test_a_missing_or_malformed_idempotency_key_is_refused(open_client, key):
    response = open_client.post_record({"a": 1}, key)
    assert response.status_code == 400 and code(response) == "idempotency_key_required"


@pytest.mark.parametrize("raw", [
    b'{"data": {"a": {"nested": 1}}}', b'{"data": {"a": [1]}}', b'{"data": {"A": 1}}', b'{"data": {"1a": 1}}',
    b'{"data": {"tenant_id": "x"}}', b'{"data": {"constructor": 1}}', b'{"data": {"__proto__": 1}}',
    b'{"data": {"prototype": 1}}', b'{"data": {"a": NaN}}', b'{"data": {"a": Infinity}}',
    b'{"data": {"a": "nul\\u0000"}}', b'{"data": {"a": "\\ud800"}}', b'{"data": []}', b'{"data": "x"}',
    b'{"data": {}, "tenant_id": "x"}', b'{}', b'[]', b'not json', b'{"data": {"' + b"a" * 33 + b'": 1}}',
    b'{"data": {"a": 1, "a": 2}}', b'{"data": {"a": 1}, "data": {"b": 2}}',  # a name given twice
    '{"data": {"a": 1}}'.encode("utf-16"), '{"data": {"a": 1}}'.encode("utf-8-sig"),  # not plain UTF-8
])
def test_invalid_record_data_is_refused(open_client, raw):
    response = open_client.post_record(None, str(uuid.uuid4()), raw=raw)
    assert response.status_code == 400 and code(response) == "invalid_record"
    assert db.session.scalar(select(func.count()).select_from(OpenRecord)) == 0


def test_record_field_and_string_limits(open_client):
    assert open_client.post_record({f"f{n}": n for n in range(32)}, str(uuid.uuid4())).status_code == 201
    assert code(open_client.post_record({f"f{n}": n for n in range(33)}, str(uuid.uuid4()))) == "invalid_record"
    assert open_client.post_record({"s": "é" * 2000}, str(uuid.uuid4())).status_code == 201
    assert code(open_client.post_record({"s": "é" * 2001}, str(uuid.uuid4()))) == "invalid_record"


def test_data_over_16000_bytes_is_record_too_large(open_client):
    data = {f"f{n}": "x" * 1990 for n in range(9)}  # about 18,000 bytes of data, under 20,000 of body
    response = open_client.post_record(data, str(uuid.uuid4()))
    assert response.status_code == 413 and code(response) == "record_too_large"


def test_a_body_over_20000_bytes_is_request_too_large(open_client):
    response = open_client.post_record(None, str(uuid.uuid4()), raw=b'{"data": {"a": "' + b"x" * 20_000 + b'"}}')
    assert response.status_code == 413 and code(response) == "request_too_large"


@pytest.mark.parametrize("size,status", [(19_000, 201), (20_001, 413), (30_000, 413)])
def test_a_chunked_body_is_held_to_20000_bytes_too(live_server, open_client, size, status):
    import http.client
    from urllib.parse import urlsplit

    body = b'{"data": {"a": "x"}' + b" " * (size - 20) + b"}"  # valid JSON of exactly `size` bytes
    assert len(body) == size
    address = urlsplit(live_server)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=20)
    connection.request("POST", "/api/v1/open/records", body=iter([body[:8_000], body[8_000:]]),
                       headers={**open_client.headers({"Idempotency-Key": str(uuid.uuid4())}),
                                "Content-Type": "application/json"}, encode_chunked=True)
    response = connection.getresponse()
    answer = json.loads(response.read())
    connection.close()
    assert response.status == status, answer
    if status == 413:
        assert answer["error"]["code"] == "request_too_large"
        assert db.session.scalar(select(func.count()).select_from(OpenRecord)) == 0


def test_data_nested_too_deeply_is_invalid_record_not_a_server_error(open_client):
    response = open_client.post_record(None, str(uuid.uuid4()),
                                       raw=b'{"data": {"a": ' + b"[" * 5_000 + b"]" * 5_000 + b"}}")
    assert response.status_code == 400 and code(response) == "invalid_record"


def test_the_ten_thousand_and_first_record_is_refused(make_open_app):
    found, client, _ = make_open_app()
    db.session.execute(update(OpenApp).where(OpenApp.id == found.id).values(record_count=10_000))
    db.session.commit()
    response = client.post_record({"a": 1}, str(uuid.uuid4()))
    assert response.status_code == 429 and code(response) == "record_limit"
    assert db.session.scalar(select(func.count()).select_from(OpenRecord)) == 0  # the refused row is rolled back


def test_twenty_parallel_identical_requests_make_one_record_and_one_event(make_open_app, app, dns):
    dns["hooks.example.com"] = [["93.184.216.34"]]
    found, client, _ = make_open_app(webhook_url="https://hooks.example.com/in")
    key = str(uuid.uuid4())

    def send(_):
        return OpenClient(app.test_client(), client.token).post_record({"order": "A-1"}, key)

    with ThreadPoolExecutor(20) as pool:
        responses = list(pool.map(send, range(20)))
    assert sorted(r.status_code for r in responses) == [200] * 19 + [201]
    assert len({r.get_json()["data"]["record_id"] for r in responses}) == 1
    assert db.session.scalar(select(func.count()).select_from(OpenRecord)) == 1
    assert db.session.scalar(select(func.count()).select_from(WebhookEvent)) == 1
    assert db.session.scalar(select(OpenApp.record_count).where(OpenApp.id == found.id)) == 1  # replays uncounted


# --- rate limit, switch, paths -----------------------------------------------------------------

def test_rate_limit_headers_and_the_61st_request(make_open_app, rate_window):
    client = make_open_app(["app.records.read"])[1]
    rate_window()
    first = client.get("/records")
    assert first.headers["X-RateLimit-Limit"] == "60" and first.headers["X-RateLimit-Remaining"] == "59"
    for _ in range(29):
        assert client.get("/customers").status_code == 403  # failed requests count too
    for _ in range(30):
        last = client.get("/records")
    assert last.status_code == 200 and last.headers["X-RateLimit-Remaining"] == "0"
    limited = client.get("/records")
    assert limited.status_code == 429 and code(limited) == "rate_limited"
    assert 0 < int(limited.headers["Retry-After"]) <= LONG_WINDOW and limited.headers["X-RateLimit-Remaining"] == "0"


def test_after_retry_after_seconds_the_application_may_call_again(app, make_open_app, rate_window, monkeypatch):
    monkeypatch.setitem(app.config, "OPEN_API_RATE_LIMIT", 2)
    client = make_open_app(["app.records.read"])[1]
    rate_window(2, needed=0.5)
    assert [client.get("/records").status_code for _ in range(2)] == [200, 200]
    limited = client.get("/records")
    assert limited.status_code == 429 and 1 <= int(limited.headers["Retry-After"]) <= 2
    time.sleep(int(limited.headers["Retry-After"]))
    again = client.get("/records")
    assert again.status_code == 200 and again.headers["X-RateLimit-Remaining"] == "1"


def test_without_the_test_window_requests_count_in_natural_minutes(open_client, redis_conn):
    before = redis_conn.time()[0]
    assert open_client.get("/records").status_code == 200
    after = redis_conn.time()[0]
    (key,) = redis_conn.keys("limit:fw:open:app:*")
    assert int(key.rsplit(b":", 1)[1]) in {before // 60, after // 60}  # the minute's index
    assert 60 < redis_conn.ttl(key) <= 120  # kept one minute past the minute's end


def test_a_malformed_customer_id_is_an_authenticated_not_found_that_counts(open_client, rate_window):
    rate_window()
    assert open_client.get("/records").headers["X-RateLimit-Remaining"] == "59"
    for malformed in ("not-a-uuid", "1234", str(uuid.uuid4()).upper().replace("-", "")):
        response = open_client.get(f"/customers/{malformed}")
        assert response.status_code == 404 and code(response) == "not_found"
        assert response.headers["X-RateLimit-Limit"] == "60"
    assert response.headers["X-RateLimit-Remaining"] == "56"


def test_the_rate_limit_is_per_application(make_open_app, rate_window):
    one, two = make_open_app()[1], make_open_app(name="Second")[1]
    rate_window()
    for _ in range(60):
        one.get("/records")
    assert code(one.get("/records")) == "rate_limited"
    assert two.get("/records").status_code == 200


def test_the_platform_switch_closes_the_api(app, open_client, monkeypatch):
    monkeypatch.setitem(app.config, "OPEN_PLATFORM_ENABLED", False)
    response = open_client.get("/records")
    assert response.status_code == 503 and code(response) == "open_platform_disabled"


@pytest.mark.parametrize("path", ["/api/v1/open/nothing", "/api/v2/open/records", "/api/v1/open/records/x",
                                  "/api/v1/open/customers/not-a-uuid"])
def test_unknown_paths_and_versions_are_not_found(app, open_client, path):
    response = app.test_client().get(path, headers=open_client.headers())
    assert response.status_code == 404 and code(response) == "not_found"


def test_no_update_or_delete_of_records(app, open_client):
    for method in ("put", "patch", "delete", "options"):
        response = getattr(app.test_client(), method)("/api/v1/open/records", headers=open_client.headers())
        assert response.status_code == 404 and "Allow" not in response.headers


# --- management through the service --------------------------------------------------------------

def test_the_hundred_and_first_application_is_refused_even_with_revoked_ones(make_open_app, tenant, admin):
    from openapi.apps import revoke

    found, _, _ = make_open_app()
    revoke(tenant.id, admin.user_id, found.id)
    db.session.commit()
    for n in range(99):
        make_open_app(["app.records.read"], name=f"App {n}")
    with pytest.raises(ApiError) as refused:
        make_open_app(["app.records.read"], name="One too many")
    assert (refused.value.code, refused.value.status) == ("app_limit", 429)


@pytest.mark.parametrize("scopes", [[], ["customers.all"], ["app.records.read", "app.records.read"], "app.records.read"])
def test_unknown_or_empty_scopes_are_refused(make_open_app, scopes):
    with pytest.raises(ApiError) as refused:
        make_open_app(scopes)
    assert (refused.value.code, refused.value.status) == ("invalid_scopes", 400)


def test_an_unreachable_store_is_open_platform_unavailable(app_config, open_client):
    from tests.conftest import build_app

    broken = build_app({**app_config, "REDIS_URL": "redis://127.0.0.1:1/0"})  # nothing listens on port 1
    response = broken.test_client().get("/api/v1/open/records", headers=open_client.headers())
    assert response.status_code == 503 and code(response) == "open_platform_unavailable"
    assert "Traceback" not in response.get_data(as_text=True)


def _revoking(app, tenant, admin, found, order: list):
    """Revoke `found` in another thread, which appends "revoked" to `order` once committed."""
    import threading

    from openapi.apps import revoke

    def revoke_now():
        with app.app_context():
            revoke(tenant.id, admin.user_id, found.id)
            db.session.commit()
            order.append("revoked")

    revoker = threading.Thread(target=revoke_now)
    revoker.start()
    return revoker


def test_revocation_waits_for_an_in_flight_write_of_the_application(app, make_open_app, tenant, admin):
    import threading

    from sqlalchemy import text

    found, client, _ = make_open_app()
    order, holding = [], threading.Event()

    def in_flight_write():
        with app.app_context(), db.engine.connect() as connection:
            connection.execute(text("UPDATE open_app SET record_count = record_count WHERE id = :id"),
                               {"id": found.id.hex if db.engine.dialect.name == "sqlite" else found.id})
            holding.set()
            time.sleep(1)
            order.append("write done")
            connection.commit()

    writer = threading.Thread(target=in_flight_write)
    writer.start()
    assert holding.wait(10)
    revoker = _revoking(app, tenant, admin, found, order)
    writer.join(20)
    revoker.join(20)
    assert order == ["write done", "revoked"]
    assert code(client.get("/records")) == "unauthorized"


def test_a_write_already_authenticated_when_revocation_lands_leaves_nothing_to_deliver(
        app, make_open_app, tenant, admin, monkeypatch, dns):
    import threading

    from openapi import records

    dns["hooks.example.com"] = [["93.184.216.34"]]
    found, client, _ = make_open_app(webhook_url="https://hooks.example.com/in")
    authenticated, go_on = threading.Event(), threading.Event()
    check_data = records.validate_data

    def pause_after_authentication(data):  # the real check, after a pause the test controls
        authenticated.set()
        go_on.wait(10)
        return check_data(data)

    monkeypatch.setattr(records, "validate_data", pause_after_authentication)
    order, answers = [], []

    def write():
        answers.append(client.post_record({"a": 1}, str(uuid.uuid4())))

    writer = threading.Thread(target=write)
    writer.start()
    assert authenticated.wait(10)
    revoker = _revoking(app, tenant, admin, found, order)
    revoker.join(1)  # PostgreSQL: blocked on the write's row lock; SQLite: done
    go_on.set()
    writer.join(20)
    revoker.join(20)
    statuses = list(db.session.scalars(select(WebhookEvent.status)))
    if answers[0].status_code == 201:  # the write went first: the revocation came after and cancelled its event
        assert statuses == ["cancelled"]
    else:  # the revocation went first, so the write must not happen
        assert code(answers[0]) == "unauthorized" and statuses == []
        assert db.session.scalar(select(func.count()).select_from(OpenRecord)) == 0


def test_a_huge_integer_is_an_invalid_record_not_a_server_error(open_client):
    response = open_client.post_record(None, str(uuid.uuid4()), raw=b'{"data": {"n": 1' + b"0" * 400 + b"}}")
    assert response.status_code == 400 and code(response) == "invalid_record"
