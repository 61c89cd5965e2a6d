"""Inbound channel messages as a channel's server sends them: a body, signed and POSTed."""
import json
import time

from core.crypto import hmac_sha256_hex
from core.db import db
from desk.channels import create_channel


def payload(message_id="m-1", external_id="c-1", text="Hello, my parcel is late", **customer):
    """An inbound body."""
    return {"message_id": message_id, "text": text,
            "customer": {"external_id": external_id, "name": "Wang Fang", **customer}}


def send(client, channel, body, *, timestamp=None, secret=None, raw=None):
    """POST a signed message the way a channel does (`channel`: the `channel` fixture's pair)."""
    found, real_secret = channel
    raw = raw if raw is not None else json.dumps(body, ensure_ascii=False).encode()
    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = hmac_sha256_hex(secret or real_secret, ts.encode() + b"." + raw)
    return client.post(f"/api/channels/{found.id}/messages", data=raw, content_type="application/json",
                       headers={"X-Channel-Timestamp": ts, "X-Channel-Signature": f"v1={signature}"})


def another_channel(tenant, name: str = "WeChat"):
    """A second channel of the tenant, as the `channel` fixture's pair (committed)."""
    found, secret = create_channel(tenant.id, name)
    db.session.commit()
    return found, secret
