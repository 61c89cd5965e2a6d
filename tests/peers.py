"""Real peers on loopback for the tests: an HTTPS receiver with a trustme CA, an OpenAI-compatible
model server, and a TCP forwarder standing for the network to Redis."""
import http.server
import json
import socket
import ssl
import threading
import time
from urllib.parse import parse_qs, urlsplit
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
    client_port: int | None = None  # the sending side's TCP port: one per connection


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
    keep_alive: bool = False  # answer as HTTP/1.1, offering to keep the connection open
    in_flight: int = 0  # requests being answered right now
    most_in_flight: int = 0  # the most ever answered at once
    counting: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> "HttpsReceiver":
        """Listen on a free loopback port."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ca.issue_cert(*self.names).configure_cert(context)
        context.sni_callback = lambda sock, name, ctx: setattr(sock, "sni_name", name)
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            @property
            def protocol_version(self):
                return "HTTP/1.1" if receiver.keep_alive else "HTTP/1.0"

            def do_POST(self):  # noqa: N802 (http.server's naming)
                with receiver.counting:
                    receiver.in_flight += 1
                    receiver.most_in_flight = max(receiver.most_in_flight, receiver.in_flight)
                try:
                    self._answer()
                finally:
                    with receiver.counting:
                        receiver.in_flight -= 1

            def _answer(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.received.append(Received("POST", self.path, dict(self.headers), body,
                                                  getattr(self.connection, "sni_name", None),
                                                  self.client_address[1]))
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


COMPLETIONS_PATH = "/v1/chat/completions"
DEFAULT_CONTENT = {"answer": "default"}  # what the model server says when nothing is scripted
FORMAT_REFUSAL = {"error": {"message": "response_format json_schema not supported"}}


@dataclass
class ModelRequest:
    """One request as the model server saw it: its JSON body parsed (None when it was not JSON)."""

    path: str
    headers: dict
    body: dict | None


@dataclass
class ModelReply:
    """One scripted answer: status, raw body, extra headers and seconds to wait before answering."""

    status: int
    body: bytes
    headers: dict = field(default_factory=dict)
    delay: float = 0.0


def completion(content: str, input_tokens: int = 12, output_tokens: int = 8) -> dict:
    """A chat completion document whose assistant message is `content`, with that usage."""
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
        "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
                  "total_tokens": input_tokens + output_tokens},
    }


def _json_bytes(document) -> bytes:
    """A JSON document as the body of an answer."""
    return json.dumps(document).encode()


def _parsed(raw: bytes) -> dict | None:
    """A request body as JSON, None when it is not a JSON object."""
    try:
        body = json.loads(raw)
    except ValueError:
        return None
    return body if isinstance(body, dict) else None


def _asks_json_schema(body: dict | None) -> bool:
    """Whether a request asks for the json_schema response format."""
    response_format = (body or {}).get("response_format")
    return isinstance(response_format, dict) and response_format.get("type") == "json_schema"


@dataclass
class ModelServer:
    """A threaded OpenAI-compatible server on plain HTTP loopback: `POST /v1/chat/completions`.

    It records every request in `received` and answers from the scripted queue `answers`, first
    in first out, then with DEFAULT_CONTENT. With `refuses_json_schema`, a request asking for the
    json_schema response format gets 400 FORMAT_REFUSAL (without using the queue), as servers
    that support only json_object do. Other paths are 404.
    """

    received: list[ModelRequest] = field(default_factory=list)
    answers: list[ModelReply] = field(default_factory=list)
    refuses_json_schema: bool = False
    stopping: threading.Event = field(default_factory=threading.Event)

    def answer_json(self, content: dict, input_tokens: int = 12, output_tokens: int = 8,
                    delay: float = 0.0) -> None:
        """Script an answer whose message content is `json.dumps(content)`."""
        self.answer_content(json.dumps(content), input_tokens, output_tokens, delay)

    def answer_content(self, text: str, input_tokens: int = 12, output_tokens: int = 8,
                       delay: float = 0.0) -> None:
        """Script an answer whose message content is `text` as is (invalid JSON, fenced, ...)."""
        self.answer_body(completion(text, input_tokens, output_tokens), delay=delay)

    def answer_body(self, body: bytes | dict | list, status: int = 200, headers: dict | None = None,
                    delay: float = 0.0) -> None:
        """Script a whole answer: a JSON document (dict or list) or raw bytes as the body."""
        raw = body if isinstance(body, bytes) else _json_bytes(body)
        self.answers.append(ModelReply(status, raw, headers or {}, delay))

    def answer_status(self, status: int, body: dict | None = None, headers: dict | None = None,
                      delay: float = 0.0) -> None:
        """Script an error answer: `status` with `body` (default an OpenAI-style error)."""
        error = body if body is not None else {"error": {"message": f"scripted HTTP {status}"}}
        self.answer_body(error, status, headers, delay)

    def _reply_to(self, path: str, body: dict | None) -> ModelReply:
        """The answer a request gets."""
        if path != COMPLETIONS_PATH:
            return ModelReply(404, _json_bytes({"error": {"message": "not found"}}))
        if self.refuses_json_schema and _asks_json_schema(body):
            return ModelReply(400, _json_bytes(FORMAT_REFUSAL))
        if self.answers:
            return self.answers.pop(0)
        return ModelReply(200, _json_bytes(completion(json.dumps(DEFAULT_CONTENT))))

    def start(self) -> "ModelServer":
        """Listen on a free loopback port."""
        peer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = _parsed(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                peer.received.append(ModelRequest(self.path, dict(self.headers), body))
                reply = peer._reply_to(self.path, body)
                if reply.delay and peer.stopping.wait(reply.delay):
                    return  # the server stops: nobody waits for this answer any more
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except OSError:
                    pass  # the client hung up (it timed out, or read only as much as it wanted)

            def log_message(self, *args):
                """Quiet."""

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # A short poll interval: stop() waits for the next poll, and every test stops its server.
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                       daemon=True)
        self.thread.start()
        return self

    @property
    def url(self) -> str:
        """The base URL to configure as MODEL_BASE_URL."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def stop(self) -> None:
        """Stop serving; delayed answers still waiting are dropped."""
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()


class Forwarder:
    """A TCP port on loopback that forwards every connection to a Redis (TCP or unix socket URL),
    until `cut()` drops every connection and refuses new ones; `mend()` forwards again. It stands
    for the network between one process and Redis."""

    def __init__(self, redis_url: str):
        parts = urlsplit(redis_url)
        self.target = (socket.AF_UNIX, parts.path) if parts.scheme == "unix" else \
            (socket.AF_INET, (parts.hostname, parts.port or 6379))
        self.db = (parse_qs(parts.query).get("db") or ["0"])[0] if parts.scheme == "unix" else \
            (parts.path.strip("/") or "0")
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.open, self.sockets, self.lock = True, [], threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        """The Redis URL that goes through this forwarder."""
        return f"redis://127.0.0.1:{self.port}/{self.db}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if not self.open:
                client.close()
                continue
            upstream = socket.socket(self.target[0], socket.SOCK_STREAM)
            upstream.connect(self.target[1])
            with self.lock:
                self.sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for each in (source, sink):
            try:
                each.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Drop every forwarded connection and refuse new ones (they are closed at once)."""
        self.open = False
        with self.lock:
            for each in self.sockets:
                try:
                    each.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self.sockets = []

    def mend(self) -> None:
        """Forward new connections again."""
        self.open = True

    def close(self) -> None:
        self.cut()
        self.listener.close()
