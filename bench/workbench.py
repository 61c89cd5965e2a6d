"""The agents' workbench: flat in the tenant's size, a poll cheaper than any read, 200 agents polling.

Run: .venv/bin/python -m bench.workbench   (BENCH_DATABASE_URL / BENCH_REDIS_URL for PostgreSQL;
     --tools or --presence for only the issue-22 or issue-37 lines)
Targets (issue 21):
- the workbench page and one search step over 5,000 conversations with 50,000 messages <= 1.3 x
  the empty workbench in the same run, with SQL statements per request printed (flat: no N+1);
- the "nothing changed" poll >= 1.0 x an authenticated console read (GET /api/extensions/capabilities);
- 200 agents polling every 3 s against the web process as `make run` starts it (the Procfile's
  gunicorn line): p95 poll latency and the share of one core the web process used.
Targets (issue 37, who else is here):
- the nothing-changed poll reporting presence (20 others in the tenant's entry) >= 0.8 x today's
  poll, in alternating rounds;
- the 200 agents again, each reporting an open conversation (every fifth typing): p95 printed, and
  the Redis memory the tenant's presence takes.
Targets (issue 22, Studio in the workbench):
- a submission from the workbench's side panel >= 0.8 x the console API's submission of the same
  record, in alternating rounds of the same run;
- a conversation's workbench page with 10 applications in the workbench <= 1.2 x with none, and
  the same SQL statements per request (flat in the number of applications).
Each ratio with a target is followed by "target met" or "target missed".
"""
import os
import random
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta

import requests
from sqlalchemy import event, insert, select

from bench.common import bench_app, free_port, logged_in, percentile, process_env, rates, target
from core.clock import utcnow
from core.config import PROJECT_ROOT
from core.db import db
from core.redis import get_redis
from desk import viewers
from desk.models import Conversation, Customer, Member, Message, User
from desk.tenancy import add_member, create_tenant
from studio.apps import create_app, get_app, publish, simulate
from studio.catalog import PUBLISH_PERMISSIONS
from studio.workbench import MAX_APPS, add_to_workbench, open_entry, set_grants

CONVERSATIONS = 5_000
MESSAGES_EACH = 10
AGENTS = 200
POLL_SECONDS = 3.0
POLL_ROUNDS = 10
PASSWORD = "bench-password-1"
WORDS = ("parcel", "refund", "invoice", "delivery", "address", "exchange", "warranty", "size", "colour", "late")


def tenant_with_conversations(app, conversations: int) -> str:
    """A tenant with `conversations` conversations of MESSAGES_EACH messages; its agent's e-mail."""
    with app.app_context():
        tenant = create_tenant(f"Bench {conversations}")
        email = f"agent-{uuid.uuid4().hex[:8]}@bench.example"
        add_member(tenant.id, email, PASSWORD, "agent", "Bench Agent")
        now, customers, rows, messages = utcnow(), [], [], []
        for n in range(conversations):
            customer_id, conversation_id = uuid.uuid4(), uuid.uuid4()
            at = now - timedelta(minutes=n)
            customers.append({"id": customer_id, "tenant_id": tenant.id, "name": f"Customer {n}", "support_note": "",
                              "phone": f"+86 138 {n:08d}", "created_at": at, "updated_at": at})
            rows.append({"id": conversation_id, "tenant_id": tenant.id, "customer_id": customer_id,
                         "status": ("open", "pending", "resolved")[n % 3], "bot_active": False, "created_at": at,
                         "updated_at": at, "last_activity_at": at})
            messages += [{"id": uuid.uuid4(), "tenant_id": tenant.id, "conversation_id": conversation_id,
                          "direction": ("inbound", "outbound")[m % 2], "kind": "public", "attachments": [],
                          "text": f"About my {random.choice(WORDS)}, order {n}-{m}.",
                          "created_at": at - timedelta(seconds=MESSAGES_EACH - m)} for m in range(MESSAGES_EACH)]
        for table, batch in ((Customer, customers), (Conversation, rows), (Message, messages)):
            for start in range(0, len(batch), 5_000):
                db.session.execute(insert(table), batch[start:start + 5_000])
        db.session.commit()
        return email


def statements(app, action) -> int:
    """How many SQL statements one call of `action` makes."""
    executed = []
    listen = lambda *args: executed.append(1)  # noqa: E731
    with app.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", listen)
    try:
        action()
    finally:
        event.remove(engine, "before_cursor_execute", listen)
    return len(executed)


def _ok(response, status: int = 200):
    assert response.status_code == status, (response.status_code, response.get_data(as_text=True)[:300])
    return response


def _flat_in_size(app, clients: dict) -> None:
    """The workbench page and one search step of the full tenant against the empty workbench; and,
    to tell growth with the tenant's size from the cost of showing rows, against a tenant with just
    one full list page (50 open conversations) and one with just one search window (200)."""
    search = {"q": "0000012", "content": "refund"}  # a phone fragment: a few matches, 200 conversations scanned
    hx = {"HX-Request": "true"}
    actions = {"empty page": lambda: _ok(clients["empty"].get("/workbench")),
               "one-page page": lambda: _ok(clients["one page"].get("/workbench")),
               "full page": lambda: _ok(clients["full"].get("/workbench")),
               "window search": lambda: _ok(clients["one window"].get("/workbench/search", query_string=search,
                                                                      headers=hx)),
               "full search": lambda: _ok(clients["full"].get("/workbench/search", query_string=search, headers=hx))}
    for action in actions.values():  # warm every query first
        for _ in range(5):
            action()
    seconds = {name: 1 / rate for name, rate in rates(actions, seconds=20.0).items()}
    base = seconds["empty page"]

    def line(label: str, name: str, against: str, at_most: float | None = 1.3, note: str = "") -> None:
        ratio = seconds[name] / seconds[against]
        verdict = " ".join(part for part in (note, target(ratio, at_most=at_most) if at_most else "") if part)
        print(f"{label:<58} {seconds[name] * 1000:8.2f} ms   ratio {ratio:6.3f} {verdict}")

    print(f"{'GET /workbench, empty tenant':<58} {base * 1000:8.2f} ms (baseline)")
    line(f"GET /workbench, {CONVERSATIONS:,} conversations, vs empty", "full page", "empty page")
    line("one search step (200 scanned, content), vs empty workbench", "full search", "empty page")
    line("  floor: GET /workbench, 150 conversations, vs empty", "one-page page", "empty page", None,
         "(showing one full page of 50 rows)")
    line(f"  GET /workbench, {CONVERSATIONS:,} vs 150 conversations", "full page", "one-page page",
         note="(growth with size) proposed")
    line(f"  search step, {CONVERSATIONS:,} vs 200 conversations", "full search", "window search",
         note="(growth with size) proposed")
    for name, action in actions.items():
        print(f"  SQL statements per request, {name:<14} {statements(app, action)}")


def _poll_vs_read(app, full_client) -> None:
    """The nothing-changed poll against an authenticated console read, in alternating rounds."""
    since = re.search(r'data-since="([^"]+)"', full_client.get("/workbench").get_data(as_text=True)).group(1)
    read_client = logged_in(app, _admin_of_new_tenant(app), PASSWORD)
    actions = {"read": lambda: _ok(read_client.get("/api/extensions/capabilities")),
               "poll": lambda: _ok(full_client.get("/workbench/changes", query_string={"since": since}), 204)}
    for action in actions.values():
        for _ in range(20):
            action()
    measured = rates(actions, seconds=10.0)
    ratio = measured["poll"] / measured["read"]
    print(f"GET /api/extensions/capabilities (console read) {1000 / measured['read']:8.3f} ms (baseline)")
    print(f"GET /workbench/changes, nothing changed          {1000 / measured['poll']:8.3f} ms   rate ratio "
          f"{ratio:6.3f} {target(ratio, at_least=1.0)}")
    print(f"  SQL statements per poll: {statements(app, actions['poll'])}, "
          f"per console read: {statements(app, actions['read'])}")


def _others_here(app, email: str, others: int) -> tuple[uuid.UUID, list[uuid.UUID]]:
    """`others` members of the agent's tenant with a conversation open, as their polls leave them;
    the tenant's id and some of its conversation ids."""
    with app.app_context():
        tenant_id = db.session.scalar(select(Member.tenant_id).join(User, User.id == Member.user_id)
                                      .where(User.email == email))
        conversation_ids = list(db.session.scalars(select(Conversation.id).where(Conversation.tenant_id == tenant_id)
                                                   .limit(AGENTS)))
        for n in range(others):
            viewers.report(get_redis(), tenant_id, uuid.uuid4(), f"Colleague {n}", conversation_ids[n],
                           "reply" if n % 5 == 0 else "")
        return tenant_id, conversation_ids


def _poll_with_presence(app, full_client, email: str) -> None:
    """The nothing-changed poll reporting presence against today's poll, in alternating rounds."""
    since = re.search(r'data-since="([^"]+)"', full_client.get("/workbench").get_data(as_text=True)).group(1)
    _, conversation_ids = _others_here(app, email, 20)
    query = {"since": since, "open": str(conversation_ids[0]), "typing": "", "presence": ""}
    query["presence"] = full_client.get("/workbench/changes", query_string=query).get_json()["presence"]
    with app.app_context():
        store = get_redis()
    actions = {"poll": lambda: _ok(full_client.get("/workbench/changes", query_string={"since": since}), 204),
               "presence": lambda: _ok(full_client.get("/workbench/changes", query_string=query), 204),
               "floor": lambda: (_ok(full_client.get("/workbench/changes", query_string={"since": since}), 204),
                                 store.ping())}
    for action in actions.values():
        for _ in range(20):
            action()
    measured = rates(actions, seconds=15.0)
    ratio, floor = measured["presence"] / measured["poll"], measured["floor"] / measured["poll"]
    print(f"GET /workbench/changes, nothing changed          {1000 / measured['poll']:8.3f} ms (baseline)")
    print(f"  the same, reporting presence (20 others here)  {1000 / measured['presence']:8.3f} ms   rate ratio "
          f"{ratio:6.3f} {target(ratio, at_least=0.8)}")
    vs_floor = measured["presence"] / measured["floor"]
    print(f"  floor: today's poll plus one Redis round trip (PING) {1000 / measured['floor']:8.3f} ms   rate ratio "
          f"{floor:6.3f}; the presence poll is {vs_floor:.3f} x the floor's rate "
          f"{target(vs_floor, at_least=0.85)} (proposed)")
    print(f"  SQL statements per poll with presence: {statements(app, actions['presence'])}")


TOOL = {"schema_version": 1, "name": "Refunds", "description": "Log a refund request.",
        "page": {"title": "Refund", "description": "One refund.", "columns": 2, "submit_label": "Save"},
        "fields": [{"key": "title", "label": "Title", "type": "text", "required": True},
                   {"key": "amount", "label": "Amount", "type": "number", "required": False},
                   {"key": "reason", "label": "Reason", "type": "select", "required": False,
                    "options": ["late", "broken", "other"]},
                   {"key": "due", "label": "Due", "type": "date", "required": False},
                   {"key": "urgent", "label": "Urgent", "type": "checkbox", "required": False}],
        "table_columns": ["title", "amount"],
        "workflow": {"trigger": "form.submitted", "rules": [
            {"name": "Big refunds are urgent", "when": {"field": "amount", "operator": "gte", "value": 100},
             "then": {"field": "urgent", "value": True}}]},
        "workbench": {"title": "Refunds", "theme": "emerald", "tools_position": "before_profile"}}
TOOL_INPUT = {"title": "Refund for order 42", "amount": "180", "reason": "late", "due": "2026-11-30"}
SUBMISSIONS_PER_ROUND, SUBMISSION_ROUNDS = 60, 8  # 480 records per app, under the 1,000 limit


def _tools_tenant(app, added: int) -> tuple[str, str, list, uuid.UUID]:
    """A tenant with 50 conversations, an administrator, an agent who shared every item of the
    customer's data with each tool, and `added` live applications in the workbench (plus one
    live application outside it); the two e-mails, the app ids (outside one first) and a conversation."""
    admin_email = f"admin-{uuid.uuid4().hex[:8]}@bench.example"
    agent_email = tenant_with_conversations(app, 50)
    with app.app_context():
        agent = db.session.scalar(select(Member).join(User).where(User.email == agent_email))
        admin = add_member(agent.tenant_id, admin_email, PASSWORD, "admin", "Bench Admin")
        app_ids = []
        for n in range(added + 1):
            found = get_app(agent.tenant_id, create_app(agent.tenant_id, admin.user_id, TOOL).app_id)
            simulate(found, admin.user_id, 1, {"title": "Sample"})
            publish(found, admin.user_id, 1, None, PUBLISH_PERMISSIONS, False)
            if n:
                add_to_workbench(found, admin.user_id)
                set_grants(agent, open_entry(agent, found.id, 1), {"name", "contact", "note"}, restricted=False)
            app_ids.append(found.id)
        conversation_id = db.session.scalar(select(Conversation.id).where(Conversation.tenant_id == agent.tenant_id)
                                            .order_by(Conversation.last_activity_at.desc()).limit(1))
        db.session.commit()
    return admin_email, agent_email, app_ids, conversation_id


def _panel_vs_console(app) -> None:
    """The same record submitted from the side panel (form post, htmx) and through the console API,
    in alternating rounds (each to its own application, so neither reaches the record limit)."""
    admin_email, agent_email, (console_app, panel_app), conversation_id = _tools_tenant(app, 1)
    console, agent = logged_in(app, admin_email, PASSWORD), logged_in(app, agent_email, PASSWORD)
    page = _ok(agent.get(f"/workbench/conversations/{conversation_id}")).get_data(as_text=True)
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)
    body = {"version": 1, "input": {**TOOL_INPUT, "amount": 180, "urgent": False}}
    form = {"csrf_token": csrf, "conversation_id": str(conversation_id), "version": "1",
            **{f"f_{key}": value for key, value in TOOL_INPUT.items()}}

    def by_console():
        _ok(console.post(f"/api/extensions/{console_app}/records", json={**body, "idempotency_key": str(uuid.uuid4())},
                         headers={"Origin": "http://localhost"}))

    def by_panel():
        _ok(agent.post(f"/workbench/apps/{panel_app}/records", data={**form, "idempotency_key": str(uuid.uuid4())},
                       headers={"HX-Request": "true"}))

    seconds = {"console": [], "panel": []}
    for _ in range(SUBMISSION_ROUNDS):
        for name, action in (("console", by_console), ("panel", by_panel)):
            start = time.perf_counter()
            for _ in range(SUBMISSIONS_PER_ROUND):
                action()
            seconds[name].append((time.perf_counter() - start) / SUBMISSIONS_PER_ROUND)
    console_s, panel_s = (sorted(seconds[name])[SUBMISSION_ROUNDS // 2] for name in ("console", "panel"))
    ratio = console_s / panel_s
    print(f"{'POST /api/extensions/<id>/records (console API)':<58} {console_s * 1000:8.2f} ms (baseline)")
    print(f"{'POST /workbench/apps/<id>/records (side panel)':<58} {panel_s * 1000:8.2f} ms   rate ratio "
          f"{ratio:6.3f} {target(ratio, at_least=0.8)}")
    print(f"  SQL statements per submission: console {statements(app, by_console)}, "
          f"panel {statements(app, by_panel)}")


def _tools_page(app) -> None:
    """A conversation's workbench page with the workbench full of applications against none."""
    pages = {}
    for name, added in (("none", 0), ("ten", MAX_APPS)):
        _, agent_email, _, conversation_id = _tools_tenant(app, added)
        client = logged_in(app, agent_email, PASSWORD)
        pages[name] = (lambda c=client, i=conversation_id: _ok(c.get(f"/workbench/conversations/{i}")))
    for action in pages.values():
        for _ in range(5):
            action()
    seconds = {name: 1 / rate for name, rate in rates(pages, seconds=12.0).items()}
    ratio = seconds["ten"] / seconds["none"]
    print(f"{'GET /workbench/conversations/<id>, no apps':<58} {seconds['none'] * 1000:8.2f} ms (baseline)")
    print(f"{f'GET /workbench/conversations/<id>, {MAX_APPS} apps with grants':<58} {seconds['ten'] * 1000:8.2f} ms"
          f"   ratio {ratio:6.3f} {target(ratio, at_most=1.2)}")
    print(f"  SQL statements per page: no apps {statements(app, pages['none'])}, "
          f"{MAX_APPS} apps {statements(app, pages['ten'])}")


def _admin_of_new_tenant(app) -> str:
    with app.app_context():
        tenant = create_tenant("Bench console")
        email = f"admin-{uuid.uuid4().hex[:8]}@bench.example"
        add_member(tenant.id, email, PASSWORD, "admin", "Bench Admin")
        db.session.commit()
        return email


def _web_command(port: int) -> list[str]:
    """The Procfile's web line, as `make run` starts it (gunicorn run by this interpreter)."""
    line = next(line for line in (PROJECT_ROOT / "Procfile").read_text().splitlines() if line.startswith("web:"))
    return [sys.executable, "-m", *shlex.split(line.split(":", 1)[1].replace("$PORT", str(port)))]


def _cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of the processes so far."""
    total = 0.0
    for pid in pids:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _children(pid: int) -> list[int]:
    found = open(f"/proc/{pid}/task/{pid}/children").read().split()
    return [pid, *(int(child) for child in found)]


def _agents(app, email_of_full: str) -> list[str]:
    """AGENTS more agents of the full tenant; their e-mails."""
    with app.app_context():
        tenant_id = db.session.scalar(select(Member.tenant_id).join(User, User.id == Member.user_id)
                                      .where(User.email == email_of_full))
        emails = [f"poller-{n}-{uuid.uuid4().hex[:6]}@bench.example" for n in range(AGENTS)]
        for email in emails:
            add_member(tenant_id, email, PASSWORD, "agent", "Poller")
        db.session.commit()
    return emails


def _polling(app, email_of_full: str, presence: bool = False) -> None:
    """200 agents polling every 3 s against the web process `make run` starts; with `presence`, each
    reporting an open conversation, every fifth typing, as the page does."""
    port = free_port()
    env = process_env(app, PORT=str(port))
    (PROJECT_ROOT / "instance").mkdir(exist_ok=True)
    log = open(PROJECT_ROOT / "instance" / "bench-workbench-web.log", "wb")
    web = subprocess.Popen(_web_command(port), cwd=PROJECT_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                           start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{base}/healthz", timeout=1).ok:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline or web.poll() is not None:
                raise RuntimeError("the web process did not answer; see instance/bench-workbench-web.log")
            time.sleep(0.2)
        sessions = []
        for email in _agents(app, email_of_full):
            session = requests.Session()
            page = session.get(f"{base}/login").text
            token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
            session.post(f"{base}/login", data={"email": email, "password": PASSWORD, "csrf_token": token})
            since = re.search(r'data-since="([^"]+)"', session.get(f"{base}/workbench").text).group(1)
            sessions.append((session, since))
        latencies, failures, lock = [], [], threading.Lock()

        tenant_id, conversation_ids = _others_here(app, email_of_full, 0)

        def agent(session: requests.Session, since: str, offset: float, n: int) -> None:
            time.sleep(offset)
            query = {"since": since}
            if presence:
                query.update(open=str(conversation_ids[n % len(conversation_ids)]), presence="",
                             typing="reply" if n % 5 == 0 else "")
            for _ in range(POLL_ROUNDS):
                started = time.perf_counter()
                answer = session.get(f"{base}/workbench/changes", params=query, timeout=10)
                elapsed = time.perf_counter() - started
                if presence and answer.status_code == 200:  # what the others show changed: the page shows it
                    query["presence"] = answer.json()["presence"]
                with lock:
                    (latencies if answer.status_code in (200, 204) else failures).append(elapsed)
                time.sleep(max(0.0, POLL_SECONDS - elapsed))

        pids = _children(web.pid)
        cpu_before, wall_before = _cpu_seconds(pids), time.monotonic()
        threads = [threading.Thread(target=agent, args=(s, since, POLL_SECONDS * n / AGENTS, n))
                   for n, (s, since) in enumerate(sessions)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        cpu, wall = _cpu_seconds(pids) - cpu_before, time.monotonic() - wall_before
        print(f"{AGENTS} agents polling every {POLL_SECONDS:.0f} s{', reporting presence' if presence else ''}, "
              f"{len(latencies) + len(failures)} polls over {wall:.0f} s "
              f"({(len(latencies) + len(failures)) / wall:.0f}/s), {len(failures)} failed")
        print(f"  poll latency p50 {percentile(latencies, 0.5) * 1000:7.2f} ms, "
              f"p95 {percentile(latencies, 0.95) * 1000:7.2f} ms, max {max(latencies) * 1000:7.2f} ms")
        print(f"  the web process (gunicorn, 1 worker, 8 threads) used {cpu / wall:.1%} of one core")
        if presence:
            with app.app_context():
                used = get_redis().memory_usage(f"desk:viewers:{tenant_id}") or 0
            print(f"  Redis memory of the tenant's presence ({AGENTS} members): {used / 1024:.1f} KiB")
    finally:
        os.killpg(web.pid, signal.SIGTERM)
        web.wait(timeout=30)
        log.close()


def main() -> None:
    app = bench_app()
    # 480 panel submissions are timed: each is still counted in Redis, but none is refused.
    app.config.update(PANEL_RECORDS_PER_MEMBER_PER_MINUTE=10 ** 9, PANEL_RECORDS_PER_TENANT_PER_MINUTE=10 ** 9)
    if sys.argv[1:] == ["--tools"]:  # only the issue-22 lines
        _panel_vs_console(app)
        _tools_page(app)
        return
    if sys.argv[1:] == ["--presence"]:  # only the issue-37 lines
        email = tenant_with_conversations(app, CONVERSATIONS)
        _poll_with_presence(app, logged_in(app, email, PASSWORD), email)
        _polling(app, email)
        _polling(app, email, presence=True)
        return
    emails = {"full": tenant_with_conversations(app, CONVERSATIONS), "empty": tenant_with_conversations(app, 0),
              "one page": tenant_with_conversations(app, 150), "one window": tenant_with_conversations(app, 200)}
    print(f"database: {app.config['SQLALCHEMY_DATABASE_URI'].split(':', 1)[0]}; "
          f"{CONVERSATIONS:,} conversations, {CONVERSATIONS * MESSAGES_EACH:,} messages in the full tenant")
    clients = {name: logged_in(app, email, PASSWORD) for name, email in emails.items()}
    _flat_in_size(app, clients)
    _poll_vs_read(app, clients["full"])
    _poll_with_presence(app, clients["full"], emails["full"])
    _panel_vs_console(app)
    _tools_page(app)
    full_email = emails["full"]
    _polling(app, full_email)
    _polling(app, full_email, presence=True)


if __name__ == "__main__":
    main()
