"""What the fault suite's tests share: a channel's signed message posted to a web process."""
import json
import time

from core.crypto import hmac_sha256_hex


def inbound(client, channel_id, secret: str, message_id: str, customer: str = "c-1"):
    """POST one signed inbound channel message, as the channel's server does."""
    raw = json.dumps({"message_id": message_id, "text": "Where is my parcel?",
                      "customer": {"external_id": customer, "name": "Fault Customer"}}).encode()
    stamp = str(int(time.time()))
    return client.post(f"/api/channels/{channel_id}/messages", data=raw, content_type="application/json",
                       headers={"X-Channel-Timestamp": stamp,
                                "X-Channel-Signature": "v1=" + hmac_sha256_hex(secret, stamp.encode() + b"." + raw)})
