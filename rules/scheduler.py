"""The 15-second scheduler of weekly rules (document 2, "Events" 5), a tick handler.

Each tick, unless a switch is off: creates the scheduled runs of due slots, marks late ones
missed, frees or renews the plan slots (Redis semaphores), decides each finished run once (its
commands through the atomic adapter) and starts queued runs while slots are free. Safe from two
cron processes at once. The rules of each step: docs/decisions.md, "Scheduler".
"""
import json
import logging
import math
import uuid
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone

from flask import current_app
from prometheus_client.core import GaugeMetricFamily, Metric
from sqlalchemy import func, select, text, update
from sqlalchemy.dialects import postgresql, sqlite

from core import audit
from core.clock import iso, utcnow
from core.config import CONTINUOUS_ASSIGNMENT, ConfigurationError, require_shorter, switches_off
from core.db import db
from core.limits import Semaphore
from core.metrics import RULE_RUNS
from core.redis import get_redis
from rules import execution, plans
from rules.calendar import due_slots, next_times
from rules.lookup import current_grant, granted
from rules.models import AutomationRule, AutomationRun, AutomationRunItem

log = logging.getLogger(__name__)

LOOKBACK = timedelta(minutes=10)  # slot starts due since the last tick, even after a short outage
LATE_AFTER = timedelta(minutes=5)  # a scheduled run starting later than this is missed
PLATFORM_PLANS = 4
TENANT_PLANS = 1
LEASE_SECONDS = plans.STUCK_AFTER.total_seconds()  # renewed every tick while the run lives
HELD = "rules:scheduler:held"  # set of run ids holding plan slots
LAST_TICK = "rules:scheduler:last_tick"  # ISO time of the latest tick, for the console
SILENT_AFTER = timedelta(minutes=1)  # no tick for this long (four missed): the console warns
FINISHED = ("complete", "partial", "failed", "cancelled")


def check_timing() -> None:
    """A plan's budget ends before its job's timeout, which ends before the run counts as stuck;
    the scheduler's slot lease is that same stuck time (renewed each tick while the run lives)."""
    require_shorter(("rules.plans.BUDGET_SECONDS", plans.BUDGET_SECONDS),
                    ("rules.plans.JOB_TIMEOUT", plans.JOB_TIMEOUT),
                    "a plan job would be killed before its scan and model calls give up")
    require_shorter(("rules.plans.JOB_TIMEOUT", plans.JOB_TIMEOUT),
                    ("rules.plans.STUCK_AFTER", plans.STUCK_AFTER.total_seconds()),
                    "the sweep would fail plans that are still running")
    if LEASE_SECONDS != plans.STUCK_AFTER.total_seconds():
        raise ConfigurationError(f"rules.scheduler.LEASE_SECONDS is {LEASE_SECONDS:g} s, but it must equal "
                                 f"rules.plans.STUCK_AFTER ({plans.STUCK_AFTER.total_seconds():g} s): a plan slot "
                                 "would be freed while its run may still be running, or held after it failed")
    require_shorter(("rules.execution.COMMAND_TIMEOUT", execution.COMMAND_TIMEOUT),
                    ("rules.execution.STALE_AFTER", execution.STALE_AFTER.total_seconds()),
                    "the sweep would call commands still being sent uncertain")


def enabled() -> bool:
    """Whether scheduled execution may run: planning, scheduled execution and atomic assignment on."""
    return not switches_off(current_app.config, CONTINUOUS_ASSIGNMENT)


def platform_semaphore() -> Semaphore:
    """The platform-wide plan slots of the scheduler."""
    return Semaphore(get_redis(), "rules:scheduler:platform", PLATFORM_PLANS, LEASE_SECONDS)


def tenant_semaphore(tenant_id: uuid.UUID | str) -> Semaphore:
    """The plan slot of one tenant."""
    return Semaphore(get_redis(), f"rules:scheduler:tenant:{tenant_id}", TENANT_PLANS, LEASE_SECONDS)


def _held_key(run_id: uuid.UUID | str) -> str:
    return f"rules:scheduler:run:{run_id}"


def tick() -> int:
    """One scheduler round (see the module's docstring); how many runs it created, changed or started.
    Its time is recorded first, switched off or not, so the console can tell a live cron apart."""
    now = utcnow()
    get_redis().set(LAST_TICK, iso(now))
    if not enabled():
        return 0
    done = _create_due(now)
    done += _mark_missed(now)
    _release_finished()
    done += _decide_finished(now)
    done += _start_queued(now)
    return done


# --- 1. due slots -------------------------------------------------------------------------------

def _scheduled_rules(tenant_id: uuid.UUID | None = None) -> list:
    """(tenant_id, rule_id, grant_id, revision, granted_at, definition, name) of every published
    weekly rule whose current grant is `scheduled` (of one tenant, when given)."""
    query = granted("scheduled").where(AutomationRule.trigger == "weekly")
    if tenant_id is not None:
        query = query.where(AutomationRule.tenant_id == tenant_id)
    return db.session.execute(query.order_by(AutomationRule.name, AutomationRule.id)).all()


def _insert_scheduled(values: dict) -> bool:
    """INSERT the scheduled run unless the rule has one for that planned time (the partial index)."""
    dialect = db.session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(AutomationRun.__table__).on_conflict_do_nothing(
        index_elements=["rule_id", "planned_for"], index_where=text("kind = 'scheduled'")
    ).returning(AutomationRun.__table__.c.id)
    return db.session.execute(statement, values).first() is not None


def _create_due(now: datetime) -> int:
    """Create the scheduled runs of due slot starts (one short transaction per rule)."""
    rows = _scheduled_rules()
    db.session.rollback()  # only read
    created = 0
    for tenant_id, rule_id, grant_id, revision, granted_at, definition, _ in rows:
        if definition.get("trigger") != "weekly" or not definition.get("slots"):
            continue
        since = max(now - LOOKBACK, granted_at - timedelta(microseconds=1))
        for planned_for in due_slots(definition["slots"], since, now):
            late = now - planned_for > LATE_AFTER
            values = {"id": uuid.uuid4(), "tenant_id": tenant_id, "rule_id": rule_id, "revision": revision,
                      "grant_id": grant_id, "kind": "scheduled", "mode": "plan_only", "executed": False,
                      "status": "missed" if late else "queued", "planned_for": planned_for,
                      "scanned": 0, "planned_count": 0, "created_at": now,
                      "finished_at": now if late else None,
                      "schedule_execution_state": "skipped" if late else None,
                      "schedule_execution_code": "missed" if late else None}
            if _insert_scheduled(values):
                created += 1
                if late:
                    _audit_round(tenant_id, rule_id, values["id"], planned_for, "skipped", "missed", 0)
        db.session.commit()
    return created


# --- 2. missed ----------------------------------------------------------------------------------

def _mark_missed(now: datetime) -> int:
    """Queued scheduled runs more than 5 minutes past their planned time become missed."""
    rows = db.session.execute(select(AutomationRun.id, AutomationRun.tenant_id, AutomationRun.rule_id,
                                     AutomationRun.planned_for).where(
        AutomationRun.kind == "scheduled", AutomationRun.status == "queued",
        AutomationRun.planned_for < now - LATE_AFTER)).all()
    missed = 0
    for run_id, tenant_id, rule_id, planned_for in rows:
        changed = db.session.execute(update(AutomationRun).where(
            AutomationRun.id == run_id, AutomationRun.status == "queued").values(
            status="missed", finished_at=now, schedule_execution_state="skipped",
            schedule_execution_code="missed")).rowcount
        if changed:
            missed += 1
            _audit_round(tenant_id, rule_id, run_id, planned_for, "skipped", "missed", 0)
    db.session.commit()
    RULE_RUNS.labels("scheduled", "missed").inc(missed)
    return missed


# --- 3. plan slots ------------------------------------------------------------------------------

def _take_held(conn, run_id: str) -> dict | None:
    """Remove the run's held-slot record atomically; its tokens when this caller got them."""
    pipe = conn.pipeline(transaction=True)
    pipe.get(_held_key(run_id))
    pipe.delete(_held_key(run_id))
    raw, _ = pipe.execute()
    conn.srem(HELD, run_id)
    if not raw or raw in (b"starting", "starting"):
        return None
    return json.loads(raw)


def _release(conn, run_id: str) -> None:
    """Give back the run's tenant and platform slots (idempotent)."""
    held = _take_held(conn, run_id)
    if held:
        tenant_semaphore(held["tenant_id"]).release(held["tenant"])
        platform_semaphore().release(held["platform"])


def _release_finished() -> None:
    """Release the slots of runs no longer queued or running; renew the leases of the others."""
    conn = get_redis()
    members = [m.decode() if isinstance(m, bytes) else m for m in conn.smembers(HELD)]
    if not members:
        return
    statuses = dict(db.session.execute(select(AutomationRun.id, AutomationRun.status).where(
        AutomationRun.id.in_([uuid.UUID(m) for m in members]))).all())
    db.session.rollback()  # only read
    for member in members:
        if statuses.get(uuid.UUID(member)) in ("queued", "running"):
            raw = conn.get(_held_key(member))
            if raw is None:
                conn.srem(HELD, member)  # the lease ran out: the slots already expired
                continue
            if raw in (b"starting", "starting"):
                continue
            held = json.loads(raw)
            tenant_semaphore(held["tenant_id"]).refresh(held["tenant"])
            platform_semaphore().refresh(held["platform"])
            conn.expire(_held_key(member), int(LEASE_SECONDS))
        else:
            _release(conn, member)


# --- 4. after planning --------------------------------------------------------------------------

def schedule_decision(run: AutomationRun, now: datetime) -> str:
    """The schedule_execution_code of a finished run: `queued` when its plan may run, else why not."""
    if run.kind != "scheduled":
        return "manual"
    if run.status in ("partial", "failed"):
        return run.status
    grant = current_grant(run.tenant_id, run.rule_id)
    if grant is None or grant.id != run.grant_id or grant.execution_mode != "scheduled":
        return "grant_replaced"
    if run.status != "complete":
        return run.status  # cancelled (the planning switch went off) or missed
    if run.started_at is None or run.planned_for is None or run.started_at - run.planned_for > LATE_AFTER:
        return "missed"
    if not execution.fresh(run, now):
        return "missed"
    return "queued"


def _decide_finished(now: datetime) -> int:
    """Decide every finished, undecided scheduled run once; queue the commands of the good ones."""
    run_ids = list(db.session.scalars(select(AutomationRun.id).where(
        AutomationRun.kind == "scheduled", AutomationRun.status.in_(FINISHED),
        AutomationRun.schedule_execution_state.is_(None))))
    decided = 0
    for run_id in run_ids:
        decided += _decide(run_id, now)
    return decided


def _decide(run_id: uuid.UUID, now: datetime) -> int:
    """One finished run: set its schedule_execution_state (once, whichever tick wins), queue its
    commands when `queued`, audit the round; commits, then queues the command jobs."""
    run = db.session.get(AutomationRun, run_id, populate_existing=True)
    code = schedule_decision(run, now)
    items = []
    if code == "queued":
        items = list(db.session.scalars(select(AutomationRunItem).where(
            AutomationRunItem.run_id == run.id, AutomationRunItem.planned.is_(True))))
        if any(item.snapshot is None or item.target_member_id is None for item in items):
            code, items = "no_snapshot", []
    state = "queued" if code == "queued" else "skipped"
    values = {"schedule_execution_state": state, "schedule_execution_code": code}
    if state == "queued":
        values["execution_requested_at"] = now
    won = db.session.execute(update(AutomationRun).where(
        AutomationRun.id == run.id, AutomationRun.schedule_execution_state.is_(None)).values(**values)).rowcount
    if not won:
        db.session.rollback()
        return 0
    if items:
        execution.queue_scheduled_commands(run, items)
    _audit_round(run.tenant_id, run.rule_id, run.id, run.planned_for, state, code, len(items),
                 status=run.status, planned_count=run.planned_count)
    tenant_id = run.tenant_id
    db.session.commit()
    if items:
        execution.queue_jobs(tenant_id, run_id)
    return 1


def _audit_round(tenant_id, rule_id, run_id, planned_for, state: str, code: str, commands: int, **extra) -> None:
    """The summary of one scheduled round (counts and codes only; the caller commits)."""
    audit.record(tenant_id, None, "automation.schedule_round", f"automation_run:{run_id}",
                 {"run_id": str(run_id), "rule_id": str(rule_id),
                  "planned_for": planned_for.astimezone(timezone.utc).isoformat() if planned_for else None,
                  "schedule_execution_state": state, "schedule_execution_code": code, "commands": commands,
                  **extra})


# --- 5. starting plans --------------------------------------------------------------------------

def _start_queued(now: datetime) -> int:
    """Start queued scheduled runs (oldest planned time first) while plan slots are free."""
    rows = db.session.execute(select(AutomationRun.id, AutomationRun.tenant_id).where(
        AutomationRun.kind == "scheduled", AutomationRun.status == "queued",
        AutomationRun.planned_for >= now - LATE_AFTER)
        .order_by(AutomationRun.planned_for, AutomationRun.created_at, AutomationRun.id)).all()
    db.session.rollback()  # only read
    conn = get_redis()
    started = 0
    for run_id, tenant_id in rows:
        key = _held_key(run_id)
        if not conn.set(key, "starting", nx=True, ex=int(LEASE_SECONDS)):
            continue  # already started (by this or another tick)
        tenant_token = tenant_semaphore(tenant_id).acquire()
        if tenant_token is None:
            conn.delete(key)
            continue  # the tenant's plan is running: a later tick
        platform_token = platform_semaphore().acquire()
        if platform_token is None:
            tenant_semaphore(tenant_id).release(tenant_token)
            conn.delete(key)
            break  # no platform slot: later ticks
        conn.set(key, json.dumps({"tenant_id": str(tenant_id), "tenant": tenant_token,
                                  "platform": platform_token}), ex=int(LEASE_SECONDS))
        conn.sadd(HELD, str(run_id))
        plans.plan_job(run_id).enqueue()
        started += 1
    return started


# --- the console's view -------------------------------------------------------------------------

def _last_tick() -> datetime | None:
    """When the scheduler last ticked, if it ever did."""
    raw = get_redis().get(LAST_TICK)
    return datetime.fromisoformat(raw.decode() if isinstance(raw, bytes) else raw) if raw else None


def tick_age() -> Iterable[Metric]:
    """Seconds since the scheduler's latest tick (NaN before the first), read at scrape time."""
    last_tick = _last_tick()
    age = (utcnow() - last_tick).total_seconds() if last_tick else math.nan
    yield GaugeMetricFamily("scheduler_tick_age_seconds", "Seconds since the scheduler's latest tick.", value=age)


def state(tenant_id: uuid.UUID) -> dict:
    """The scheduler as the tenant's console shows it: whether it runs (and which switches are off),
    its last tick and whether ticks stopped, and for each of the tenant's rules published for
    scheduled execution its next slot start and its latest scheduled run."""
    now, last_tick = utcnow(), _last_tick()
    rows = _scheduled_rules(tenant_id)
    latest = {}
    if rows:
        ranked = select(AutomationRun.rule_id, AutomationRun.planned_for, AutomationRun.status,
                        AutomationRun.schedule_execution_state, AutomationRun.schedule_execution_code,
                        func.row_number().over(partition_by=AutomationRun.rule_id,
                                               order_by=AutomationRun.planned_for.desc()).label("rank")).where(
            AutomationRun.tenant_id == tenant_id, AutomationRun.kind == "scheduled",
            AutomationRun.rule_id.in_([row[1] for row in rows])).subquery()
        latest = {row.rule_id: row for row in db.session.execute(select(ranked).where(ranked.c.rank == 1))}
    rules = []
    for _, rule_id, _, revision, _, definition, name in rows:
        run = latest.get(rule_id)
        rules.append({"rule_id": str(rule_id), "name": name, "revision": revision,
                      "next_slot": next_times(definition["slots"], now, 1)[0],
                      "latest_run": None if run is None else {
                          "planned_for": iso(run.planned_for), "status": run.status,
                          "schedule_execution_state": run.schedule_execution_state,
                          "schedule_execution_code": run.schedule_execution_code}})
    return {"enabled": enabled(), "switches_off": switches_off(current_app.config, CONTINUOUS_ASSIGNMENT),
            "last_tick": iso(last_tick), "silent": last_tick is None or now - last_tick > SILENT_AFTER,
            "rules": rules}
