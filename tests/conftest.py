"""Fixture chain: services → app → clean state per test → clients logged in through the form, and the
fixtures tests in several folders stand on (console APIs, a channel, rules, switches, the estate). Their
helpers live in tests/support; those imported here import nothing from this module."""
import contextvars
import math
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest
import redis
import trustme
from flask.testing import FlaskClient
from flask_migrate import upgrade
from rq import Queue
from sqlalchemy import text
from werkzeug.serving import make_server

from app import create_app, init_migrations
from core import egress
from core.config import PROJECT_ROOT
from core.db import db
from desk.channels import create_channel
from desk.models import Channel, Conversation, Customer, Member, Message, Tenant
from desk.tenancy import add_member, create_tenant
from core.queue_names import SCRIPTS
from openapi.apps import CONFIRMED_SCOPES, create_app as create_open_app
from tests.peers import HttpsReceiver
from tests.support.actions import action_definition
from tests.support.openapi import ALL_SCOPES, OpenClient
from tests.support.rules import CONTINUOUS_SWITCHES, READ_ONLY, SINGLE_RUN_SWITCHES, RulesApi, weekly_rule
from tests.support.studio import ConsoleApi

PASSWORD = "correct-horse-battery"
FLASK = [sys.executable, "-m", "flask", "--app", "app"]  # run with cwd=PROJECT_ROOT, env=process_env()
RUNNER = [sys.executable, "-m", "jobs.runner"]  # the script runner, without the app
CLOCK = [sys.executable, "-m", "jobs.clock"]  # the tick and delayed jobs, without the app
# The real-model smoke test runs only against a model server named in the environment (README).
collect_ignore = [] if os.environ.get("MODEL_BASE_URL") and os.environ.get("MODEL_NAME") else ["smoke"]
CSRF_RE = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


@pytest.fixture(scope="session")
def database_url(tmp_path_factory) -> str:
    """TEST_DATABASE_URL (PostgreSQL in CI) or a temporary SQLite file."""
    return os.environ.get("TEST_DATABASE_URL") or \
        f"sqlite:///{tmp_path_factory.mktemp('db') / 'test.db'}"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory) -> str:
    """TEST_REDIS_URL (a dedicated db index in CI) or an embedded Redis for this session."""
    if os.environ.get("TEST_REDIS_URL"):
        yield os.environ["TEST_REDIS_URL"]
        return
    from core.embedded_redis import start_embedded, stop_embedded

    yield start_embedded(tmp_path_factory.mktemp("redis") / "redis.db")
    stop_embedded()


@pytest.fixture(scope="session")
def app_config(database_url, redis_url) -> dict:
    """The overrides every test app is built with."""
    return {
        "TESTING": True,
        "SQLALCHEMY_DATABASE_URI": database_url,
        "REDIS_URL": redis_url,
        "SECRET_KEY": "test-secret-key",
        "ENCRYPTION_KEY": "0Yk9e4kWl3k5hmtWdZ7QbN1qk0H7mDq0Yb0s2yRr4mE=",
        "PASSWORD_HASH_METHOD": "pbkdf2:sha256:1000",
        # No model unless a test brings its peer (the smoke test reads the environment's itself).
        "MODEL_BASE_URL": None, "MODEL_NAME": None, "MODEL_API_KEY": None,
    }


class IsolatedClient(FlaskClient):
    """A test client whose requests get their own app context, `g` and database session.

    Tests keep an app context pushed for their own queries; without this, Flask would reuse
    it for requests, sharing `g` and the session between the test and the app. It reads the pages
    in English, as a browser saying so would (tests/test_i18n.py reads them in both languages).
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.environ_base["HTTP_ACCEPT_LANGUAGE"] = "en"

    def open(self, *args, **kwargs):
        return contextvars.Context().run(super().open, *args, **kwargs)


def build_app(config: dict):
    """create_app with the isolating test client."""
    application = create_app(config)
    application.test_client_class = IsolatedClient
    return application


@pytest.fixture(scope="session")
def app(app_config):
    """One app for the session, its schema built by the migrations from empty."""
    application = build_app(app_config)
    init_migrations(application)
    with application.app_context():
        db.drop_all()
        db.session.execute(text("DROP TABLE IF EXISTS alembic_version"))
        db.session.commit()
        upgrade()
    return application


@pytest.fixture(autouse=True)
def _clean(request, app_config):
    """Every test starts with empty tables and an empty Redis db."""
    if "app" not in request.fixturenames:
        yield
        return
    application = request.getfixturevalue("app")
    redis.Redis.from_url(app_config["REDIS_URL"]).flushdb()
    with application.app_context():
        yield
        db.session.rollback()
        for table in reversed(db.metadata.sorted_tables):
            db.session.execute(table.delete())
        db.session.commit()
        db.session.remove()


@pytest.fixture
def redis_conn(app_config) -> redis.Redis:
    """A client of the test Redis."""
    return redis.Redis.from_url(app_config["REDIS_URL"])


def seat(tenant: Tenant, role: str, email: str | None = None) -> Member:
    """Add and commit a member with the shared test password."""
    member = add_member(tenant.id, email or f"{role}-{uuid.uuid4().hex[:8]}@test.example",
                        PASSWORD, role, f"{role.title()} Person")
    db.session.commit()
    return member


def customer_conversation(tenant: Tenant, text: str = "hello", **customer) -> Conversation:
    """A new customer (`customer`: name and any profile fields) with one conversation holding one
    inbound message; committed."""
    found = Customer(tenant_id=tenant.id, **customer)
    db.session.add(found)
    db.session.flush()
    conversation = Conversation(tenant_id=tenant.id, customer_id=found.id)
    db.session.add(conversation)
    db.session.flush()
    db.session.add(Message(tenant_id=tenant.id, conversation_id=conversation.id, direction="inbound", text=text))
    db.session.commit()
    return conversation


@pytest.fixture
def tenant(app) -> Tenant:
    """The tenant most tests work in."""
    found = create_tenant("Acme", "professional")
    db.session.commit()
    return found


@pytest.fixture
def other_tenant(app) -> Tenant:
    """A second tenant for isolation tests."""
    found = create_tenant("Other Co")
    db.session.commit()
    return found


@pytest.fixture
def admin(tenant) -> Member:
    """An administrator of `tenant`."""
    return seat(tenant, "admin")


@pytest.fixture
def agent(tenant) -> Member:
    """An agent of `tenant`."""
    return seat(tenant, "agent")


def csrf_from(html: str) -> str:
    """The CSRF token of the first form in a page."""
    return CSRF_RE.search(html).group(1)


def login(client, email: str, password: str = PASSWORD):
    """Log in through the real form (GET for the token, then POST)."""
    token = csrf_from(client.get("/login").get_data(as_text=True))
    return client.post("/login", data={"email": email, "password": password, "csrf_token": token})


@pytest.fixture
def client(app):
    """An anonymous browser."""
    return app.test_client()


@pytest.fixture
def admin_client(app, admin):
    """A browser logged in as the tenant administrator."""
    browser = app.test_client()
    assert login(browser, admin.user.email).status_code == 302
    return browser


@pytest.fixture
def agent_client(app, agent):
    """A browser logged in as an agent."""
    browser = app.test_client()
    assert login(browser, agent.user.email).status_code == 302
    return browser


@pytest.fixture
def api(admin_client) -> ConsoleApi:
    """The tenant administrator on the Studio console API."""
    return ConsoleApi(admin_client)


@pytest.fixture
def draft_app(api) -> str:
    """A Studio application with an unsimulated version 1."""
    return api.create()


@pytest.fixture
def acting(api) -> str:
    """A live Studio application whose version 1 has an http and a campaign action."""
    app_id = api.create(action_definition())
    assert api.simulate(app_id).status_code == 200
    assert api.publish(app_id).status_code == 200
    return app_id


@pytest.fixture
def rules(admin_client) -> RulesApi:
    """The administrator's browser speaking the automation rules API."""
    return RulesApi(admin_client)


@pytest.fixture
def make_open_app(app, tenant, admin):
    """Create an Open API application (scopes, optional URL) and return (model, client, credentials)."""
    def make(scopes=ALL_SCOPES, webhook_url=None, tenant_id=None, name="Partner CRM"):
        made = create_open_app(tenant_id or tenant.id, admin.user_id, name, scopes, webhook_url,
                               processing_confirmed=True, confirmed_scopes=CONFIRMED_SCOPES)
        db.session.commit()
        return made.app, OpenClient(app.test_client(), made.token), made
    return make


@pytest.fixture
def hooked(make_open_app, receiver):
    """An Open API application whose events go to the receiver at https://localhost:<port>/hook;
    (model, client, signing secret)."""
    found, client, made = make_open_app(["app.records.write"], webhook_url=receiver.url("localhost"))
    return found, client, made.signing_secret


@pytest.fixture
def channel(tenant) -> tuple[Channel, str]:
    """A channel of the tenant with its plain signing secret."""
    found, secret = create_channel(tenant.id, "Website chat")
    db.session.commit()
    return found, secret


@pytest.fixture
def chat_channel(channel) -> Channel:
    """The `channel` alone, for tests that never sign a message as it."""
    return channel[0]


@pytest.fixture
def target(tenant) -> Member:
    """An agent the automation rules' tests assign conversations to."""
    return seat(tenant, "agent")


@pytest.fixture
def published(rules, target) -> str:
    """A weekly rule rotating to `target`, published read-only; its id."""
    rule_id = rules.create(weekly_rule(target))
    assert rules.publish(rule_id, READ_ONLY).status_code == 200
    return rule_id


@pytest.fixture
def single_run_switches(app, monkeypatch):
    """Planning, single-run execution and atomic assignment on."""
    for name in SINGLE_RUN_SWITCHES:
        monkeypatch.setitem(app.config, name, True)


@pytest.fixture
def continuous_switches(app, monkeypatch):
    """Planning, continuous execution (scheduled slots, message events) and atomic assignment on."""
    for name in CONTINUOUS_SWITCHES:
        monkeypatch.setitem(app.config, name, True)


def process_env(app_config: dict) -> dict:
    """The environment of a real process (worker, runner, clock) on the test services."""
    return {**os.environ, "DATABASE_URL": app_config["SQLALCHEMY_DATABASE_URI"],
            "REDIS_URL": app_config["REDIS_URL"], "SECRET_KEY": app_config["SECRET_KEY"],
            "ENCRYPTION_KEY": app_config["ENCRYPTION_KEY"]}


def egress_env(app) -> dict:
    """The egress knobs the `receiver` fixture set on the app, for a real worker process's environment."""
    return {name: str(app.config[name]) for name in ("EGRESS_ALLOW_CIDRS", "EGRESS_PORT", "EGRESS_CA_BUNDLE")}


def worker_killed_once(app_config, reached, **env: str) -> None:
    """Run a real `flask jobs worker --burst` and `kill -9` its process group once `reached()` holds
    (a peer saw the job's request, so the job is mid-way): the job dies with it."""
    worker = subprocess.Popen([*FLASK, "jobs", "worker", "--burst"], cwd=PROJECT_ROOT,
                              env={**process_env(app_config), **env}, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not reached():
            assert time.monotonic() < deadline, "the worker never reached the peer"
            time.sleep(0.05)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=20)


@pytest.fixture(scope="session")
def runner(app_config):
    """A real script runner process (its own sandbox) serving the test Redis."""
    process = subprocess.Popen(RUNNER, cwd=PROJECT_ROOT,
                               env=process_env(app_config), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    _wait_until_serving(app_config["REDIS_URL"])
    yield process
    process.terminate()
    process.wait(timeout=20)


def _wait_until_serving(redis_url: str) -> None:
    """Block until the runner answers a trivial task (it starts its sandbox first)."""
    job = Queue(SCRIPTS, connection=redis.Redis.from_url(redis_url)).enqueue(
        "jobs.tasks.run_script", args=("return {};", "{}"))
    for _ in range(300):
        if job.get_status(refresh=True) == "finished":
            return
        time.sleep(0.1)
    raise RuntimeError("the script runner did not start")


@pytest.fixture(scope="session")
def ca():
    """A test certificate authority (trustme)."""
    return trustme.CA()


@pytest.fixture
def receiver(ca, app, monkeypatch, tmp_path):
    """The receiver, with the knobs that let the client reach it on loopback."""
    peer = HttpsReceiver(ca, names=("receiver.test", "localhost")).start()
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    monkeypatch.setitem(app.config, "EGRESS_ALLOW_CIDRS", "127.0.0.0/8")
    monkeypatch.setitem(app.config, "EGRESS_PORT", peer.port)
    monkeypatch.setitem(app.config, "EGRESS_CA_BUNDLE", str(bundle))
    yield peer
    peer.stop()


@pytest.fixture
def dns(monkeypatch):
    """DNS answers of the test's choosing: name -> list of answers, one list per lookup."""
    answers: dict[str, list[list[str]]] = {}

    def lookup(host, port, family, kind):
        if re.fullmatch(r"[0-9.]+", host) and host not in answers:  # a literal answers itself, as the system's does
            answers[host] = [[host]]
        if host not in answers or not answers[host]:
            raise socket.gaierror(socket.EAI_NONAME, "unknown")
        batch = answers[host].pop(0) if len(answers[host]) > 1 else answers[host][0]
        return [(socket.AF_INET, kind, 6, "", (address, port)) for address in batch]

    monkeypatch.setattr(egress, "resolver", lookup)
    return answers


@pytest.fixture
def estate(app, tenant, other_tenant, admin, monkeypatch, redis_conn, dns):
    """One of everything, so every page shows every form, and everyone who walks the pages: an
    `Estate` (tests/support/estate.py, which imports this module's helpers: imported here late)."""
    from tests.support.estate import build_estate

    return build_estate(app, tenant, other_tenant, admin, monkeypatch, redis_conn, dns)


@pytest.fixture
def live_server(app):
    """Serve the test app on a free loopback port for the duration of a test."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=5)


def start_of_a_fresh_window(conn: redis.Redis, window: int, needed: float) -> None:
    """Wait for the next fixed window when fewer than `needed` seconds are left in this one.

    Fixed windows count in Redis server time, so that is the clock read here.
    """
    seconds, micros = conn.time()
    left = window - seconds % window - micros / 1_000_000
    if left < needed:
        time.sleep(left + 0.01)


def seconds_left_in_window(conn: redis.Redis, window: int) -> int:
    """Whole seconds until the current fixed window ends (Redis server time), as Retry-After says."""
    seconds, micros = conn.time()
    return math.ceil(window - seconds % window - micros / 1_000_000)


LONG_WINDOW = 3600  # a burst of requests practically never meets its end (and waits when it would)


@pytest.fixture
def rate_window(app, monkeypatch, redis_conn):
    """Count every fixed-window limit (Open API, scripts) in windows of `seconds` for this test.

    It starts with at least `needed` seconds left in the current window, so the requests that
    follow are counted together: a long window for bursts, a short one to see a window end.
    """
    def use(seconds: int = LONG_WINDOW, needed: float = 10.0) -> None:
        monkeypatch.setitem(app.config, "RATE_WINDOW_SECONDS", seconds)
        start_of_a_fresh_window(redis_conn, seconds, min(needed, seconds * 0.75))
    return use


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def gunicorn(app, app_config, tmp_path):
    """The production web server, started by the Procfile's own web line (gunicorn, one worker
    process of 8 threads, the redacting access log) on the test database and Redis; its base
    URL. Its output is `gunicorn.log` in the test's tmp_path."""
    import requests

    port = free_port()
    log = open(tmp_path / "gunicorn.log", "wb")
    web = next(line for line in (PROJECT_ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    command = shlex.split(web.removeprefix("web:").replace("$PORT", str(port)))
    process = subprocess.Popen(
        [sys.executable, "-m", *command], cwd=PROJECT_ROOT, env=process_env(app_config),
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if requests.get(f"{base}/healthz", timeout=1).status_code == 200:
                break
        except requests.RequestException:
            time.sleep(0.1)
    else:
        process.kill()
        raise RuntimeError("gunicorn did not start")
    yield base
    process.terminate()
    process.wait(timeout=20)
    log.close()


@pytest.fixture
def model_server(app, monkeypatch):
    """An OpenAI-compatible model server on loopback, configured as the platform's model (with a
    key and a one-second read timeout)."""
    from tests.peers import ModelServer

    peer = ModelServer().start()
    monkeypatch.setitem(app.config, "MODEL_BASE_URL", peer.url)
    monkeypatch.setitem(app.config, "MODEL_NAME", "test-model")
    monkeypatch.setitem(app.config, "MODEL_API_KEY", "sk-test-key")
    monkeypatch.setitem(app.config, "MODEL_READ_TIMEOUT", 1.0)
    yield peer
    peer.stop()


@pytest.fixture
def gen(app, model_server, monkeypatch):
    """The model server, the console answering 202 at once: the test runs the generation job itself."""
    monkeypatch.setitem(app.config, "GENERATION_WAIT_SECONDS", 0)
    return model_server


@pytest.fixture
def generator_process(app, app_config, model_server, monkeypatch):
    """A real `flask jobs worker --generator` process on the test services and the model peer;
    POST /generate waits for it."""
    monkeypatch.setitem(app.config, "GENERATION_WAIT_SECONDS", 15)
    env = {**process_env(app_config), "MODEL_BASE_URL": model_server.url, "MODEL_NAME": "test-model",
           "MODEL_API_KEY": "sk-test-key"}
    process = subprocess.Popen([*FLASK, "jobs", "worker", "--generator"], cwd=PROJECT_ROOT, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    yield process
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
