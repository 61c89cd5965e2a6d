"""Service-level timers (issue 36) as the desk's events move them: customer messages start first-
and next-response and resolution timers with stored due times in business hours (holidays skipped,
make-up workdays worked), a member's public reply meets the response timers and a private note
never stops one, `pending` pauses resolution and `open` resumes it, a customer message reopening a
resolved conversation resumes it, a running timer keeps the due time it was given when the policy
changes, and a breach is recorded once per timer under racing ticks."""
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import event, insert, select, text

from core.db import db
from core.metrics import SERVICE_LEVEL_BREACHES
from desk import service_timers
from desk.availability import replace_calendar
from desk.service_level_models import ServiceLevelTimer
from tests.support.channels import payload, send
from tests.support.desk import stop_the_clock
from tests.support.service_levels import beijing, levels, policy

HOLIDAY = [{"date": f"2026-02-{day}", "kind": "holiday", "name": "春节", "as_weekday": None} for day in range(16, 23)]


@pytest.mark.parametrize(("calendar", "due"), [
    (HOLIDAY, "2026-02-23 09:25"),
    (HOLIDAY + [{"date": "2026-02-15", "kind": "workday", "name": "春节调休", "as_weekday": 1}], "2026-02-15 09:25")])
def test_a_message_at_1755_on_the_friday_before_the_spring_festival_is_due_after_the_holiday(
        desk, tenant, admin, calendar, due):
    replace_calendar(tenant.id, admin.user_id, calendar)
    levels(tenant, admin, policy(first=30, resolution=30))
    desk.at(beijing("2026-02-13 17:55")).customer()
    first, resolution = desk.timer("first_response"), desk.timer("resolution")
    assert first.due_at == resolution.due_at == beijing(due)
    assert (first.target_minutes, first.hours, str(first.started_on)) == (30, "business", "2026-02-13")


def test_calendar_hours_count_every_minute(desk, tenant, admin):
    levels(tenant, admin, policy(first=30, hours="calendar"))
    desk.at(beijing("2026-02-13 17:55")).customer()
    assert desk.timer("first_response").due_at == beijing("2026-02-13 18:25")


def test_a_tenant_without_targets_starts_no_timer(desk, tenant, admin):
    desk.at(beijing("2026-03-02 10:00")).customer()
    levels(tenant, admin, policy())
    desk.customer()
    assert desk.timers() == []


def test_a_channels_override_replaces_the_default(desk, tenant, admin, channel):
    levels(tenant, admin, policy(first=30), policy(first=5, channel=str(channel[0].id)))
    desk.at(beijing("2026-03-02 10:00")).customer()
    assert desk.timer("first_response").due_at == beijing("2026-03-02 10:05")


def test_a_public_reply_meets_first_response_and_the_next_customer_message_starts_next_response(desk, tenant, admin,
                                                                                                 agent):
    levels(tenant, admin, policy(first=30, following=10))
    desk.at(beijing("2026-03-02 17:50")).customer().customer("Hello?")
    assert [timer.kind for timer in desk.timers()] == ["first_response"]  # one running response timer at most
    desk.at(beijing("2026-03-03 09:05")).reply()
    first = desk.timer("first_response")
    assert (first.outcome, first.elapsed_minutes, first.member_id) == ("met", 15.0, agent.id)
    assert first.stopped_at == beijing("2026-03-03 09:05") and first.breached_at is None
    desk.at(beijing("2026-03-03 11:00")).customer("Thanks, and the invoice?")
    assert desk.timer("next_response").due_at == beijing("2026-03-03 11:10")


def test_a_private_note_never_stops_a_timer(desk, tenant, admin):
    levels(tenant, admin, policy(first=30))
    desk.at(beijing("2026-03-02 10:00")).customer()
    desk.at(beijing("2026-03-02 10:10")).reply(private=True)
    first = desk.timer("first_response")
    assert (first.stopped_at, first.outcome, first.due_at) == (None, None, beijing("2026-03-02 10:30"))


def test_without_a_first_response_target_the_reply_still_makes_the_next_message_a_next_response(desk, tenant, admin):
    levels(tenant, admin, policy(following=10))
    desk.at(beijing("2026-03-02 10:00")).customer()
    assert desk.timers() == []
    desk.reply().at(beijing("2026-03-02 10:30")).customer()
    assert [timer.kind for timer in desk.timers()] == ["next_response"]


def test_pending_pauses_resolution_and_open_resumes_it_with_the_minutes_left(desk, tenant, admin):
    levels(tenant, admin, policy(resolution=120))
    desk.at(beijing("2026-03-02 10:00")).customer()
    desk.at(beijing("2026-03-02 10:30")).status("pending")
    paused = desk.timer("resolution")
    assert (paused.used_minutes, paused.due_at, paused.counted_since) == (30.0, None, None)
    desk.at(beijing("2026-03-03 10:00")).status("open")  # a day waiting on the customer does not count
    assert desk.timer("resolution").due_at == beijing("2026-03-03 11:30")
    desk.at(beijing("2026-03-03 10:45")).status("resolved")
    resolved = desk.timer("resolution")
    assert (resolved.outcome, resolved.elapsed_minutes) == ("met", 75.0)


def test_resolving_closes_the_unanswered_response_timer_without_counting_it_met(desk, tenant, admin):
    levels(tenant, admin, policy(first=30, resolution=600))
    desk.at(beijing("2026-03-02 10:00")).customer()
    desk.at(beijing("2026-03-02 10:05")).status("resolved")
    assert {timer.kind: timer.outcome for timer in desk.timers()} == {"first_response": "closed", "resolution": "met"}


def test_a_customer_message_on_a_resolved_conversation_reopens_it_and_resumes_resolution(desk, tenant, admin):
    levels(tenant, admin, policy(first=30, following=30, resolution=120))
    desk.at(beijing("2026-03-02 10:00")).customer().at(beijing("2026-03-02 10:10")).reply()
    desk.at(beijing("2026-03-02 10:40")).status("resolved")
    desk.at(beijing("2026-03-04 09:00")).customer("It broke again")
    resolution = desk.timer("resolution")
    assert (resolution.stopped_at, resolution.outcome, resolution.used_minutes) == (None, None, 40.0)
    # 40 minutes were counted before the resolution; 80 are left from the reopening message
    assert resolution.due_at == beijing("2026-03-04 10:20")
    assert desk.timer("next_response").due_at == beijing("2026-03-04 09:30")


def test_a_running_timer_keeps_its_due_time_when_the_policy_changes_and_the_next_one_uses_the_new(desk, tenant, admin):
    levels(tenant, admin, policy(first=30, following=30))
    desk.at(beijing("2026-03-02 10:00")).customer()
    levels(tenant, admin, policy(first=5, following=5))
    assert desk.timer("first_response").due_at == beijing("2026-03-02 10:30")
    desk.reply().at(beijing("2026-03-02 11:00")).customer()
    assert desk.timer("next_response").due_at == beijing("2026-03-02 11:05")


def test_a_reply_after_the_due_time_ends_the_timer_breached_and_records_the_breach_once(desk, tenant, admin):
    levels(tenant, admin, policy(first=30))
    desk.at(beijing("2026-03-02 10:00")).customer()
    before = SERVICE_LEVEL_BREACHES.labels("first_response")._value.get()
    desk.at(beijing("2026-03-02 11:00")).reply()
    first = desk.timer("first_response")
    assert (first.outcome, first.breached_at, first.elapsed_minutes) == ("breached", beijing("2026-03-02 10:30"), 60.0)
    assert service_timers.sweep() == 0
    assert SERVICE_LEVEL_BREACHES.labels("first_response")._value.get() == before + 1


def test_a_breach_is_recorded_once_per_timer_under_racing_ticks(app, desk, tenant, admin, monkeypatch):
    levels(tenant, admin, policy(first=30, resolution=60, hours="calendar"))
    for customer in range(5):
        response = send(desk.client, desk.channel, payload(message_id=uuid.uuid4().hex, external_id=f"c-{customer}"))
        assert response.status_code == 201
    later = datetime.now(timezone.utc) + timedelta(minutes=45)  # first responses due, resolutions not
    stop_the_clock(monkeypatch, later)
    before = SERVICE_LEVEL_BREACHES.labels("first_response")._value.get()
    start = threading.Barrier(8)

    def tick(_: int) -> int:
        with app.app_context():
            start.wait(30)
            return service_timers.sweep()

    with ThreadPoolExecutor(8) as pool:
        recorded = list(pool.map(tick, range(8)))
    assert sum(recorded) == 5
    assert SERVICE_LEVEL_BREACHES.labels("first_response")._value.get() == before + 5
    scraped = app.test_client().get("/metrics").get_data(as_text=True)  # by target kind, no tenant
    assert f'service_level_breaches_total{{kind="first_response"}} {before + 5}' in scraped
    db.session.expire_all()
    outcomes = [(t.kind, t.outcome) for t in db.session.scalars(select(ServiceLevelTimer))]
    assert sorted(outcomes) == [("first_response", "breached")] * 5 + [("resolution", None)] * 5


def test_the_breach_sweep_is_one_statement_planned_on_the_partial_due_time_index(desk, tenant, admin):
    """The database's own plan of the very statement the tick runs: a search of
    ix_service_level_timer_due (running timers with a due time), not a scan of timers or conversations."""
    levels(tenant, admin, policy(first=30, resolution=60, hours="calendar"))
    desk.customer()
    timer = desk.timer("first_response")
    row = {column.key: getattr(timer, column.key) for column in ServiceLevelTimer.__mapper__.column_attrs}
    db.session.execute(insert(ServiceLevelTimer), [  # running timers due later, for the planner to weigh
        {**row, "id": uuid.uuid4(), "due_at": timer.due_at + timedelta(days=1, minutes=n)} for n in range(3000)])
    db.session.commit()
    if db.engine.dialect.name == "postgresql":
        db.session.execute(text("ANALYZE service_level_timer"))
        db.session.commit()
    statements = []

    def seen(_conn, _cursor, statement, parameters, _context, _many):
        statements.append((statement, parameters))

    event.listen(db.engine, "before_cursor_execute", seen)
    try:
        service_timers.sweep()
    finally:
        event.remove(db.engine, "before_cursor_execute", seen)
    [(statement, parameters)] = [(s, p) for s, p in statements if s.lstrip().upper().startswith("UPDATE")]
    with db.engine.connect() as connection:
        if connection.dialect.name == "postgresql":
            plan = [row[0] for row in connection.exec_driver_sql(f"EXPLAIN {statement}", parameters)]
        else:
            plan = [row[-1] for row in connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)]
        connection.rollback()
    assert any("ix_service_level_timer_due " in f"{line} " for line in plan), plan
