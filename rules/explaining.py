"""Why a rule gave a conversation to someone: the workbench's thread shows it beside each automated
reassignment (the app factory hands `explain` to the desk, which cannot import the rules)."""
import uuid

from sqlalchemy import select

from core.db import db
from desk.models import AssignmentReceipt
from rules.execution import KEY_PREFIX
from rules.models import AutomationRule, AutomationRun, AutomationRunItem


def _run_id(command_key: str) -> uuid.UUID | None:
    """The run a command key names, or None for a key of another kind."""
    if not command_key.startswith(KEY_PREFIX):
        return None
    try:
        return uuid.UUID(command_key.removeprefix(KEY_PREFIX))
    except ValueError:
        return None


def explain(tenant_id: uuid.UUID, receipts: list[AssignmentReceipt]) -> dict[uuid.UUID, dict]:
    """For each applied receipt of the tenant, by receipt id: the rule (id, name), the revision,
    the run's trigger (`manual`, `scheduled`, `message_event`), the plan's reason and detail (slot,
    keyword, semantic label and confidence) and the run id. Two statements for any number."""
    run_ids = {receipt.id: _run_id(receipt.command_key) for receipt in receipts}
    wanted = {run_id for run_id in run_ids.values() if run_id is not None}
    if not wanted:
        return {}
    runs = {run.id: (run, name) for run, name in db.session.execute(
        select(AutomationRun, AutomationRule.name).join(AutomationRule, AutomationRule.id == AutomationRun.rule_id)
        .where(AutomationRun.tenant_id == tenant_id, AutomationRun.id.in_(wanted)))}
    items = {(item.run_id, item.conversation_id): item for item in db.session.scalars(select(AutomationRunItem).where(
        AutomationRunItem.tenant_id == tenant_id, AutomationRunItem.run_id.in_(wanted),
        AutomationRunItem.conversation_id.in_({receipt.conversation_id for receipt in receipts})))}
    explained = {}
    for receipt in receipts:
        run_id = run_ids[receipt.id]
        if run_id not in runs:
            continue
        run, name = runs[run_id]
        item = items.get((run_id, receipt.conversation_id))
        explained[receipt.id] = {
            "rule_id": run.rule_id, "rule_name": name, "revision": run.revision, "trigger": run.kind,
            "run_id": run.id, "reason": item.reason if item else None, "detail": (item.detail or {}) if item else {}}
    return explained
