"""Inbound messages under concurrency, against a real multi-worker server (gunicorn as `make run`
starts it) on the test database: every accepted message is stored exactly once and nothing
answers 5xx, alone and while Open API and Studio writes run at the same time."""
import json
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import requests
from sqlalchemy import func, select

from core.crypto import hmac_sha256_hex
from core.db import db
from desk.models import Conversation, Customer, Message
from openapi.apps import CONFIRMED_SCOPES, SCOPES, create_app
from studio.catalog import PUBLISH_PERMISSIONS
from studio.models import StudioRecord
from tests.conftest import CSRF_RE, PASSWORD
from tests.support.studio import sample_definition


def _send(base: str, signer: tuple, message_id: str, external_id: str, text: str) -> int:
    """POST one signed message (`signer`: the channel's id and secret); the HTTP status."""
    channel_id, secret = signer
    raw = json.dumps({"message_id": message_id, "text": text,
                      "customer": {"external_id": external_id, "name": "Wang Fang"}}).encode()
    stamp = str(int(time.time()))
    signature = hmac_sha256_hex(secret, stamp.encode() + b"." + raw)
    response = requests.post(f"{base}/api/channels/{channel_id}/messages", data=raw, timeout=60,
                             headers={"Content-Type": "application/json", "X-Channel-Timestamp": stamp,
                                      "X-Channel-Signature": f"v1={signature}"})
    return response.status_code


def _stored_once(sent: set[str]) -> None:
    """Every message id sent is stored exactly once, and each customer has one conversation."""
    db.session.rollback()  # a fresh snapshot of what the server committed
    rows = db.session.execute(select(Message.external_id, func.count()).group_by(Message.external_id)).all()
    assert dict(rows) == {message_id: 1 for message_id in sent}
    per_customer = db.session.execute(select(Conversation.customer_id, func.count())
                                      .group_by(Conversation.customer_id)).all()
    assert {count for _, count in per_customer} == {1}


def test_a_concurrent_burst_with_new_and_existing_customers_and_replays_stores_each_message_once(
        gunicorn, channel):
    signer = channel[0].id, channel[1]  # read here: the threads below have no app context
    assert _send(gunicorn, signer, "seed", "existing", "first contact") == 201
    burst = [(f"m-{n}", "existing" if n % 2 else f"new-{n % 4}", f"message {n}") for n in range(16)]
    burst += burst[:8]  # the channel repeats half of them at the same time
    with ThreadPoolExecutor(len(burst)) as pool:
        statuses = list(pool.map(lambda m: _send(gunicorn, signer, *m), burst))
    assert all(status in (200, 201) for status in statuses), statuses
    assert statuses.count(201) == 16
    _stored_once({"seed"} | {message_id for message_id, _, _ in burst})
    assert db.session.scalar(select(func.count()).select_from(Customer)) == 3


def _console(base: str, email: str) -> requests.Session:
    """An administrator logged in through the real form."""
    browser = requests.Session()
    token = CSRF_RE.search(browser.get(f"{base}/login").text).group(1)
    answer = browser.post(f"{base}/login", data={"email": email, "password": PASSWORD, "csrf_token": token},
                          allow_redirects=False)
    assert answer.status_code == 302
    browser.headers["Origin"] = base
    return browser


def _live_studio_app(base: str, browser: requests.Session) -> str:
    """Create, simulate and publish the sample application through the console API."""
    created = browser.post(f"{base}/api/extensions", json={"definition": sample_definition()})
    app_id = created.json()["data"]["extension_id"]
    assert browser.post(f"{base}/api/extensions/{app_id}/simulate",
                        json={"version": 1, "input": {"title": "Sample"}}).status_code == 200
    assert browser.post(f"{base}/api/extensions/{app_id}/publish",
                        json={"version": 1, "expected_active_version": None,
                              "permissions": PUBLISH_PERMISSIONS}).status_code == 200
    return app_id


def test_inbound_messages_hold_under_mixed_load_with_open_api_and_studio_writes(
        gunicorn, channel, tenant, admin):
    signer = channel[0].id, channel[1]  # read here: the threads below have no app context
    tokens = [create_app(tenant.id, admin.user_id, f"Partner {n}", list(SCOPES), None, processing_confirmed=True,
                         confirmed_scopes=CONFIRMED_SCOPES).token
              for n in range(3)]
    db.session.commit()
    browser = _console(gunicorn, admin.user.email)
    studio_apps = [_live_studio_app(gunicorn, browser) for _ in range(2)]

    def inbound(thread: int) -> list[int]:
        return [_send(gunicorn, signer, f"t{thread}-{n}", f"c-{n % 7}", f"text {n}") for n in range(60)]

    def open_api(token: str) -> list[int]:
        return [requests.post(f"{gunicorn}/api/v1/open/records", json={"data": {"n": n}}, timeout=60,
                              headers={"Authorization": f"Bearer {token}",
                                       "Idempotency-Key": str(uuid.uuid4())}).status_code
                for n in range(20)]

    def studio(app_id: str) -> list[int]:
        return [browser.post(f"{gunicorn}/api/extensions/{app_id}/records", timeout=60,
                             json={"version": 1, "input": {"title": f"T{n}"},
                                   "idempotency_key": str(uuid.uuid4())}).status_code for n in range(20)]

    with ThreadPoolExecutor(9) as pool:
        inbound_runs = [pool.submit(inbound, n) for n in range(4)]
        open_runs = [pool.submit(open_api, token) for token in tokens]
        studio_runs = [pool.submit(studio, app_id) for app_id in studio_apps]
        inbound_statuses = [s for run in inbound_runs for s in run.result()]
        open_statuses = [s for run in open_runs for s in run.result()]
        studio_statuses = [s for run in studio_runs for s in run.result()]

    assert set(inbound_statuses) == {201}, inbound_statuses
    assert set(open_statuses) == {201}, open_statuses
    assert set(studio_statuses) == {200}, studio_statuses
    _stored_once({f"t{thread}-{n}" for thread in range(4) for n in range(60)})  # 240 messages
    assert db.session.scalar(select(func.count()).select_from(StudioRecord)) == 40
