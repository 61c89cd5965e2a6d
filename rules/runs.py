"""The runs of a rule as the API and the console list them: the 30 newest with their
per-conversation results (never message text) and, on the console, whether each may be executed
and the receipts of executed ones. A page costs the same statements whatever its runs."""
import uuid
from datetime import datetime

from sqlalchemy import select

from core.clock import iso
from core.db import db, tenant_row
from desk import conversations
from desk.models import Conversation, Member
from rules import execution
from rules.lookup import get_rule
from rules.models import AutomationRun, AutomationRunItem

RUNS_LISTED = 30
UNFINISHED = ("queued", "running")


def _newest(tenant_id: uuid.UUID, rule_id: uuid.UUID) -> list[AutomationRun]:
    """The rule's 30 newest runs (404 for a foreign or missing rule)."""
    get_rule(tenant_id, rule_id)
    return list(db.session.scalars(select(AutomationRun).where(
        AutomationRun.tenant_id == tenant_id, AutomationRun.rule_id == rule_id)
        .order_by(AutomationRun.created_at.desc(), AutomationRun.id.desc()).limit(RUNS_LISTED)))


def _items(tenant_id: uuid.UUID, runs: list[AutomationRun]) -> dict[uuid.UUID, list[dict]]:
    """Each run's per-conversation results, most recently active conversation first (one statement)."""
    items: dict[uuid.UUID, list[dict]] = {run.id: [] for run in runs}
    if runs:
        for item in db.session.scalars(select(AutomationRunItem).join(
                Conversation, Conversation.id == AutomationRunItem.conversation_id).where(
                AutomationRunItem.tenant_id == tenant_id, AutomationRunItem.run_id.in_(items))
                .order_by(Conversation.last_activity_at.desc(), Conversation.id)):
            items[item.run_id].append(item_json(item))
    return items


def rule_runs(tenant_id: uuid.UUID, rule_id: uuid.UUID) -> dict:
    """GET /{rule_id}/rule-runs: the rule's 30 newest runs with their per-conversation results."""
    runs = _newest(tenant_id, rule_id)
    items = _items(tenant_id, runs)
    return {"runs": [run_json(run, items[run.id]) for run in runs]}


def run_json(run: AutomationRun, items: list[dict] | None = None) -> dict:
    """One run as the API shows it."""
    return {"run_id": str(run.id), "kind": run.kind, "mode": run.mode, "executed": run.executed,
            "status": run.status, "planned_for": iso(run.planned_for), "scanned": run.scanned,
            "planned_count": run.planned_count, "schedule_execution_state": run.schedule_execution_state,
            "schedule_execution_code": run.schedule_execution_code, "created_at": iso(run.created_at),
            "finished_at": iso(run.finished_at), "execution_requested_at": iso(run.execution_requested_at),
            "execution_finished_at": iso(run.execution_finished_at), "items": items or []}


def item_json(item: AutomationRunItem) -> dict:
    """One conversation's result in a run."""
    return {"conversation_id": str(item.conversation_id), "planned": item.planned,
            "target_member_id": str(item.target_member_id) if item.target_member_id else None,
            "reason": item.reason, "detail": item.detail}


# --- the console --------------------------------------------------------------------------------

def runs_page(tenant_id: uuid.UUID, rule_id: uuid.UUID, now: datetime) -> dict:
    """The console's runs section: each run with its results, the targets named, whether it may be
    executed now (or has expired) and, once executed, its receipts. At most five statements: the
    rule, the runs, their items, the receipts of every executed run, the members they name."""
    runs = _newest(tenant_id, rule_id)
    items = _items(tenant_id, runs)
    executed = {run.id for run in runs if execution.execution_started(run)}
    receipts = conversations.receipts_of(tenant_id, [execution.command_key(run_id) for run_id in executed])
    names = _member_names(tenant_id, {item["target_member_id"] for found in items.values() for item in found}
                          | {str(r.target_member_id) for found in receipts.values() for r in found})
    shown = []
    for run in runs:
        complete, fresh = run.status == "complete", execution.fresh(run, now)
        shown.append({**_run_facts(run), "executable": complete and fresh and run.id not in executed
                      and run.planned_count > 0, "expired": complete and not fresh and run.id not in executed,
                      "items": [{**item, "target_name": names.get(item["target_member_id"], "")}
                                for item in items[run.id]],
                      "execution": _execution(run.id, receipts.get(execution.command_key(run.id), []), names)
                      if run.id in executed else None})
    return {"runs": shown, "unfinished": any(run.status in UNFINISHED for run in runs)}


def check_run(tenant_id: uuid.UUID, rule_id: uuid.UUID, run_id: uuid.UUID) -> None:
    """404 unless the run is one of this tenant's runs of this rule."""
    tenant_row(AutomationRun, tenant_id, run_id, AutomationRun.rule_id == rule_id)


def execution_page(tenant_id: uuid.UUID, rule_id: uuid.UUID, run_id: uuid.UUID) -> dict:
    """One run's receipts with their targets named (404 unless it is a run of this tenant's rule)."""
    check_run(tenant_id, rule_id, run_id)
    receipts = conversations.receipts(tenant_id, execution.command_key(run_id))
    return _execution(run_id, receipts, _member_names(tenant_id, {str(r.target_member_id) for r in receipts}))


def _run_facts(run: AutomationRun) -> dict:
    """What the console shows of a run itself (times as datetimes, for the page to format)."""
    return {"run_id": str(run.id), "kind": run.kind, "status": run.status, "planned_for": run.planned_for,
            "scanned": run.scanned, "planned_count": run.planned_count,
            "schedule_execution_state": run.schedule_execution_state,
            "schedule_execution_code": run.schedule_execution_code, "created_at": run.created_at,
            "finished_at": run.finished_at}


def _execution(run_id: uuid.UUID, receipts: list, names: dict[str, str]) -> dict:
    """A run's execution as the console shows it: final or how many are still pending, each receipt
    with its target named."""
    return {"run_id": str(run_id), "final": all(r.status in execution.FINAL for r in receipts),
            "pending": sum(r.status not in execution.FINAL for r in receipts),
            "receipts": [{"conversation_id": str(r.conversation_id), "target_member_id": str(r.target_member_id),
                          "target_name": names.get(str(r.target_member_id), ""), "status": r.status,
                          "reason": r.reason, "updated_at": r.updated_at} for r in receipts]}


def _member_names(tenant_id: uuid.UUID, ids: set[str | None]) -> dict[str, str]:
    """Display names of the tenant's members with these ids (str -> name), in one statement."""
    wanted = {uuid.UUID(text) for text in ids if text}
    if not wanted:
        return {}
    rows = db.session.execute(select(Member.id, Member.display_name).where(
        Member.tenant_id == tenant_id, Member.id.in_(wanted)))
    return {str(row.id): row.display_name for row in rows}
