"""Signed inbound channel messages per second through the WSGI stack, against GET /healthz.

Run: .venv/bin/python -m bench.inbound
"""
import itertools
import json
import logging
import time

from bench.common import bench_app, rate
from core.crypto import hmac_sha256_hex
from core.db import db
from desk.channels import create_channel
from desk.tenancy import create_tenant


def main() -> None:
    """Measure both rates in one run and print the ratio."""
    logging.disable(logging.INFO)
    app = bench_app()
    with app.app_context():
        tenant = create_tenant("Bench")
        channel, secret = create_channel(tenant.id, "Bench chat")
        db.session.commit()
        url = f"/api/channels/{channel.id}/messages"
    client = app.test_client()
    counter = itertools.count()

    def healthz():
        assert client.get("/healthz").status_code == 200

    def inbound():
        n = next(counter)
        raw = json.dumps({"message_id": f"m-{n}", "text": "Where is my parcel?",
                          "customer": {"external_id": f"c-{n % 50}", "name": "Bench Customer"}}).encode()
        ts = str(int(time.time()))
        response = client.post(url, data=raw, content_type="application/json", headers={
            "X-Channel-Timestamp": ts,
            "X-Channel-Signature": "v1=" + hmac_sha256_hex(secret, ts.encode() + b"." + raw)})
        assert response.status_code == 201, response.get_data(as_text=True)

    base = rate(healthz)
    measured = rate(inbound)
    print(f"GET /healthz            {base:8.1f} req/s (baseline)")
    print(f"POST inbound message    {measured:8.1f} req/s")
    print(f"ratio inbound/healthz   {measured / base:8.3f}")


if __name__ == "__main__":
    main()
