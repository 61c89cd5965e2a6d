"""Prometheus metrics: what every process counts, and `/metrics` on the web process.

Every process writes its counters to one multiprocess directory (PROMETHEUS_MULTIPROC_DIR, which
`make run` sets for all of them) and the web process reads them all on a scrape, adding the
readings taken at scrape time (queue depths, the scheduler's tick age). Without that directory (a
single process: tests, `flask run`) the process's own values are served. Labels only ever hold
bounded names — blueprints, route patterns, queue names, outcomes — never a tenant, a person, a
token or anything submitted (docs/operations.md lists every metric).
"""
import hmac
import ipaddress
import os
import time
from collections.abc import Callable, Iterable

from flask import Blueprint, Flask, Response, current_app, g, request
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from rq import Queue

from core.api import ApiError
from core.queue_names import ALL_QUEUES
from core.redis import get_redis

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
# app.extensions key: functions answering metric families read at scrape time, handed over by the
# layers that own what they read (the rules' scheduler) at wiring time.
READINGS = "core.metrics.readings"
METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"}

REGISTRY = CollectorRegistry()  # this process's own values (served when there is no directory)
HTTP_REQUESTS = Counter("http_requests_total", "HTTP requests answered, by blueprint, route pattern, method and "
                        "status class.", ["blueprint", "route", "method", "status"], registry=REGISTRY)
HTTP_SECONDS = Histogram("http_request_duration_seconds", "Time to answer an HTTP request, by blueprint and route "
                         "pattern.", ["blueprint", "route"], registry=REGISTRY)
JOBS = Counter("rq_jobs_total", "RQ jobs by queue and event (started, finished, failed; abandoned: its worker "
               "died with it started).", ["queue", "event"], registry=REGISTRY)
DELIVERIES = Counter("deliveries_total", "Attempts of signed deliveries by outbox (webhook, reply), "
                     "outcome (delivered, retry, failed) and attempt number.", ["outbox", "outcome", "attempt"],
                     registry=REGISTRY)
SCRIPT_RUNS = Counter("script_runs_total", "Restricted script runs by outcome (ok, timeout, memory, "
                      "invalid_output, error, busy).", ["outcome"], registry=REGISTRY)
SCRIPT_SECONDS = Histogram("script_run_duration_seconds", "Time from handing a script to the runner to its answer.",
                           registry=REGISTRY)
GENERATIONS = Counter("generations_total", "AI generations by kind and outcome.", ["kind", "outcome"],
                      registry=REGISTRY)
GENERATION_TOKENS = Counter("generation_tokens_total", "Model tokens used by generations, by kind.", ["kind"],
                            registry=REGISTRY)
RULE_RUNS = Counter("rule_runs_total", "Automation rule runs by trigger (manual, scheduled, message_event) and the "
                    "status they reached.", ["trigger", "status"], registry=REGISTRY)
RULE_COMMANDS = Counter("rule_commands_total", "Assignment commands by the receipt state they reached.", ["state"],
                        registry=REGISTRY)
INBOUND_MESSAGES = Counter("inbound_messages_total", "Channel messages by outcome (accepted, replayed, refused).",
                           ["outcome"], registry=REGISTRY)
UNAVAILABLE = Counter("unavailable_answers_total", "Answers 503 because a store was out of reach, restarting or "
                      "refusing writes, by store (database, redis).", ["store"], registry=REGISTRY)
LOGINS = Counter("login_attempts_total", "Refused console logins: failed (wrong e-mail or password) or throttled.",
                 ["outcome"], registry=REGISTRY)
SERVICE_LEVEL_BREACHES = Counter("service_level_breaches_total", "Service-level targets breached, by target kind "
                                 "(first_response, next_response, resolution).", ["kind"], registry=REGISTRY)
TIMERS_ENDED = Counter("service_level_timers_ended_total", "Service-level timers ended by a reply or by "
                      "resolving, by target kind and outcome (met, breached, closed).", ["kind", "outcome"],
                      registry=REGISTRY)

bp = Blueprint("metrics", __name__)


def status_class(code: int) -> str:
    """2xx, 3xx, 4xx or 5xx."""
    return f"{code // 100}xx"


def _allowed() -> bool:
    """The scrape carries the metrics token, or every address it came through is in an allowed
    range: the TCP peer itself and, behind TRUSTED_PROXIES, the client the proxies name. A client
    that reaches the app port directly cannot borrow an allowed address by forging X-Forwarded-For,
    and a public client cannot borrow the proxy's by scraping through it."""
    token = current_app.config["METRICS_TOKEN"]
    given = request.headers.get("Authorization", "")
    if token and hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        return True
    peer = request.environ.get("werkzeug.proxy_fix.orig", {}).get("REMOTE_ADDR", request.remote_addr)
    try:
        addresses = {ipaddress.ip_address(text or "") for text in (peer, request.remote_addr)}
    except ValueError:
        return False
    allowed = current_app.config["METRICS_ALLOW_CIDRS"]
    return all(any(address in network for network in allowed) for address in addresses)


def queue_depths() -> Iterable[Metric]:
    """How many jobs wait in each queue."""
    family = GaugeMetricFamily("rq_queue_depth", "Jobs waiting in each RQ queue.", labels=["queue"])
    for name in ALL_QUEUES:
        family.add_metric([name], Queue(name, connection=get_redis()).count)
    yield family


class _Readings:
    """A collector of the readings taken at scrape time."""

    def __init__(self, readers: list[Callable[[], Iterable[Metric]]]):
        self.readers = readers

    def collect(self):
        """Every reader's families."""
        for reader in self.readers:
            yield from reader()


class _Own:
    """This process's own values (no multiprocess directory)."""

    def collect(self):
        """What REGISTRY holds."""
        yield from REGISTRY.collect()


@bp.get("/metrics")
def metrics():
    """The Prometheus exposition of every process's counters and the scrape-time readings."""
    if not _allowed():
        raise ApiError("forbidden", 403)
    registry = CollectorRegistry()
    if os.environ.get(MULTIPROCESS_DIR):
        MultiProcessCollector(registry)
    else:
        registry.register(_Own())
    registry.register(_Readings([queue_depths, *current_app.extensions[READINGS]]))
    return Response(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)


def init_metrics(app: Flask) -> None:
    """Time and count every request by blueprint, route pattern and status class; `/metrics`."""
    app.extensions.setdefault(READINGS, [])

    @app.before_request
    def start_clock():
        g.metrics_started = time.perf_counter()

    @app.after_request
    def count_request(response):
        if app.config["METRICS_ENABLED"]:
            blueprint = request.blueprint or "-"
            route = request.url_rule.rule if request.url_rule else "unmatched"
            method = request.method if request.method in METHODS else "other"
            HTTP_REQUESTS.labels(blueprint, route, method, status_class(response.status_code)).inc()
            if "metrics_started" in g:  # a hook before ours may have answered first
                HTTP_SECONDS.labels(blueprint, route).observe(time.perf_counter() - g.metrics_started)
        return response

    app.register_blueprint(bp)
