"""Broken chunked framing on every API answers 400 with the API's own code, never 500."""
import socket
from urllib.parse import urlsplit

import pytest

from core.db import db
from desk.channels import create_channel
from openapi.apps import CONFIRMED_SCOPES, SCOPES, create_app
from tests.conftest import login

BROKEN = {
    "bad chunk size": b"zz\r\n{}\r\n0\r\n\r\n",
    "bad chunk terminator": b"2\r\n{}XX0\r\n\r\n",
    "ends inside a chunk": b"10\r\n{}",
}


def _post_chunked(base: str, path: str, body: bytes, headers: dict) -> tuple[int, bytes]:
    """Send a chunked POST whose framing is `body` as is; the status and the answer's body."""
    address = urlsplit(base)
    lines = [f"POST {path} HTTP/1.1", f"Host: {address.netloc}", "Content-Type: application/json",
             "Transfer-Encoding: chunked", "Connection: close", *(f"{k}: {v}" for k, v in headers.items())]
    with socket.create_connection((address.hostname, address.port), timeout=30) as conn:
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        conn.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := conn.recv(4096):
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, answer.partition(b"\r\n\r\n")[2]


@pytest.fixture
def endpoints(gunicorn, tenant, admin, client):
    """(path, headers, expected code) of each API, authenticated where it must be."""
    channel, _ = create_channel(tenant.id, "Chat")
    token = create_app(tenant.id, admin.user_id, "Partner", list(SCOPES), None, processing_confirmed=True,
                       confirmed_scopes=CONFIRMED_SCOPES).token
    db.session.commit()
    login(client, admin.user.email)
    cookie = client.get_cookie("session").value
    return {
        "inbound": (f"/api/channels/{channel.id}/messages", {}, "invalid_json"),
        "open api": ("/api/v1/open/records", {"Authorization": f"Bearer {token}",
                                              "Idempotency-Key": "6a0c1a5e-1b7e-4a3b-9a3e-2b1c3d4e5f60"},
                     "invalid_record"),
        "console": ("/api/extensions/", {"Cookie": f"session={cookie}", "Origin": gunicorn}, "invalid_json"),
    }


@pytest.mark.parametrize("framing", BROKEN)
def test_broken_chunked_framing_is_a_400_on_every_api(gunicorn, endpoints, framing):
    for name, (path, headers, code) in endpoints.items():
        status, body = _post_chunked(gunicorn, path, BROKEN[framing], headers)
        assert (name, status) == (name, 400)
        assert f'"code":"{code}"'.encode() in body.replace(b" ", b"")


def test_broken_chunked_framing_is_a_400_on_the_development_server(live_server, endpoints):
    path, headers, code = endpoints["open api"]
    status, body = _post_chunked(live_server, path, BROKEN["bad chunk size"], headers)
    assert status == 400 and f'"code":"{code}"'.encode() in body.replace(b" ", b"")
