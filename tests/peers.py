"""Real HTTP peers on loopback for the tests: an HTTPS receiver with a trustme CA."""
import http.server
import ssl
import threading
import time
from dataclasses import dataclass, field

import trustme


@dataclass
class Received:
    """One request as the receiver saw it: raw body bytes included."""

    method: str
    path: str
    headers: dict
    body: bytes
    server_name: str | None


@dataclass
class HttpsReceiver:
    """A threaded HTTPS server whose answers the test scripts (status, headers, body)."""

    ca: trustme.CA
    names: tuple[str, ...] = ("receiver.test",)
    received: list[Received] = field(default_factory=list)
    answers: list[tuple] = field(default_factory=list)  # (status, headers, body[, stall seconds])
    default: tuple[int, dict, bytes] = (200, {}, b"ok")
    # (seconds between bytes, bytes sent at once first, whether to say `Connection: close`):
    # answer slowly, a byte at a time
    trickle: tuple[float, int, bool] | None = None
    trickle_over: threading.Event = field(default_factory=threading.Event)  # set once it stopped
    trickled_all: bool | None = None  # whether the client stayed for the whole trickled answer

    def start(self) -> "HttpsReceiver":
        """Listen on a free loopback port."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ca.issue_cert(*self.names).configure_cert(context)
        context.sni_callback = lambda sock, name, ctx: setattr(sock, "sni_name", name)
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.received.append(Received("POST", self.path, dict(self.headers), body,
                                                  getattr(self.connection, "sni_name", None)))
                answer = receiver.answers.pop(0) if receiver.answers else receiver.default
                status, headers, payload, *pause = answer  # an optional fourth item: seconds to stall
                if pause:
                    time.sleep(pause[0])
                if receiver.trickle:
                    self._trickle(status, payload, *receiver.trickle)
                    return
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _trickle(self, status: int, payload: bytes, pause: float, at_once: int, close: bool):
                head = b"HTTP/1.1 %d OK\r\nContent-Length: %d\r\n" % (status, len(payload))
                raw = head + (b"Connection: close\r\n" if close else b"") + b"\r\n" + payload
                receiver.trickled_all = False
                try:
                    self.wfile.write(raw[:at_once])
                    for byte in raw[at_once:]:
                        time.sleep(pause)
                        self.wfile.write(bytes([byte]))
                    receiver.trickled_all = True
                except OSError:
                    pass  # the client hung up before the end
                finally:
                    self.close_connection = True
                    receiver.trickle_over.set()

            def log_message(self, *args):
                """Quiet."""

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, name: str = "receiver.test", path: str = "/hook") -> str:
        return f"https://{name}:{self.port}{path}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
