"""The receiver example of docs/webhooks.md, run as written against real deliveries."""
import re
import uuid

import pytest

from core.config import PROJECT_ROOT
from tests.support.openapi import deliver


@pytest.fixture(scope="module")
def example() -> dict:
    """The first Python block of docs/webhooks.md, executed."""
    text = (PROJECT_ROOT / "docs" / "webhooks.md").read_text()
    namespace: dict = {}
    exec(re.search(r"```python\n(.*?)```", text, re.S).group(1), namespace)  # noqa: S102  our own doc
    return namespace


def test_the_documented_receiver_accepts_a_delivery_once(example, make_open_app, receiver, redis_conn, tmp_path):
    _, client, made = make_open_app(["app.records.write"], webhook_url=receiver.url("localhost"))
    client.post_record({"order": "A-7"}, str(uuid.uuid4()))
    deliver(redis_conn)
    (seen,) = receiver.received
    store = example["open_seen_store"](str(tmp_path / "seen.db"))
    status, event = example["check_delivery"](seen.headers, seen.body, made.signing_secret, store)
    assert status == 200 and event["type"] == "app.record.created"
    assert example["check_delivery"](seen.headers, seen.body, made.signing_secret, store) == (200, None)
    assert example["check_delivery"](seen.headers, seen.body + b" ", made.signing_secret, store)[0] == 401
    assert example["check_delivery"](seen.headers, seen.body, "whsec_wrong", store)[0] == 401
    forged = {**seen.headers, "X-Service-Signature": "v1=é" + "0" * 63}  # non-ASCII: refused, not a crash
    assert example["check_delivery"](forged, seen.body, made.signing_secret, store)[0] == 401
    late = int(seen.headers["X-Service-Timestamp"]) + 301
    assert example["check_delivery"](seen.headers, seen.body, made.signing_secret, store, now=late)[0] == 401
    other_id = {**seen.headers, "X-Service-Event-Id": str(uuid.uuid4())}
    assert example["check_delivery"](other_id, seen.body, made.signing_secret, store)[0] == 400
