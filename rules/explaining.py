"""Why a rule gave a conversation to someone: the workbench's thread shows it beside each automated
reassignment (the app factory hands `explain` to the desk, which cannot import the rules)."""
import uuid

from flask_babel import lazy_gettext as _l
from sqlalchemy import select

from core.db import db
from desk.models import AssignmentReceipt
from rules.execution import KEY_PREFIX
from rules.models import AutomationRule, AutomationRun, AutomationRunItem

# How the thread words the reasons of a planned assignment (others read as their code, spaced)
# and the facts of the plan's detail (lazy: translated when the thread is shown).
REASON_LABELS = {"keyword_matched": _l("keyword matched"), "semantic_matched": _l("semantic matched"),
                 "slot_matched": _l("slot matched")}
WEEKDAYS = {1: _l("weekday 1"), 2: _l("weekday 2"), 3: _l("weekday 3"), 4: _l("weekday 4"), 5: _l("weekday 5"),
            6: _l("weekday 6"), 7: _l("weekday 7")}
FACTS = {
    "keyword": lambda value: _l("keyword %(value)s", value=value),
    "label": lambda value: _l("label %(value)s", value=value),
    "confidence": lambda value: _l("confidence %(value)s", value=value),
    "time": lambda value: _l("time %(value)s", value=value),
    "weekday": lambda value: WEEKDAYS[value] if value in WEEKDAYS else _l("weekday %(value)s", value=value),
}
HIDDEN_FACTS = ("assignee_ref",)  # the target shows as the assignee's name


def _run_id(command_key: str) -> uuid.UUID | None:
    """The run a command key names, or None for a key of another kind."""
    if not command_key.startswith(KEY_PREFIX):
        return None
    try:
        return uuid.UUID(command_key.removeprefix(KEY_PREFIX))
    except ValueError:
        return None


def facts(detail: dict) -> list:
    """The plan's detail as the thread reads it, one fact per key (a key without wording as
    `key value`), without the target's id."""
    return [FACTS[key](value) if key in FACTS else f"{key} {value}"
            for key, value in detail.items() if key not in HIDDEN_FACTS]


def explain(tenant_id: uuid.UUID, receipts: list[AssignmentReceipt]) -> dict[uuid.UUID, dict]:
    """For each applied receipt of the tenant, by receipt id: the rule (id, name), the revision,
    the run's trigger (`manual`, `scheduled`, `message_event`), the plan's reason and detail (slot,
    keyword, semantic label and confidence), both also worded for the thread (`reason_label`,
    `facts`), and the run id. Two statements for any number."""
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
        reason, detail = (item.reason, item.detail or {}) if item else (None, {})
        explained[receipt.id] = {
            "rule_id": run.rule_id, "rule_name": name, "revision": run.revision, "trigger": run.kind,
            "run_id": run.id, "reason": reason, "detail": detail, "reason_label": REASON_LABELS.get(reason),
            "facts": facts(detail)}
    return explained
