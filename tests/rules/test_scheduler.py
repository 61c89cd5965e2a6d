"""The scheduler of weekly rules: due slots make one scheduled run each, missed runs, the plan
slots (4 platform-wide, 1 per tenant), and the execution of complete, fresh plans."""
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest
from rq import Queue
from sqlalchemy import func, select, update

from core.audit import AuditEntry
from core.clock import BEIJING, iso, utcnow
from core.db import db
from core.queue_names import DEFAULT
from desk.models import AssignmentReceipt, Conversation
from rules import plans, scheduler
from rules.models import AutomationGrant, AutomationRule, AutomationRun
from tests.support.jobs import work
from tests.support.rule_runs import talk
from tests.support.rules import CONTINUOUS_SWITCHES, READ_ONLY, SCHEDULED, weekly_rule

pytestmark = pytest.mark.usefixtures("continuous_switches", "availability_both_ways")


@pytest.fixture
def slot() -> datetime:
    """A slot start two minutes ahead (whole Beijing minute), in UTC: after the grants of the test."""
    local = utcnow().astimezone(BEIJING).replace(second=0, microsecond=0) + timedelta(minutes=2)
    return local.astimezone(timezone.utc)


@pytest.fixture
def clock(monkeypatch):
    """Set the scheduler's clock."""
    def set_to(moment: datetime) -> None:
        monkeypatch.setattr(scheduler, "utcnow", lambda: moment)
    return set_to


def slot_rule(agent, slot: datetime) -> dict:
    local = slot.astimezone(BEIJING)
    return weekly_rule(agent, slots=[{"weekdays": [local.isoweekday()], "time": local.strftime("%H:%M"),
                                      "assignee_ref": str(agent.id)}])


@pytest.fixture
def scheduled(rules, agent, slot) -> str:
    """A weekly rule published for scheduled execution, its only slot at `slot`."""
    rule_id = rules.create(slot_rule(agent, slot))
    response = rules.publish(rule_id, SCHEDULED, execution_mode="scheduled")
    assert response.status_code == 200, response.get_json()
    return rule_id


def runs(rule_id: str | None = None) -> list[AutomationRun]:
    db.session.expire_all()
    query = select(AutomationRun).order_by(AutomationRun.created_at)
    if rule_id:
        query = query.where(AutomationRun.rule_id == uuid.UUID(rule_id))
    return list(db.session.scalars(query))


def queued_jobs(redis_conn) -> int:
    return Queue(DEFAULT, connection=redis_conn).count


def grant_of(rule_id: str) -> uuid.UUID:
    db.session.expire_all()
    return db.session.get(AutomationRule, uuid.UUID(rule_id)).grant_id


# --- due slots ----------------------------------------------------------------------------------

def test_a_due_slot_creates_one_scheduled_run_and_starts_its_plan(app, scheduled, slot, clock, redis_conn):
    clock(slot - timedelta(seconds=1))
    assert scheduler.tick() == 0 and runs() == []  # not yet due
    clock(slot + timedelta(seconds=10))
    assert scheduler.tick() == 2  # created, started
    [run] = runs()
    assert (run.kind, run.status, run.mode, run.executed) == ("scheduled", "queued", "plan_only", False)
    assert run.planned_for == slot and run.grant_id == grant_of(scheduled)
    assert run.schedule_execution_state is None and queued_jobs(redis_conn) == 1
    clock(slot + timedelta(seconds=25))
    scheduler.tick()
    scheduler.tick()
    assert [r.id for r in runs()] == [run.id]  # one run per rule and planned time
    assert queued_jobs(redis_conn) == 1


def test_a_slot_more_than_five_minutes_past_is_missed_and_never_replayed(app, scheduled, slot, clock, redis_conn):
    clock(slot + timedelta(minutes=6))
    scheduler.tick()
    [run] = runs()
    assert (run.status, run.schedule_execution_state, run.schedule_execution_code) == ("missed", "skipped", "missed")
    assert queued_jobs(redis_conn) == 0
    clock(slot + timedelta(minutes=7))
    scheduler.tick()
    assert [(r.id, r.status) for r in runs()] == [(run.id, "missed")]
    assert queued_jobs(redis_conn) == 0
    assert db.session.scalar(select(func.count()).select_from(AuditEntry).where(
        AuditEntry.action == "automation.schedule_round")) == 1


def test_a_queued_run_not_started_within_five_minutes_is_missed(app, scheduled, slot, clock, tenant, redis_conn):
    hold = scheduler.tenant_semaphore(tenant.id).acquire()  # the tenant's plan slot is busy
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    assert [r.status for r in runs()] == ["queued"] and queued_jobs(redis_conn) == 0
    scheduler.tenant_semaphore(tenant.id).release(hold)
    clock(slot + timedelta(minutes=5, seconds=1))
    scheduler.tick()
    [run] = runs()
    assert (run.status, run.schedule_execution_code) == ("missed", "missed") and queued_jobs(redis_conn) == 0


def test_a_plan_job_claimed_after_the_run_was_missed_does_nothing(app, scheduled, slot, clock, redis_conn):
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    assert queued_jobs(redis_conn) == 1
    clock(slot + timedelta(minutes=6))
    scheduler.tick()  # the worker never came
    work(app, redis_conn, DEFAULT)
    [run] = runs()
    assert (run.status, run.started_at, run.schedule_execution_code) == ("missed", None, "missed")
    scheduler.tick()
    assert scheduler.platform_semaphore().holders() == 0  # its slots were given back


def racing_ticks(app, ticks: int = 2) -> list[int]:
    """`ticks` scheduler rounds started at the same moment, each in its own app context (its own
    database session), as cron processes on two machines would run them."""
    start = threading.Barrier(ticks)

    def one_tick():
        with app.app_context():
            start.wait(20)
            return scheduler.tick()

    with ThreadPoolExecutor(ticks) as pool:
        return list(pool.map(lambda _: one_tick(), range(ticks)))


def test_ticks_racing_create_start_and_decide_each_run_once(app, scheduled, slot, clock, tenant, chat_channel, agent,
                                                            redis_conn):
    conversation = talk(tenant, chat_channel)
    clock(slot + timedelta(seconds=10))
    racing_ticks(app, 3)
    [run] = runs()
    assert run.status == "queued" and queued_jobs(redis_conn) == 1  # created once, started once
    assert scheduler.tenant_semaphore(tenant.id).holders() == 1
    assert scheduler.platform_semaphore().holders() == 1
    work(app, redis_conn, DEFAULT)
    clock(slot + timedelta(seconds=25))
    racing_ticks(app, 3)
    [run] = runs()
    assert (run.status, run.schedule_execution_state) == ("complete", "queued")
    assert queued_jobs(redis_conn) == 1  # one command job
    rounds = db.session.scalars(select(AuditEntry).where(AuditEntry.action == "automation.schedule_round")).all()
    assert len(rounds) == 1
    work(app, redis_conn, DEFAULT)
    db.session.expire_all()
    assert [r.status for r in db.session.scalars(select(AssignmentReceipt))] == ["applied"]
    assert db.session.get(Conversation, conversation.id).assignee_member_id == agent.id
    assert scheduler.tenant_semaphore(tenant.id).holders() == 0


# --- limits -------------------------------------------------------------------------------------

def test_one_plan_per_tenant_at_a_time(app, scheduled, slot, clock, tenant, redis_conn):
    hold = scheduler.tenant_semaphore(tenant.id).acquire()
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    assert [r.status for r in runs()] == ["queued"] and queued_jobs(redis_conn) == 0
    assert scheduler.platform_semaphore().holders() == 0
    scheduler.tenant_semaphore(tenant.id).release(hold)
    clock(slot + timedelta(seconds=25))
    assert scheduler.tick() == 1 and queued_jobs(redis_conn) == 1
    assert scheduler.tenant_semaphore(tenant.id).holders() == 1
    assert scheduler.platform_semaphore().holders() == 1


def test_four_plans_platform_wide(app, scheduled, slot, clock, redis_conn):
    holds = [scheduler.platform_semaphore().acquire() for _ in range(4)]
    assert all(holds) and scheduler.platform_semaphore().acquire() is None
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    [run] = runs()
    assert run.status == "queued" and queued_jobs(redis_conn) == 0
    assert scheduler.tenant_semaphore(run.tenant_id).holders() == 0  # not kept while waiting
    scheduler.platform_semaphore().release(holds[0])
    scheduler.tick()
    assert queued_jobs(redis_conn) == 1


def test_the_slots_are_held_while_the_plan_runs_and_released_after(app, scheduled, slot, clock, tenant,
                                                                  chat_channel, redis_conn):
    talk(tenant, chat_channel)
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    assert scheduler.tenant_semaphore(tenant.id).holders() == 1
    scheduler.tick()  # still queued: the lease is renewed, not released
    assert scheduler.tenant_semaphore(tenant.id).holders() == 1
    work(app, redis_conn, DEFAULT)
    scheduler.tick()
    assert scheduler.tenant_semaphore(tenant.id).holders() == 0
    assert scheduler.platform_semaphore().holders() == 0
    assert redis_conn.scard(scheduler.HELD) == 0


# --- switches and grants ------------------------------------------------------------------------

@pytest.mark.parametrize("switch", CONTINUOUS_SWITCHES)
def test_each_switch_off_does_nothing(app, scheduled, slot, clock, monkeypatch, redis_conn, switch):
    monkeypatch.setitem(app.config, switch, False)
    clock(slot + timedelta(seconds=10))
    assert scheduler.tick() == 0
    assert runs() == [] and queued_jobs(redis_conn) == 0


def test_a_plan_only_rule_is_not_scheduled(app, rules, agent, slot, clock, redis_conn):
    rule_id = rules.create(slot_rule(agent, slot))
    assert rules.publish(rule_id, READ_ONLY).status_code == 200
    clock(slot + timedelta(seconds=10))
    assert scheduler.tick() == 0 and runs() == []


def test_a_paused_rule_is_not_scheduled(app, rules, scheduled, slot, clock):
    assert rules.pause(scheduled).status_code == 200
    clock(slot + timedelta(seconds=10))
    assert scheduler.tick() == 0 and runs() == []


def test_a_slot_before_the_publication_is_not_scheduled(app, scheduled, slot, clock):
    db.session.execute(update(AutomationGrant).values(created_at=slot + timedelta(seconds=5)))
    db.session.commit()
    clock(slot + timedelta(seconds=10))
    assert scheduler.tick() == 0 and runs() == []


# --- after planning -----------------------------------------------------------------------------

def plan_round(app, slot, clock, redis_conn) -> AutomationRun:
    """Tick (create and start), let the worker plan, tick again (decide); the run."""
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    work(app, redis_conn, DEFAULT)
    clock(slot + timedelta(seconds=25))
    scheduler.tick()
    [run] = runs()
    return run


def test_a_complete_fresh_plan_is_queued_and_assigned_through_the_adapter(app, scheduled, slot, clock, tenant,
                                                                          agent, chat_channel, redis_conn):
    conversations = [talk(tenant, chat_channel), talk(tenant, chat_channel)]
    run = plan_round(app, slot, clock, redis_conn)
    assert (run.status, run.schedule_execution_state, run.schedule_execution_code) == ("complete", "queued", "queued")
    assert run.approved_by is None and run.executed is False
    assert queued_jobs(redis_conn) == 2
    work(app, redis_conn, DEFAULT)
    db.session.expire_all()
    receipts = list(db.session.scalars(select(AssignmentReceipt).where(
        AssignmentReceipt.command_key == f"run:{run.id}")))
    assert sorted(r.status for r in receipts) == ["applied", "applied"]
    assert {db.session.get(Conversation, c.id).assignee_member_id for c in conversations} == {agent.id}
    [entry] = db.session.scalars(select(AuditEntry).where(AuditEntry.action == "automation.schedule_round"))
    assert entry.summary == {**entry.summary, "run_id": str(run.id), "schedule_execution_state": "queued",
                             "schedule_execution_code": "queued", "commands": 2}
    scheduler.tick()  # decided once
    assert [r.schedule_execution_code for r in runs()] == ["queued"] and queued_jobs(redis_conn) == 0


def test_a_partial_plan_is_skipped_and_assigns_nothing(app, scheduled, slot, clock, tenant, chat_channel, redis_conn,
                                                       monkeypatch):
    monkeypatch.setattr(plans, "SCAN_LIMIT", 1)
    conversations = [talk(tenant, chat_channel), talk(tenant, chat_channel)]
    run = plan_round(app, slot, clock, redis_conn)
    assert (run.status, run.schedule_execution_state, run.schedule_execution_code) == ("partial", "skipped", "partial")
    assert queued_jobs(redis_conn) == 0
    db.session.expire_all()
    assert {db.session.get(Conversation, c.id).assignee_member_id for c in conversations} == {None}
    assert db.session.scalar(select(func.count()).select_from(AssignmentReceipt)) == 0


def test_a_grant_replaced_between_plan_and_execution_skips_the_run(app, rules, scheduled, slot, clock, tenant,
                                                                   chat_channel, redis_conn):
    conversation = talk(tenant, chat_channel)
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    work(app, redis_conn, DEFAULT)
    response = rules.publish(scheduled, SCHEDULED, expected=1, execution_mode="scheduled")
    assert response.status_code == 200, response.get_json()
    clock(slot + timedelta(seconds=25))
    scheduler.tick()
    [run] = runs()  # the new grant's tick did not plan the slot again
    assert (run.status, run.schedule_execution_state, run.schedule_execution_code) == \
        ("complete", "skipped", "grant_replaced")
    assert queued_jobs(redis_conn) == 0
    db.session.expire_all()
    assert db.session.get(Conversation, conversation.id).assignee_member_id is None


def test_a_plan_finished_more_than_five_minutes_ago_is_skipped_as_missed(app, scheduled, slot, clock, tenant,
                                                                         chat_channel, redis_conn):
    talk(tenant, chat_channel)
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    work(app, redis_conn, DEFAULT)
    db.session.execute(update(AutomationRun).values(finished_at=slot - timedelta(minutes=6)))
    db.session.commit()
    scheduler.tick()
    [run] = runs()
    assert (run.schedule_execution_state, run.schedule_execution_code) == ("skipped", "missed")
    assert queued_jobs(redis_conn) == 0


def test_a_plan_started_late_is_skipped_as_missed(app, scheduled, slot, clock, tenant, chat_channel, redis_conn):
    talk(tenant, chat_channel)
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    work(app, redis_conn, DEFAULT)
    db.session.execute(update(AutomationRun).values(started_at=slot + timedelta(minutes=5, seconds=1)))
    db.session.commit()
    scheduler.tick()
    assert [(r.schedule_execution_state, r.schedule_execution_code) for r in runs()] == [("skipped", "missed")]


@pytest.mark.parametrize("meanwhile, outcome", [("republish", ("rejected", "grant_replaced")),
                                                 ("pause", ("cancelled", "rule_paused"))])
def test_a_scheduled_command_rechecks_the_grant_at_write_time(app, rules, scheduled, slot, clock, tenant,
                                                              chat_channel, redis_conn, meanwhile, outcome):
    conversation = talk(tenant, chat_channel)
    run = plan_round(app, slot, clock, redis_conn)
    assert run.schedule_execution_state == "queued"
    if meanwhile == "republish":  # a new scheduled grant: the run's old one no longer authorizes
        response = rules.publish(scheduled, SCHEDULED, expected=1, execution_mode="scheduled")
    else:
        response = rules.pause(scheduled)
    assert response.status_code == 200, response.get_json()
    work(app, redis_conn, DEFAULT)
    db.session.expire_all()
    [receipt] = db.session.scalars(select(AssignmentReceipt))
    assert (receipt.status, receipt.reason) == outcome
    assert db.session.get(Conversation, conversation.id).assignee_member_id is None


def test_manual_plans_are_never_executed_by_the_scheduler(app, rules, scheduled, slot, clock, tenant, chat_channel,
                                                          redis_conn):
    talk(tenant, chat_channel)
    assert rules.post(f"/{scheduled}/rule-plan", {}).status_code == 202
    work(app, redis_conn, DEFAULT)
    clock(utcnow())
    scheduler.tick()
    [run] = runs()
    assert (run.kind, run.status, run.schedule_execution_state) == ("manual", "complete", None)
    assert scheduler.schedule_decision(run, utcnow()) == "manual"
    assert queued_jobs(redis_conn) == 0


# --- the console's view -------------------------------------------------------------------------

def test_the_state_names_the_last_tick_and_each_scheduled_rules_next_slot_and_latest_run(
        app, scheduled, slot, clock, tenant, other_tenant):
    clock(slot - timedelta(seconds=30))
    state = scheduler.state(tenant.id)
    assert (state["enabled"], state["last_tick"], state["silent"]) == (True, None, True)
    assert state["rules"] == [{"rule_id": scheduled, "name": "Weekday rotation", "revision": 1,
                               "next_slot": slot.astimezone(BEIJING).isoformat(), "latest_run": None}]
    scheduler.tick()
    state = scheduler.state(tenant.id)
    assert (state["last_tick"], state["silent"]) == (iso(slot - timedelta(seconds=30)), False)
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    [rule] = scheduler.state(tenant.id)["rules"]
    assert rule["next_slot"] == (slot + timedelta(weeks=1)).astimezone(BEIJING).isoformat()
    assert rule["latest_run"] == {"planned_for": iso(slot), "status": "queued", "schedule_execution_state": None,
                                  "schedule_execution_code": None}
    clock(slot + timedelta(seconds=10) + scheduler.SILENT_AFTER + timedelta(seconds=1))
    assert scheduler.state(tenant.id)["silent"] is True  # ticks stopped
    assert scheduler.state(other_tenant.id)["rules"] == []  # another tenant's rules are never shown


def test_a_switched_off_scheduler_still_records_its_ticks_and_says_which_switch(app, scheduled, slot, clock,
                                                                                monkeypatch):
    monkeypatch.setitem(app.config, "ATOMIC_ASSIGNMENT_ENABLED", False)
    clock(slot + timedelta(seconds=10))
    assert scheduler.tick() == 0
    state = scheduler.state(db.session.get(AutomationRule, uuid.UUID(scheduled)).tenant_id)
    assert (state["enabled"], state["switches_off"], state["last_tick"]) == (
        False, ["ATOMIC_ASSIGNMENT_ENABLED"], iso(slot + timedelta(seconds=10)))


def test_the_automation_page_shows_the_scheduler(app, admin_client, scheduled, slot, clock):
    page = admin_client.get("/extensions/automation").get_data(as_text=True)
    assert "none yet" in page and "no tick in the last minute" in page
    clock(slot + timedelta(seconds=10))
    scheduler.tick()
    page = admin_client.get("/extensions/automation").get_data(as_text=True)
    section = page[page.index('id="scheduler"'):]
    assert "running" in section and "no tick in the last minute" not in section
    assert (slot + timedelta(seconds=10)).astimezone(BEIJING).strftime("%Y-%m-%d %H:%M Beijing time") in section
    assert f'datetime="{(slot + timedelta(weeks=1)).astimezone(BEIJING).isoformat()}"' in section  # next slot
    assert "Weekday rotation" in section and "run-queued" in section


def test_the_automation_page_says_when_no_rule_is_scheduled(admin_client):
    page = admin_client.get("/extensions/automation").get_data(as_text=True)
    assert 'id="scheduled-rules-empty"' in page and 'id="scheduled-rules"' not in page
    assert "<title>Automation rules · Custom Studio</title>" in page
    assert page.count('id="scheduler"') == 1 and page.index('id="scheduler"') > page.index("<main")
