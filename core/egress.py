"""The SSRF-safe HTTP client: the only way the product POSTs to addresses tenants choose.

Rules: HTTPS only, on port 443 (`EGRESS_PORT` in tests), no query string, fragment or credentials
in the URL; redirects are never followed. The host is resolved at every use, every IPv4 answer
must be public (hosts with no IPv4 answer, IPv6 literals and IPv4-mapped IPv6 are refused), and
the connection is made to the checked address while TLS still sends SNI for, and verifies the
certificate of, the host name. The response body is read up to a bound, and one attempt, DNS
included, never outlasts its timeout.

`EGRESS_ALLOW_CIDRS` (tests and development only) treats those ranges as public;
`EGRESS_CA_BUNDLE` verifies against another CA bundle. Both are logged when set.
"""
import contextvars
import heapq
import http.client
import ipaddress
import itertools
import os
import re
import socket
import ssl
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import cache
from urllib.parse import unquote, urlsplit

import certifi
import urllib3
from flask import current_app
from flask_babel import lazy_gettext as _l
from urllib3.connection import HTTPSConnection
from urllib3.util.ssl_ import create_urllib3_context
from urllib3.util.ssl_match_hostname import CertificateError

from core.api import ApiError
from core.db import end_reads

RESPONSE_LIMIT = 64 * 1024
URL_MAX_CHARS = 2048
SAVE_DNS_SECONDS = 5.0  # the lookup an address gets when it is saved
_DIGITS_AND_DOTS = re.compile(r"[0-9.]+")
_LABEL = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_PATH = re.compile(r"(?:/(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})*)+")
LOOKUP_THREADS = 8  # DNS lookups of one process at once (each bounded by its attempt's deadline)
# Ranges the ipaddress module does not already flag as private, reserved, loopback and the like.
EXTRA_BLOCKED = tuple(ipaddress.ip_network(net) for net in (
    "100.64.0.0/10",   # carrier-grade NAT: reaches internal workloads at many providers
    "192.0.0.0/24",    # IETF protocol assignments
    "192.88.99.0/24",  # 6to4 relay anycast
    "198.18.0.0/15",   # benchmarking
))
resolver = socket.getaddrinfo  # the system resolver; tests give DNS answers of their own here


# What each refusal of an address at save means, for the pages that save one.
ADDRESS_RULES = {
    "invalid_url": _l("Enter a full https:// address."),
    "invalid_characters": _l("Remove the spaces, line breaks and other invisible characters from the address."),
    "not_normalized": _l("Write the address in its plain form: https:// and the host in lower case, no trailing "
                         "dot or :443, an IPv4 address without leading zeros, a path without . or .. segments "
                         "and with other characters percent-encoded."),
    "https_required": _l("Use an https:// address."),
    "port_not_allowed": _l("Only the standard HTTPS port (443) is allowed."),
    "query_not_allowed": _l("Remove the query string and any #fragment."),
    "credentials_in_url": _l("Remove the user name and password from the address."),
    "ipv6_not_supported": _l("IPv6 addresses are not supported: use a host name with a public IPv4 address."),
    "dns_failed": _l("The host name does not resolve."),
    "timeout": _l("The host name did not resolve in time."),
    "no_ipv4_address": _l("The host has no IPv4 address."),
    "address_not_public": _l("The host resolves to an internal or otherwise non-public address."),
}


def address_refusal(reason: str | None) -> str:
    """What a refused address's rule means, in the page's language."""
    return str(ADDRESS_RULES.get(reason or "", ADDRESS_RULES["invalid_url"]))


class EgressRefused(Exception):
    """The address may not be called; `reason` says why (never the response of a peer)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class EgressFailed(Exception):
    """The call was allowed but did not complete (connection, TLS, timeout, oversized answer)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Target:
    """A checked URL: the host name for TLS and Host, the port and the request path."""

    host: str
    port: int
    path: str


@dataclass(frozen=True)
class Response:
    """What the peer answered: status, the first bytes of the body and the elapsed seconds."""

    status: int
    body: bytes
    elapsed: float


def check_url(url: str) -> Target:
    """Parse and check an outbound address, the one parser for every one (record-action bindings,
    channel endpoints, Open API webhook URLs; at save and at every use); raises EgressRefused.

    No whitespace, control character or NUL anywhere, and the normal form: lower-case `https` and
    host (an international name as written, sent in its ASCII form), no trailing dot, no written
    default port, a dotted IPv4 address without leading zeros, an ASCII path without dot segments."""
    if not url:
        raise EgressRefused("invalid_url")
    if not all(character.isprintable() and not character.isspace() for character in url):
        raise EgressRefused("invalid_characters")
    try:
        parts = urlsplit(url)
        port = 443 if parts.port is None else parts.port  # an explicit :0 is a port, not "default"
    except ValueError:
        raise EgressRefused("invalid_url") from None
    if parts.scheme.lower() != "https":
        raise EgressRefused("https_required")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise EgressRefused("credentials_in_url")
    if "?" in url or "#" in url:
        raise EgressRefused("query_not_allowed")
    if port != current_app.config["EGRESS_PORT"]:
        raise EgressRefused("port_not_allowed")
    if "[" in parts.netloc:
        raise EgressRefused("ipv6_not_supported")
    written_host, colon, written_port = parts.netloc.partition(":")
    try:  # certificates name the ASCII (IDNA) form of a host
        host = written_host.encode("idna").decode("ascii")
        shown = host.encode("ascii").decode("idna")  # refuses a broken xn-- label
        normal_name = written_host == written_host.lower() and written_host in (host, shown)
    except UnicodeError:
        raise EgressRefused("invalid_url") from None
    if not host:
        raise EgressRefused("invalid_url")
    normal_port = not colon or (written_port == str(port) and port != 443)
    if not (url.startswith("https://") and normal_port and normal_name and _normal_host(host)
            and _normal_path(parts.path)):
        raise EgressRefused("not_normalized")
    return Target(host=host, port=port, path=parts.path or "/")


def _normal_host(host: str) -> bool:
    """A dotted-quad IPv4 address as Python writes it, or a lower-case DNS name whose last label
    starts with a letter (so no resolver reads it as a number: `0x7f.1`, `2130706433`)."""
    if _DIGITS_AND_DOTS.fullmatch(host):
        try:
            return str(ipaddress.IPv4Address(host)) == host
        except ValueError:
            return False
    labels = host.split(".")
    return all(_LABEL.fullmatch(label) for label in labels) and labels[-1][0].isalpha() and len(host) <= 253


def _normal_path(path: str) -> bool:
    """Empty (sent as `/`) or `/`-separated segments of RFC 3986 path characters and well-formed
    percent escapes, none of them `.` or `..` (escaped or not)."""
    segments = {unquote(segment) for segment in path.split("/")}
    return (not path or _PATH.fullmatch(path) is not None) and not {".", ".."} & segments


def _allowed_extra() -> list:
    """Test and development ranges treated as public (EGRESS_ALLOW_CIDRS)."""
    text = current_app.config.get("EGRESS_ALLOW_CIDRS") or ""
    return [ipaddress.ip_network(item.strip()) for item in text.split(",") if item.strip()]


def is_public(address: ipaddress.IPv4Address) -> bool:
    """A globally routable unicast IPv4 address (or one the test knobs allow)."""
    if any(address in net for net in _allowed_extra()):
        return True
    return address.is_global and not address.is_multicast and not any(address in net for net in EXTRA_BLOCKED)


def resolve(target: Target) -> str:
    """The address to connect to: every IPv4 answer must be public; raises EgressRefused."""
    try:
        answers = resolver(target.host, target.port, socket.AF_INET, socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise EgressRefused("dns_failed") from None
    addresses = [ipaddress.ip_address(answer[4][0]) for answer in answers]
    if not addresses:
        raise EgressRefused("no_ipv4_address")
    if not all(address.version == 4 and is_public(address) for address in addresses):
        raise EgressRefused("address_not_public")
    return str(addresses[0])


_per_process: dict = {}  # os.getpid() -> this process's lookup threads (a forked child makes its own)


def _lookups() -> ThreadPoolExecutor:
    """The process's DNS lookup threads, started on first use."""
    pool = _per_process.get(os.getpid())
    if pool is None:
        _per_process.clear()
        pool = _per_process[os.getpid()] = ThreadPoolExecutor(LOOKUP_THREADS, thread_name_prefix="egress-dns")
    return pool


def _resolve_by(target: Target, deadline: float) -> str:
    """`resolve`, given up at the deadline: a system resolver may retry for longer than an attempt
    (a lookup still running then ends on its own; nobody waits for it)."""
    answer = _lookups().submit(contextvars.copy_context().run, resolve, target)  # with the app's config
    try:
        return answer.result(timeout=max(0.0, deadline - time.monotonic()))
    except FutureTimeout:
        raise EgressFailed("timeout") from None


def check_endpoint(url: str, timeout: float = SAVE_DNS_SECONDS) -> Target:
    """Check an address an administrator saves: its shape, and that its host resolves, within
    `timeout`, to public IPv4 addresses only (`post` checks both again at every use)."""
    target = check_url(url)
    _resolve_by(target, time.monotonic() + timeout)
    return target


def address_to_save(url: object, code: str, *, resolve: bool = True) -> Target:
    """An outbound address a tenant saves, checked as `check_endpoint` (or its shape alone, when
    `resolve` is off: the operator's CLI); else 400 `code` naming the refused rule in `detail`.
    The read-only transaction is ended before the DNS lookup, so nothing is held while it waits."""
    if not isinstance(url, str) or not url or len(url) > URL_MAX_CHARS:
        raise ApiError(code, 400, detail="invalid_url")
    try:
        if not resolve:
            return check_url(url)
        end_reads()
        return check_endpoint(url)
    except (EgressRefused, EgressFailed) as refused:
        raise ApiError(code, 400, detail=refused.reason) from None


@cache
def tls_context(bundle: str) -> ssl.SSLContext:
    """One verifying client context per CA bundle, shared by every connection of the process:
    loading certifi's bundle costs about 15 ms of CPU. The host name is matched by urllib3
    (`assert_hostname`), so the context itself does not check it."""
    context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
    context.check_hostname = False
    context.load_verify_locations(cafile=bundle)
    return context


def ca_bundle() -> str:
    """The CA bundle outbound TLS verifies against (EGRESS_CA_BUNDLE in tests, else certifi's)."""
    return current_app.config.get("EGRESS_CA_BUNDLE") or certifi.where()


def _connection(target: Target, address: str, timeout: float) -> HTTPSConnection:
    """A connection to the checked address that verifies TLS for the host name (never reused)."""
    return HTTPSConnection(
        address, port=target.port, server_hostname=target.host, assert_hostname=target.host,
        cert_reqs="CERT_REQUIRED", ssl_context=tls_context(ca_bundle()), timeout=timeout)


class _Alarm:
    """`threading.Timer`'s start and cancel on one watchdog thread per process, which rings each
    alarm at its deadline, instead of a thread per attempt. Cancelled alarms are dropped whenever
    they reach the front, so the thread wakes only for a deadline that may still ring. A process
    forked after it started (none is, here) starts its own."""

    _due: list = []  # heap of (deadline, sequence, alarm)
    _changed = threading.Condition()
    _sequence = itertools.count()
    _pid: int | None = None

    def __init__(self, seconds: float, ring):
        self.deadline, self.ring, self.cancelled = time.monotonic() + seconds, ring, False

    def start(self) -> None:
        """Ring at the deadline unless cancelled before."""
        with self._changed:
            if _Alarm._pid != os.getpid():
                _Alarm._pid, _Alarm._due = os.getpid(), []
                threading.Thread(target=_Alarm._watch, name="egress-watchdog", daemon=True).start()
            heapq.heappush(_Alarm._due, (self.deadline, next(self._sequence), self))
            if _Alarm._due[0][2] is self:  # the new earliest deadline: the thread must wake sooner
                self._changed.notify()

    def cancel(self) -> None:
        """Never ring (a ring already under way finishes, like a Timer's)."""
        self.cancelled, self.ring = True, None

    @classmethod
    def _next(cls) -> "_Alarm":
        """Wait for the next alarm that is due and not cancelled, and take it off the heap."""
        with cls._changed:
            while True:
                while cls._due and cls._due[0][2].cancelled:
                    heapq.heappop(cls._due)
                if cls._due and cls._due[0][0] <= time.monotonic():
                    return heapq.heappop(cls._due)[2]
                cls._changed.wait(cls._due[0][0] - time.monotonic() if cls._due else None)

    @classmethod
    def _watch(cls) -> None:
        while True:
            alarm = cls._next()
            ring = alarm.ring
            if ring is not None:
                ring()


class _Watchdog:
    """Ends an attempt at its deadline by shutting its socket down, so no read or write outlasts it."""

    def __init__(self, connection: HTTPSConnection, seconds: float):
        self.connection = connection
        self.socket = None  # kept once connected: on `Connection: close` http.client drops its own
        self.fired = threading.Event()
        self.timer = _Alarm(seconds, self._cut)

    def _cut(self) -> None:
        self.fired.set()
        for sock in (self.socket, self.connection.sock):  # the latter is the plain socket mid-handshake
            if sock is not None:
                try:  # the plain socket's shutdown, which also ends a TLS read on the same descriptor
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed


def post(url: str, body: bytes, headers: dict[str, str], timeout: float = 10.0,
         limit: int = RESPONSE_LIMIT) -> Response:
    """POST `body` to a checked, freshly resolved, pinned address; redirects are not followed.

    The whole attempt, from the DNS lookup to the last byte read, ends within `timeout` seconds,
    however slowly the peer trickles its answer: the TCP connect has the time that is left as its
    timeout, and a watchdog shuts the socket down at the deadline.
    """
    started = time.monotonic()
    deadline = started + timeout
    target = check_url(url)
    address = _resolve_by(target, deadline)
    host = target.host if target.port == 443 else f"{target.host}:{target.port}"
    connection = _connection(target, address, max(0.001, deadline - time.monotonic()))
    watchdog = _Watchdog(connection, max(0.0, deadline - time.monotonic()))
    watchdog.timer.start()
    try:
        connection.connect()
        watchdog.socket = connection.sock
        connection.request("POST", target.path, body=body, headers={**headers, "Host": host},
                           preload_content=False)
        answer = connection.getresponse()
        data = _read_bounded(answer, limit)
    except (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, CertificateError) as error:
        raise EgressFailed("timeout" if watchdog.fired.is_set() else _failure_reason(error)) from None
    finally:
        watchdog.timer.cancel()
        connection.close()
        if watchdog.socket is not None:
            watchdog.socket.close()  # on `Connection: close` the answer holds it, not the connection
    if watchdog.fired.is_set():  # cut short: what was read is not the whole answer
        raise EgressFailed("timeout")
    if len(data) > limit:
        raise EgressFailed("response_too_large")
    return Response(status=answer.status, body=data, elapsed=time.monotonic() - started)


def _read_bounded(answer, limit: int) -> bytes:
    """The body up to `limit` + 1 bytes, in chunks (the watchdog bounds the time)."""
    chunks, size = [], 0
    while size <= limit:
        chunk = answer.read(min(8192, limit + 1 - size), decode_content=False)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def _failure_reason(error: Exception) -> str:
    """A short, secret-free name for a transport failure."""
    if isinstance(error, (urllib3.exceptions.TimeoutError, TimeoutError)):
        return "timeout"
    if isinstance(error, (urllib3.exceptions.SSLError, ssl.SSLError, CertificateError)):
        return "tls_error"
    return "connection_failed"
