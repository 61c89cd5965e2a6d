"""Prometheus metrics: `/metrics` answers allowed addresses or the metrics token only, and every
counted path moves its counter when driven once (scraped and parsed as Prometheus does); labels
hold bounded names only — never a tenant, a person, a token or a submitted value."""
import math
import re
import subprocess
import sys
import uuid
from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families
from rq import Queue

from core.clock import iso, utcnow
from core.queue_names import DEFAULT, EVENTS
from core.redis import get_redis
from jobs.worker import AppWorker
from rules.scheduler import LAST_TICK
from core.config import PROJECT_ROOT
from tests.conftest import PASSWORD, build_app, login, process_env
from tests.support.channels import payload, send
from tests.support.generation import app_answer, generate
from tests.support.jobs import work
from tests.support.metrics import delta, scrape, value
from tests.support.openapi import create_record, deliver
from tests.support.rule_runs import executed_with_one_changed, inbound, plan, publish_rule
from tests.support.rules import KEYWORD, MESSAGE_EVENT, message_rule
from tests.support.scripts import CODE_DEFINITION

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-")


def moved(client, drive, name: str, **labels) -> float:
    """How much the sample moved while `drive()` ran."""
    before = value(scrape(client), name, **labels)
    drive()
    return value(scrape(client), name, **labels) - before


# --- who may scrape -------------------------------------------------------------------------------

def test_loopback_may_scrape_without_any_session(client):
    client.get("/login")
    assert "http_requests_total" in {name for name, _ in scrape(client)}


@pytest.mark.parametrize("address", ["203.0.113.9", "10.0.0.1", "192.168.1.20", "::ffff:8.8.8.8"])
def test_other_addresses_are_refused(client, address):
    answer = client.get("/metrics", environ_base={"REMOTE_ADDR": address})
    assert answer.status_code == 403 and "http_requests_total" not in answer.get_data(as_text=True)


def test_a_console_session_is_no_way_in(admin_client):
    assert admin_client.get("/metrics", environ_base={"REMOTE_ADDR": "203.0.113.9"}).status_code == 403


def test_the_metrics_token_opens_it_from_anywhere(app, client, monkeypatch):
    monkeypatch.setitem(app.config, "METRICS_TOKEN", "scrape-secret")
    far = {"REMOTE_ADDR": "203.0.113.9"}
    given = {"Authorization": "Bearer scrape-secret"}
    assert client.get("/metrics", environ_base=far, headers=given).status_code == 200
    for wrong in ("Bearer scrape-secre", "Bearer scrape-secret2", "scrape-secret", "Basic scrape-secret"):
        assert client.get("/metrics", environ_base=far, headers={"Authorization": wrong}).status_code == 403


def test_a_configured_range_may_scrape(app, client, monkeypatch):
    from core.config import _networks

    monkeypatch.setitem(app.config, "METRICS_ALLOW_CIDRS", _networks("10.0.0.0/8"))
    assert client.get("/metrics", environ_base={"REMOTE_ADDR": "10.1.2.3"}).status_code == 200
    assert client.get("/metrics").status_code == 403  # loopback is no longer in the list


def test_behind_a_trusted_proxy_a_forged_forwarded_address_opens_nothing(app_config, app):
    """TRUSTED_PROXIES=1 and a client that reaches the app port directly: its X-Forwarded-For
    names loopback, but the peer it connects from is not allowed."""
    browser = build_app({**app_config, "TRUSTED_PROXIES": 1}).test_client()
    forged = {"X-Forwarded-For": "127.0.0.1"}
    assert browser.get("/metrics", environ_base={"REMOTE_ADDR": "203.0.113.9"}, headers=forged).status_code == 403


def test_behind_a_trusted_proxy_both_the_proxy_and_the_client_it_names_must_be_allowed(app_config, app):
    browser = build_app({**app_config, "TRUSTED_PROXIES": 1}).test_client()
    via_proxy = {"REMOTE_ADDR": "127.0.0.1"}
    assert browser.get("/metrics", environ_base=via_proxy, headers={"X-Forwarded-For": "127.0.0.2"}).status_code == 200
    assert browser.get("/metrics", environ_base=via_proxy, headers={"X-Forwarded-For": "203.0.113.9"}
                       ).status_code == 403  # a public client scraping through a proxy on loopback
    assert browser.get("/metrics", environ_base=via_proxy).status_code == 200  # the proxy's host itself


# --- HTTP requests --------------------------------------------------------------------------------

def test_requests_are_counted_by_blueprint_route_pattern_and_status_class(admin_client):
    assert moved(admin_client, lambda: admin_client.get("/extensions"), "http_requests_total",
                 blueprint="studio", route="/extensions", method="GET", status="2xx") == 1
    samples = scrape(admin_client)
    assert value(samples, "http_request_duration_seconds_count", blueprint="studio", route="/extensions") >= 1


def test_a_hundred_distinct_paths_are_one_route_pattern(admin_client):
    before = scrape(admin_client)
    for _ in range(100):
        admin_client.get(f"/workbench/conversations/{uuid.uuid4()}")
        admin_client.get(f"/no-such-page/{uuid.uuid4()}")
    after = scrape(admin_client)
    pattern = "/workbench/conversations/<uuid:conversation_id>"
    assert delta(before, after, "http_requests_total", blueprint="workbench", route=pattern, method="GET",
                 status="4xx") == 100
    assert delta(before, after, "http_requests_total", blueprint="-", route="unmatched", method="GET",
                 status="4xx") == 100
    new = {dict(labels)["route"] for name, labels in after if name == "http_requests_total" and (name, labels)
           not in before}
    assert new <= {pattern, "unmatched", "/metrics"}


def test_no_label_holds_an_id_an_address_or_a_submitted_value(admin_client, client, channel, admin):
    send(client, channel, payload(text="secret-order-4711", name="Leaky Name"))
    login(client, "nobody@test.example", "wrong-password-4711")
    for key in scrape(admin_client):
        for label in dict(key[1]).values():
            assert not UUID.search(label) and "@" not in label and "4711" not in label and "Leaky" not in label


# --- the counted paths ----------------------------------------------------------------------------

def test_inbound_messages_are_counted_accepted_replayed_and_refused(client, channel):
    body = payload(message_id=f"m-{uuid.uuid4()}")
    assert moved(client, lambda: send(client, channel, body), "inbound_messages_total", outcome="accepted") == 1
    assert moved(client, lambda: send(client, channel, body), "inbound_messages_total", outcome="replayed") == 1
    assert moved(client, lambda: send(client, channel, body, secret="wrong"), "inbound_messages_total",
                 outcome="refused") == 1


def test_login_failures_and_throttles_are_counted(app, client, admin):
    assert moved(client, lambda: login(client, admin.user.email, "wrong"), "login_attempts_total",
                 outcome="failed") == 1
    for _ in range(10):
        login(client, admin.user.email, "wrong")
    assert moved(client, lambda: login(client, admin.user.email, PASSWORD), "login_attempts_total",
                 outcome="throttled") == 1


def test_rq_jobs_are_counted_per_queue_and_queue_depth_is_read(app, client, redis_conn):
    queue = Queue(EVENTS, connection=redis_conn)
    queue.enqueue("os.getpid")
    queue.enqueue("os.path.join")  # no arguments: a TypeError, so the job fails
    assert value(scrape(client), "rq_queue_depth", queue=EVENTS) == 2
    before = scrape(client)
    AppWorker([queue], connection=redis_conn, app=app).work(burst=True)
    after = scrape(client)
    for event, count in (("started", 2), ("finished", 1), ("failed", 1)):
        assert delta(before, after, "rq_jobs_total", queue=EVENTS, event=event) == count
    assert value(after, "rq_queue_depth", queue=EVENTS) == 0 and value(after, "rq_queue_depth", queue=DEFAULT) == 0


def test_webhook_deliveries_are_counted_by_outcome_and_attempt(client, hooked, receiver, redis_conn):
    _, open_client, _ = hooked

    def drive():
        create_record(open_client)
        deliver(redis_conn)

    assert moved(client, drive, "deliveries_total", outbox="webhook", outcome="delivered", attempt="1") == 1


def test_script_runs_are_counted_by_outcome_and_timed(client, api, runner):
    app_id = api.create(CODE_DEFINITION)
    assert moved(client, lambda: api.simulate(app_id, data={"title": "parcel"}), "script_runs_total",
                 outcome="ok") == 1
    looping = api.create({**CODE_DEFINITION, "code": {"language": "javascript", "source": "while (true) {}"}})
    assert moved(client, lambda: api.simulate(looping, data={"title": "parcel"}), "script_runs_total",
                 outcome="timeout") == 1
    assert value(scrape(client), "script_run_duration_seconds_count") >= 2


def test_generations_are_counted_by_kind_and_outcome_with_their_tokens(app, client, api, gen, redis_conn):
    gen.answer_json(app_answer(), input_tokens=300, output_tokens=100)
    before = scrape(client)
    assert generate(api, app, redis_conn).status_code == 201
    after = scrape(client)
    assert delta(before, after, "generations_total", kind="app", outcome="succeeded") == 1
    assert delta(before, after, "generation_tokens_total", kind="app") == 400


def test_rule_runs_and_commands_are_counted(single_run_switches, app, client, rules, tenant, published, target,
                                            redis_conn):
    assert moved(client, lambda: plan(rules, published, app, redis_conn), "rule_runs_total", trigger="manual",
                 status="complete") == 1
    before = scrape(client)
    executed_with_one_changed(app, rules, tenant, published, target, redis_conn)
    after = scrape(client)
    for state in ("applied", "state_changed"):
        assert delta(before, after, "rule_commands_total", state=state) == 1


def test_message_triggered_runs_are_counted(app, client, rules, agent, channel, redis_conn, continuous_switches):
    publish_rule(rules, message_rule(agent), MESSAGE_EVENT + KEYWORD)

    def drive():
        inbound(client, channel)
        work(app, redis_conn, EVENTS)

    assert moved(client, drive, "rule_runs_total", trigger="message_event", status="complete") == 1


def test_the_scheduler_tick_age_is_read_at_scrape_time(client):
    get_redis().delete(LAST_TICK)
    assert math.isnan(value(scrape(client), "scheduler_tick_age_seconds"))  # no tick yet
    get_redis().set(LAST_TICK, iso(utcnow() - timedelta(seconds=90)))
    assert 89 <= value(scrape(client), "scheduler_tick_age_seconds") < 100


def test_counters_of_other_processes_reach_the_web_processs_scrape(app_config, client, redis_conn, tmp_path,
                                                                      monkeypatch):
    """As `make run` runs them: a real `flask jobs worker` writes into the shared directory, and
    the web process's /metrics reads every process's files."""
    Queue(EVENTS, connection=redis_conn).enqueue("os.getpid")
    flask = [sys.executable, "-m", "flask", "--app", "app", "jobs", "worker", "--burst"]
    done = subprocess.run(flask, cwd=PROJECT_ROOT, capture_output=True, timeout=120,
                          env={**process_env(app_config), "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    samples = scrape(client)
    assert value(samples, "rq_jobs_total", queue=EVENTS, event="finished") == 1  # only what the worker wrote
    assert value(samples, "rq_queue_depth", queue=EVENTS) == 0


PROMQL_WORDS = {"sum", "rate", "irate", "increase", "deriv", "delta", "avg", "max", "min", "count", "by", "without",
                "and", "or", "unless", "on", "ignoring", "histogram_quantile", "absent", "bool"}


def test_every_alert_names_only_exported_metrics(client):
    import yaml

    exported = set()
    for family in text_string_to_metric_families(client.get("/metrics").get_data(as_text=True)):
        exported |= {family.name, *(family.name + suffix for suffix in ("_total", "_bucket", "_count", "_sum"))}
    rules = [rule for group in yaml.safe_load((PROJECT_ROOT / "docs" / "alerts.yml").read_text())["groups"]
             for rule in group["rules"]]
    assert {rule["alert"] for rule in rules} == {"SchedulerStopped", "WebhookQueueGrowing", "ScriptTimeouts",
                                                 "GenerationFailures", "ServerErrors", "ClockLeaseLost",
                                                 "ClockLeaseFlapping", "JobsAbandoned", "StoreUnavailable",
                                                 "ServiceLevelBreaches"}
    for rule in rules:
        expression = re.sub(r"\{[^}]*\}|\[[^\]]*\]|\"[^\"]*\"", " ", rule["expr"])
        names = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expression)) - PROMQL_WORDS
        assert names and names <= exported, (rule["alert"], names - exported)
