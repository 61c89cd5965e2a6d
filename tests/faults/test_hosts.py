"""Two hosts (web, two workers, runner and clock each, as real processes) on the suite's own
PostgreSQL and Redis, under a bounded mixed load (inbound channel messages that a message-triggered
keyword rule assigns, Open API records with webhooks, Studio records and their http actions) through
every fault production brings: workers killed mid-job, PostgreSQL restarting and refusing writes,
Redis restarting, the clock's lease holder killed, and a rolling restart of every process.
Afterwards every acknowledged write is stored exactly once, every webhook event is delivered at
least once under one event id, no record action is sent twice, no conversation is assigned twice,
nothing answered 500 and every process is running. What each fault cost is printed."""
import json
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import pytest
import redis
import requests
from sqlalchemy import select, text

from core.crypto import hmac_sha256_hex
from core.db import db
from desk.channels import create_channel
from desk.tenancy import create_tenant
from jobs.clock import LEASE_KEY, SLOT_KEY
from openapi.apps import create_app as create_open_app
from openapi.models import WebhookEvent
from tests.conftest import login, seat
from tests.faults.stores import ROLES, Host, host_env
from tests.peers import HttpsReceiver
from tests.support.actions import action_definition, bound
from tests.support.rule_runs import publish_rule as publish
from tests.support.rules import CONTINUOUS_SWITCHES as SWITCHES, KEYWORD, MESSAGE_EVENT, RulesApi, message_rule
from tests.support.studio import ConsoleApi

APPLICATIONS = 4  # Open API applications sharing the load: each may write 60 records a minute
TICK, LEASE = 2, 5  # the clocks' seconds, shortened so a lost lease shows within the suite's time
ACKNOWLEDGED = (200, 201, 202)


@dataclass
class Outcome:
    """What the load saw of one request."""

    at: float
    kind: str
    status: int | str  # the HTTP status, or "refused" (nothing listening) or "cut" (no answer)
    seconds: float  # how long it took


@dataclass
class Load:
    """A sender that keeps writing through both hosts, as a load balancer in front of them would:
    a refused connection goes to the other host, a 503 is retried after a pause with the same
    message id or Idempotency-Key, so each item is acknowledged once in the end."""

    hosts: list
    desk: "Desk"
    outcomes: list = field(default_factory=list)
    messages: list = field(default_factory=list)  # acknowledged message ids
    records: list = field(default_factory=list)  # acknowledged Idempotency-Keys of Open API records
    studio: list = field(default_factory=list)  # acknowledged idempotency keys of Studio records
    actions: list = field(default_factory=list)  # records whose action run was acknowledged
    stopping: threading.Event = field(default_factory=threading.Event)

    def start(self) -> "Load":
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=120)

    def _run(self) -> None:
        for n in range(10 ** 6):
            if self.stopping.is_set():
                return
            if n % 3 == 0:
                self._until_acknowledged("message", self._message(n), self.messages)
            elif n % 3 == 1:
                self._until_acknowledged("record", self._record(n), self.records)
            else:
                self._studio_record_and_action(n)
            time.sleep(0.15)

    def _message(self, n: int):
        channel_id, secret = self.desk.channel
        message_id = f"m-{n}"
        raw = json.dumps({"message_id": message_id, "text": "A refund, please: where is my parcel?",
                          "customer": {"external_id": f"c-{n % 20}", "name": "Fault Customer"}}).encode()

        def send(base: str):
            stamp = str(int(time.time()))
            signature = "v1=" + hmac_sha256_hex(secret, stamp.encode() + b"." + raw)
            return requests.post(f"{base}/api/channels/{channel_id}/messages", data=raw, timeout=30, headers={
                "Content-Type": "application/json", "X-Channel-Timestamp": stamp, "X-Channel-Signature": signature,
                "Connection": "close"})
        return message_id, send

    def _record(self, n: int):
        key, token = str(uuid.uuid4()), self.desk.tokens[n % len(self.desk.tokens)]

        def send(base: str):
            return requests.post(f"{base}/api/v1/open/records", json={"data": {"n": n}}, timeout=30, headers={
                "Authorization": f"Bearer {token}", "Idempotency-Key": key, "Connection": "close"})
        return key, send

    def _console(self, path: str, body: dict):
        """A POST of the administrator's browser (the session cookie, same-origin) to a host."""
        def send(base: str):
            return requests.post(f"{base}/api/extensions{path}", json=body, timeout=30, headers={
                "Origin": base, "Cookie": f"session={self.desk.session}", "Connection": "close"})
        return send

    def _studio_record_and_action(self, n: int) -> None:
        """A Studio record; every fourth also runs its http action once acknowledged (about ten a
        minute: a tenant may run 20)."""
        key, app_id = str(uuid.uuid4()), self.desk.studio_app
        send = self._console(f"/{app_id}/records", {"version": 1, "input": {"title": f"Order {n}", "notes": "n"},
                                                    "idempotency_key": key})
        answer = self._until_acknowledged("studio record", (key, send), self.studio)
        if answer is None or n % 12 != 2:
            return
        record_id = answer.json()["data"]["record_id"]
        run = self._console(f"/{app_id}/actions", {"operation": "run", "version": 1, "record_id": record_id,
                                                   "action_key": "crm", "binding_id": self.desk.binding,
                                                   "confirm": True})
        self._until_acknowledged("action run", (record_id, run), self.actions)

    def _until_acknowledged(self, kind: str, item, acknowledged: list):
        """Send until a 2xx; the answer, or None when given up on a surprise."""
        name, send = item
        for attempt in range(10 ** 4):
            host = self.hosts[attempt % len(self.hosts)]
            sent, answer = time.monotonic(), None
            try:
                answer = send(host.base)
                status = answer.status_code
            except requests.ConnectionError as error:
                status = "refused" if "refused" in str(error).lower() else "cut"
            self.outcomes.append(Outcome(time.monotonic(), kind, status, time.monotonic() - sent))
            if status in ACKNOWLEDGED:
                acknowledged.append(name)
                return answer
            if status == 429:
                time.sleep(1)
            elif status in (503, "refused", "cut"):
                time.sleep(0.25)
            else:  # a 500 or any other surprise: counted, and the item given up
                return None
        return None


@dataclass
class Desk:
    """What the load writes to: a channel (id, secret), Open API tokens, a Studio application with
    its http action bound to the receiver, and the administrator's session cookie."""

    channel: tuple
    tokens: list
    studio_app: str
    binding: str
    session: str


@dataclass
class Fault:
    name: str
    started: float
    ended: float = 0.0
    recovered: float | None = None  # seconds from the fault's end to the first acknowledged write

    def cost(self, load: Load, until: float) -> str:
        """One line: the 503s the load met from the fault's start until `until` (the next fault's
        start), its slowest answer (a request that waited the outage out), its other failed tries
        (refused connections while a web restarted), how soon it wrote again."""
        seen = [o for o in load.outcomes if self.started <= o.at < until]
        unavailable = [o.at for o in seen if o.status == 503]
        span = (max(unavailable) - min(unavailable)) if unavailable else 0.0
        others = Counter(o.status for o in seen if o.status not in (*ACKNOWLEDGED, 503))
        slowest = max((o.seconds for o in seen), default=0.0)
        return (f"{self.name:28s} 503s {len(unavailable):3d} over {span:5.1f} s; slowest answer {slowest:4.1f} s; "
                f"other failed tries {dict(others) or 0}; recovered in "
                f"{'-' if self.recovered is None else f'{self.recovered:.1f} s'}")


def _first_acknowledged_after(load: Load, since: float, deadline: float = 60) -> float:
    """Seconds from `since` to the load's first acknowledged write after it."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        done = [o.at for o in load.outcomes if o.at >= since and o.status in ACKNOWLEDGED]
        if done:
            return min(done) - since
        time.sleep(0.05)
    raise AssertionError("the load got no acknowledgement after the fault")


def _holder_pid(connection: redis.Redis) -> int:
    for _ in range(200):
        lease = connection.get(LEASE_KEY)
        if lease is not None:
            return int(lease.decode().split(":")[2])
        time.sleep(0.1)
    raise AssertionError("no clock holds the lease")


@pytest.fixture
def receiver(ca):
    peer = HttpsReceiver(ca, names=("localhost",))
    peer.default = (200, {}, b"ok", 0.3)  # each delivery takes a moment: a killed worker cuts one short
    yield peer.start()
    peer.stop()


def test_two_hosts_lose_nothing_and_do_nothing_twice_through_every_fault(fault_app, fault_stores, faults_context,
                                                                          receiver, ca, tmp_path, monkeypatch, capsys):
    postgres, server = fault_stores
    bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(bundle))
    egress = {"EGRESS_ALLOW_CIDRS": "127.0.0.0/8", "EGRESS_PORT": str(receiver.port), "EGRESS_CA_BUNDLE": str(bundle)}
    for name, value in {**egress, "EGRESS_PORT": receiver.port, **dict.fromkeys(SWITCHES, True)}.items():
        monkeypatch.setitem(fault_app.config, name, value)
    desk = _desk(fault_app, receiver)
    hosts = []
    for name in ("host-a", "host-b"):
        root = tmp_path / name
        root.mkdir()
        hosts.append(Host(name, root, host_env(name, root, postgres.url, server.url, CLOCK_TICK_SECONDS=str(TICK),
                                               CLOCK_LEASE_SECONDS=str(LEASE), **egress,
                                               **dict.fromkeys(SWITCHES, "1"))).start_all())
    load, faults, rolling_exits = Load(hosts, desk).start(), [], {}
    redis_client = server.client()
    try:
        time.sleep(4)

        def fault(name: str) -> Fault:
            faults.append(Fault(name, time.monotonic()))
            return faults[-1]

        killed = fault("workers killed mid-delivery")
        for _ in range(200):  # wait for a delivery in flight
            if receiver.in_flight:
                break
            time.sleep(0.02)
        workers = [(host, role) for host in hosts for role in ROLES if role.startswith("worker")]
        for host, role in workers:  # kill -9 every worker: the delivery in flight is cut short
            host.kill(role)
        for host, role in workers:
            host.start(role)
        killed.ended = time.monotonic()
        time.sleep(3)

        restart = fault("PostgreSQL restart")
        postgres.ctl("restart")
        restart.ended = time.monotonic()
        restart.recovered = _first_acknowledged_after(load, restart.ended)
        time.sleep(3)

        read_only = fault("PostgreSQL refusing writes")
        postgres.read_only(True)
        time.sleep(4)
        postgres.read_only(False)
        read_only.ended = time.monotonic()
        read_only.recovered = _first_acknowledged_after(load, read_only.ended)
        time.sleep(3)

        redis_restart = fault("Redis restart")
        server.stop()
        time.sleep(2)
        server.start()
        redis_restart.ended = time.monotonic()
        redis_restart.recovered = _first_acknowledged_after(load, redis_restart.ended)
        time.sleep(3)

        clock = fault("clock lease holder killed")
        holder = _holder_pid(redis_client)
        owner = next(host for host in hosts if host.processes["clock"].pid == holder)
        owner.kill("clock")
        clock.ended = time.monotonic()
        slot = int(redis_client.get(SLOT_KEY) or 0)
        while int(redis_client.get(SLOT_KEY) or 0) <= slot:  # a standby ticks on
            assert time.monotonic() - clock.ended < 30, "no clock took the lease over within 30 s"
            time.sleep(0.1)
        clock.recovered = time.monotonic() - clock.ended
        owner.start("clock")

        survived = {host.name: host.running() for host in hosts}  # no fault so far ended a process
        rolling = fault("rolling restart (SIGTERM)")
        for host in hosts:
            for role in ROLES:
                rolling_exits[f"{host.name} {role}"] = host.stop(role)
                host.start(role)
        rolling.ended = time.monotonic()
        time.sleep(3)
    finally:
        load.stop()
    db.engine.dispose()  # the checks read on connections opened after every fault: the restart closed the pool's
    try:
        events = _wait_for_every_delivery(receiver, deadline=150)
        running = {host.name: host.running() for host in hosts}
        ready = {host.name: requests.get(f"{host.base}/readyz", timeout=5).status_code for host in hosts}
    finally:
        for host in hosts:
            host.stop_all()

    delivered = Counter(json.loads(r.body)["id"] for r in receiver.received if r.path == "/hook")
    sent_actions = Counter(r.headers["x-service-action-id"] for r in receiver.received if r.path == "/action")
    with capsys.disabled():  # printed in every run, make test's included
        print("\nfault suite: what each fault cost")
        for each, following in zip(faults, [*faults[1:], None]):
            print("  " + each.cost(load, following.started if following else float("inf")))
        print(f"  deliveries {sum(delivered.values())} of {len(events)} events "
              f"(redelivered {sum(delivered.values()) - len(delivered)}); action POSTs {sum(sent_actions.values())} "
              f"for {len(load.actions)} runs; writes acknowledged: {len(load.messages)} messages, "
              f"{len(load.records)} Open API records, {len(load.studio)} Studio records")

    assert not [o for o in load.outcomes if o.status not in (*ACKNOWLEDGED, 429, 503, "refused")], "a request failed"
    stored = dict(db.session.execute(text(
        "SELECT external_id, count(*) FROM message WHERE external_id IS NOT NULL GROUP BY external_id")).all())
    assert load.messages and all(stored.get(message) == 1 for message in load.messages)
    keys = Counter(str(key) for key in db.session.scalars(text("SELECT idempotency_key FROM open_record")))
    assert load.records and all(keys[key] == 1 for key in load.records)
    keys = Counter(str(key) for key in db.session.scalars(text("SELECT idempotency_key FROM studio_record")))
    assert load.studio and all(keys[key] == 1 for key in load.studio)
    runs = dict(db.session.execute(text("SELECT record_id, status FROM studio_action_run")).all())
    assert load.actions and {str(record) for record in runs} == set(load.actions)  # one run per record
    assert max(sent_actions.values()) == 1  # no record action sent twice
    assert set(runs.values()) <= {"accepted", "sending", "awaiting_verification"}  # "sending": cut by a kill
    triggered = db.session.execute(text("SELECT count(*) FROM automation_run WHERE message_id IS NOT NULL "
                                        "GROUP BY rule_id, message_id")).scalars().all()
    assert triggered and max(triggered) == 1  # one run per message
    applied = db.session.execute(text("SELECT count(*) FROM assignment_receipt WHERE status = 'applied' "
                                      "GROUP BY conversation_id")).scalars().all()
    assert applied and max(applied) == 1  # each conversation assigned once: no receipt applied twice
    assert set(delivered) == {str(event) for event in events}  # every event delivered, under its one id
    assert sum(delivered.values()) > len(delivered)  # the delivery cut short was sent again, same id
    every_role = {host.name: {role: True for role in ROLES} for host in hosts}
    assert survived == every_role
    assert rolling_exits == {name: 0 for name in rolling_exits}  # every process stopped politely
    assert running == every_role
    assert ready == {host.name: 200 for host in hosts}


def _desk(fault_app, receiver: HttpsReceiver) -> Desk:
    """The tenant the load writes to, made through the services and the console API in this process:
    a channel, Open API applications with webhooks, a live Studio application whose http action is
    bound to the receiver, and a published message-triggered keyword rule assigning to an agent."""
    tenant = create_tenant("Faults")
    admin, agent = seat(tenant, "admin"), seat(tenant, "agent")
    channel, secret = create_channel(tenant.id, "Chat")
    db.session.commit()
    desk_ids = (tenant.id, channel.id, admin.user.email)
    tokens = []
    for n in range(APPLICATIONS):
        tokens.append(create_open_app(desk_ids[0], None, f"Partner {n}", ["app.records.write"],
                                      receiver.url("localhost"), processing_confirmed=True,
                                      confirmed_scopes=()).token)
        db.session.commit()
    browser = fault_app.test_client()
    login(browser, desk_ids[2])
    api = ConsoleApi(browser)
    studio_app = api.create(action_definition())
    assert api.simulate(studio_app).status_code == 200 and api.publish(studio_app).status_code == 200
    binding = bound(api, studio_app, receiver.url("localhost", "/action"))
    publish(RulesApi(browser), message_rule(agent), MESSAGE_EVENT + KEYWORD)
    db.session.remove()  # no connection of this process lives through the faults
    return Desk((desk_ids[1], secret), tokens, studio_app, binding, browser.get_cookie("session").value)


def _wait_for_every_delivery(receiver: HttpsReceiver, deadline: float) -> list:
    """The ids of every webhook event, once each is recorded delivered (the one cut short by a
    killed worker too, sent again once its lease lapsed) and the receiver has seen each, and no
    action run waits to be sent."""
    end = time.monotonic() + deadline
    while True:
        db.session.remove()
        events = dict(db.session.execute(select(WebhookEvent.id, WebhookEvent.status)).all())
        seen = {json.loads(r.body)["id"] for r in receiver.received if r.path == "/hook"}
        missing = {str(event) for event, status in events.items() if status != "delivered"} | (
            {str(event) for event in events} - seen)
        missing |= set(db.session.scalars(text("SELECT CAST(id AS text) FROM studio_action_run "
                                               "WHERE status = 'queued'")))
        if not missing:
            return list(events)
        assert time.monotonic() < end, f"{len(missing)} of {len(events)} events not delivered"
        time.sleep(1)
