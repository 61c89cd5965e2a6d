"""The Open API as an external server calls it: a client with its bearer token and every scope,
customers to read, records created, and the webhooks they cause delivered and checked as a
receiver checks them."""
import hashlib
import hmac
import json
import time
import uuid

from rq import Queue, SimpleWorker

from core.db import db
from core.queue_names import WEBHOOKS
from desk.models import Customer
from openapi.apps import SCOPES

ALL_SCOPES = list(SCOPES)


class OpenClient:
    """An external server calling the Open API with its bearer token."""

    def __init__(self, client, token: str):
        self.client = client
        self.token = token

    def headers(self, extra: dict | None = None) -> dict:
        return {"Authorization": f"Bearer {self.token}", **(extra or {})}

    def get(self, path: str, **kwargs):
        return self.client.get(f"/api/v1/open{path}", headers=self.headers(), **kwargs)

    def post_record(self, data, key: str | None, raw: bytes | None = None):
        headers = self.headers({"Idempotency-Key": key} if key is not None else {})
        body = raw if raw is not None else json.dumps({"data": data}).encode()
        return self.client.post("/api/v1/open/records", data=body, headers=headers,
                                content_type="application/json")


def create_record(client: OpenClient) -> str:
    """A record created through the Open API (one webhook event); its id."""
    response = client.post_record({"order": "A-1"}, str(uuid.uuid4()))
    assert response.status_code == 201
    return response.get_json()["data"]["record_id"]


def deliver(redis_conn, rounds: int = 1) -> None:
    """Run a real worker (with RQ's scheduler) over the webhooks queue until it is empty."""
    worker = SimpleWorker([Queue(WEBHOOKS, connection=redis_conn)], connection=redis_conn)
    for _ in range(rounds):
        worker.work(burst=True, with_scheduler=True)


def verify(secret: str, headers: dict, body: bytes) -> bool:
    """The receiver's check, written from the documented algorithm (not from our code)."""
    timestamp = headers["X-Service-Timestamp"]
    expected = "v1=" + hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return len(timestamp) == 10 and timestamp.isdigit() and abs(time.time() - int(timestamp)) < 300 \
        and hmac.compare_digest(expected, headers["X-Service-Signature"])


def add_customers(tenant, count: int) -> list[Customer]:
    """`count` customers of the tenant, every other one with a phone; committed."""
    customers = [Customer(tenant_id=tenant.id, name=f"Customer {n}", phone=f"+86 1380000{n:04d}" if n % 2 else None,
                          email=f"c{n}@mail.example", support_note=f"note {n}") for n in range(count)]
    db.session.add_all(customers)
    db.session.commit()
    return customers
