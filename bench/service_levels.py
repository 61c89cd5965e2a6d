"""What service levels (issue 36) cost, against baselines from the same run.

1. The workbench page of an agent over 5,000 conversations whose every row shows a due target
   (a running first-response timer each, due times spread from an hour ago to a day ahead) vs a
   tenant alike without service-level policies (no timers), in alternating rounds. Target: the page
   with badges >= 0.9 x the rate of the page without. SQL statements per request printed (the
   badge is a column of the list's one statement, not a statement per row).

2. The tick's breach sweep over 50,000 running timers with 100 past their due time vs the same
   sweep when nothing is due (the 100 just recorded), alternating: the 100 are set back to running
   between rounds, outside the timing. Target: <= 3 x. Each sweep is one UPDATE on the partial
   due-time index and a COMMIT; the empty sweep is the floor (the commit of a transaction that
   wrote nothing, and one index probe).

3. The 30-day report of a tenant with 100,000 conversations (a decided first-response and
   resolution timer each, spread over 30 days): printed in ms and as a ratio to one count(*) of the
   timers it reads. Target: <= 40 x (four grouped aggregations, two with window functions that sort
   their groups, vs one index count).

Run: .venv/bin/python -m bench.service_levels (BENCH_DATABASE_URL / BENCH_REDIS_URL for PostgreSQL).
"""
import logging
import uuid
from datetime import timedelta

from sqlalchemy import func, insert, select, update

from bench.common import bench_app, logged_in, median_seconds, rates, target
from bench.workbench import PASSWORD, statements, tenant_with_conversations
from core.clock import to_beijing, utcnow
from core.db import db
from desk import service_report, service_timers
from desk.channels import create_channel
from desk.models import Conversation, Customer, Member, User
from desk.service_level_models import ServiceLevelTimer as Timer
from desk.service_levels import save_settings
from desk.tenancy import add_member, create_tenant

PAGE_TARGET, SWEEP_TARGET, REPORT_TARGET = 0.9, 3.0, 40.0
CONVERSATIONS = 5_000
RUNNING, DUE = 50_000, 100
REPORTED = 100_000
BATCH = 5_000
POLICY = {"channel_id": None, "first_response_minutes": 30, "next_response_minutes": 60,
          "resolution_minutes": 1440, "hours": "business"}


def main() -> None:
    logging.disable(logging.INFO)
    app = bench_app()
    with app.app_context():
        print(f"database: {db.engine.dialect.name}")
    page_with_badges(app)
    breach_sweep(app)
    thirty_day_report(app)


def _insert(model, rows: list[dict]) -> None:
    for start in range(0, len(rows), BATCH):
        db.session.execute(insert(model), rows[start:start + BATCH])


def _timer(tenant_id, conversation_id, channel_id, kind: str, started, **values) -> dict:
    return {"id": uuid.uuid4(), "tenant_id": tenant_id, "conversation_id": conversation_id, "channel_id": channel_id,
            "kind": kind, "hours": "calendar", "target_minutes": 30, "started_at": started,
            "started_on": to_beijing(started).date(), "used_minutes": 0.0, **values}


def _tenant_of(email: str):
    return db.session.scalar(select(Member.tenant_id).join(User, User.id == Member.user_id).where(User.email == email))


# --- 1. the workbench page, badges vs none --------------------------------------------------------

def page_with_badges(app) -> None:
    emails = {name: tenant_with_conversations(app, CONVERSATIONS) for name in ("without", "with")}
    with app.app_context():
        tenant_id = _tenant_of(emails["with"])
        save_settings(tenant_id, None, [POLICY], [])
        channel, _ = create_channel(tenant_id, "Bench chat")
        now = utcnow()
        conversations = db.session.scalars(select(Conversation.id).where(Conversation.tenant_id == tenant_id)).all()
        _insert(Timer, [_timer(tenant_id, conversation_id, channel.id, "first_response", now,
                               counted_since=now, due_at=now + timedelta(minutes=n % 1500 - 60))
                        for n, conversation_id in enumerate(conversations)])
        db.session.commit()
    clients = {name: logged_in(app, email, PASSWORD) for name, email in emails.items()}
    page = clients["with"].get("/workbench").get_data(as_text=True)
    assert page.count('class="due due-') >= 50, "every row of the page shows a due target"
    actions = {name: (lambda client=client: client.get("/workbench")) for name, client in clients.items()}
    for action in actions.values():
        for _ in range(5):
            action()
    found = rates(actions, seconds=12.0)
    ratio = found["with"] / found["without"]
    print(f"GET /workbench without service levels, {CONVERSATIONS:,} conversations  "
          f"{1000 / found['without']:8.2f} ms (baseline)")
    print(f"GET /workbench, every row with its due target                  {1000 / found['with']:8.2f} ms   "
          f"rate ratio {ratio:6.3f} {target(ratio, at_least=PAGE_TARGET)}")
    for name, action in actions.items():
        print(f"  SQL statements per request, {name:<8} {statements(app, action)}")


# --- 2. the breach sweep, 100 due among 50,000 vs nothing due ------------------------------------

def _conversations(tenant_id, count: int) -> list:
    """`count` conversations of one customer of the tenant (ids)."""
    customer_id, now = uuid.uuid4(), utcnow()
    db.session.execute(insert(Customer), [{"id": customer_id, "tenant_id": tenant_id, "name": "Bench Customer",
                                           "support_note": "", "created_at": now, "updated_at": now}])
    rows = [{"id": uuid.uuid4(), "tenant_id": tenant_id, "customer_id": customer_id, "status": "open",
             "bot_active": False, "created_at": now, "updated_at": now, "last_activity_at": now}
            for _ in range(count)]
    _insert(Conversation, rows)
    return [row["id"] for row in rows]


def breach_sweep(app) -> None:
    with app.app_context():
        service_timers.sweep()  # whatever the page's tenant had due
        empty_table = median_seconds(service_timers.sweep)
        tenant = create_tenant("Bench sweep")
        channel, _ = create_channel(tenant.id, "Bench chat")
        now = utcnow()
        conversations = _conversations(tenant.id, RUNNING)
        rows = [_timer(tenant.id, conversation_id, channel.id, "first_response", now, counted_since=now,
                       due_at=now + timedelta(minutes=10 + n % 600)) for n, conversation_id in enumerate(conversations)]
        due = [row["id"] for row in rows[:DUE]]
        for row in rows[:DUE]:
            row["due_at"] = now - timedelta(minutes=1)
        _insert(Timer, rows)
        db.session.commit()
        loaded, empty, written = [], [], []
        for _ in range(15):
            _reset(due)
            loaded.append(median_seconds(lambda: _sweep_expecting(DUE), rounds=1))
            empty.append(median_seconds(lambda: _sweep_expecting(0), rounds=1))
            _reset(due)
            written.append(median_seconds(lambda: _write_by_id(due), rounds=1))
    loaded.sort(), empty.sort(), written.sort()
    ratio = loaded[len(loaded) // 2] / empty[len(empty) // 2]
    floor = loaded[len(loaded) // 2] / written[len(written) // 2]
    print(f"breach sweep, empty table                                       {empty_table * 1000:8.2f} ms")
    print(f"breach sweep, {RUNNING:,} running, nothing due (floor: a probe and a commit) "
          f"{empty[len(empty) // 2] * 1000:8.2f} ms (baseline)")
    print(f"breach sweep, {RUNNING:,} running, {DUE} due                          "
          f"{loaded[len(loaded) // 2] * 1000:8.2f} ms   ratio {ratio:6.3f} {target(ratio, at_most=SWEEP_TARGET)}")
    print(f"  floor: the same {DUE} rows written by id, no probe              "
          f"{written[len(written) // 2] * 1000:8.2f} ms   the sweep is {floor:5.2f} x it")


def _reset(due: list) -> None:
    """The due timers back to running and unbreached."""
    db.session.execute(update(Timer).where(Timer.id.in_(due)).values(breached_at=None, outcome=None))
    db.session.commit()


def _write_by_id(due: list) -> None:
    """What recording the breaches must write at least: the rows themselves, named by id, and a COMMIT."""
    db.session.execute(update(Timer).where(Timer.id.in_(due)).values(breached_at=Timer.due_at, outcome="breached"))
    db.session.commit()


def _sweep_expecting(count: int) -> None:
    recorded = service_timers.sweep()
    assert recorded == count, (recorded, count)


# --- 3. the 30-day report over 100,000 conversations ----------------------------------------------

def thirty_day_report(app) -> None:
    with app.app_context():
        tenant = create_tenant("Bench report")
        channel, _ = create_channel(tenant.id, "Bench chat")
        members = [add_member(tenant.id, f"r{n}-{uuid.uuid4().hex[:6]}@bench.example", PASSWORD, "agent",
                              f"Agent {n}").id for n in range(20)]
        now = utcnow()
        rows = []
        for n, conversation_id in enumerate(_conversations(tenant.id, REPORTED)):
            started = now - timedelta(days=n % 30, minutes=n % 600)
            for kind, elapsed in (("first_response", 5 + n % 50), ("resolution", 60 + n % 900)):
                rows.append(_timer(tenant.id, conversation_id, channel.id, kind, started, due_at=started,
                                   stopped_at=started, elapsed_minutes=float(elapsed), member_id=members[n % 20],
                                   outcome="met" if n % 7 else "breached",
                                   breached_at=None if n % 7 else started))
        _insert(Timer, rows)
        db.session.commit()
        since = service_report.first_day(now, 30)
        count = select(func.count()).where(Timer.tenant_id == tenant.id, Timer.started_on >= since)
        assert db.session.scalar(count) == len(rows)
        for _ in range(3):
            service_report.report(tenant.id, 30, now)
        ranks = (select(func.row_number().over(partition_by=Timer.kind, order_by=Timer.elapsed_minutes).label("rank"))
                 .where(Timer.tenant_id == tenant.id, Timer.started_on >= since).subquery())
        ranked = select(func.max(ranks.c.rank))
        counted = median_seconds(lambda: db.session.scalar(count), rounds=9)
        one_pass = median_seconds(lambda: db.session.scalar(ranked), rounds=9)
        reported = median_seconds(lambda: service_report.report(tenant.id, 30, now), rounds=9)
    ratio = reported / counted
    print(f"count(*) of the {len(rows):,} timers of {REPORTED:,} conversations     {counted * 1000:8.2f} ms (baseline)")
    print(f"30-day report over them                                         {reported * 1000:8.2f} ms   "
          f"ratio {ratio:6.1f} {target(ratio, at_most=REPORT_TARGET)}")
    print(f"  floor: one ranking of them by kind (a window sort)            {one_pass * 1000:8.2f} ms"
          f"   the report (three rankings and a daily count) is {reported / one_pass:5.2f} x it")


if __name__ == "__main__":
    main()
