"""The atomic assignment adapter (document 2): a command reassigns a conversation only while it is
exactly as snapshotted, its receipt moves in the same transaction, and it is applied at most once,
also under concurrency and after a worker dies between the write and its report."""
import subprocess
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from core.api import ApiError
from core.clock import utcnow
from core.config import PROJECT_ROOT
from core.db import db
from desk import conversations as adapter
from desk.conversations import (apply_command, cancel_commands, mark_sending, queue_commands, receipts,
                                reject_command, resolve_uncertain, snapshot)
from desk.models import AssignmentReceipt, Conversation, Customer
from tests.conftest import process_env, seat
from tests.support.desk import stop_the_clock

ONE_MICROSECOND = timedelta(microseconds=1)
KEY = "run:test-plan"


def open_conversations(tenant, count: int) -> list[uuid.UUID]:
    """`count` open, unassigned conversations of the tenant, committed."""
    customer = Customer(tenant_id=tenant.id, name="Wang Fang")
    db.session.add(customer)
    db.session.flush()
    found = [Conversation(tenant_id=tenant.id, customer_id=customer.id) for _ in range(count)]
    db.session.add_all(found)
    db.session.commit()
    return [conversation.id for conversation in found]


def stored(conversation_id: uuid.UUID):
    """The conversation's columns as committed, read past the session's identity map."""
    db.session.rollback()
    return db.session.execute(select(
        Conversation.status, Conversation.assignee_member_id, Conversation.bot_active,
        Conversation.updated_at, Conversation.last_activity_at).where(Conversation.id == conversation_id)).one()


def receipt(conversation_id: uuid.UUID, key: str = KEY):
    """The receipt's columns as committed."""
    db.session.rollback()
    return db.session.execute(select(AssignmentReceipt.status, AssignmentReceipt.reason,
                                     AssignmentReceipt.updated_at).where(
        AssignmentReceipt.command_key == key, AssignmentReceipt.conversation_id == conversation_id)).one()


def plan(tenant, target, conversation_ids, key: str = KEY) -> int:
    """Snapshot the conversations now and queue a command for each to `target`; committed."""
    rows = db.session.execute(select(*Conversation.__table__.c).where(Conversation.id.in_(conversation_ids))).all()
    queued = queue_commands(tenant.id, key, [(row.id, target.id, snapshot(row)) for row in rows])
    db.session.commit()
    return queued


def change(conversation_id: uuid.UUID, **values) -> None:
    """Another writer's committed change of the conversation."""
    db.session.execute(update(Conversation).where(Conversation.id == conversation_id).values(**values))
    db.session.commit()


@pytest.fixture
def conversation_id(tenant) -> uuid.UUID:
    return open_conversations(tenant, 1)[0]


@pytest.fixture
def other_agent(tenant):
    return seat(tenant, "agent")


def test_the_snapshot_is_json_with_the_update_time_to_the_microsecond(tenant, agent, conversation_id):
    found = db.session.get(Conversation, conversation_id)
    taken = snapshot(found)
    assert taken == {"tenant_id": str(tenant.id), "conversation_id": str(conversation_id),
                     "assignee_member_id": None, "bot_active": False, "status": "open",
                     "updated_at": found.updated_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
    found.assignee_member_id = agent.id
    db.session.commit()
    assert snapshot(found)["assignee_member_id"] == str(agent.id)


def test_a_command_whose_snapshot_matches_is_applied_and_moves_the_update_time(
        tenant, agent, conversation_id):
    before = stored(conversation_id)
    assert plan(tenant, agent, [conversation_id]) == 1
    assert apply_command(tenant.id, KEY, conversation_id) == "applied"
    after = stored(conversation_id)
    assert after.assignee_member_id == agent.id
    assert after.updated_at > before.updated_at
    assert receipt(conversation_id).status == "applied"


def test_the_adapters_update_moves_the_update_time_by_a_microsecond_within_one_clock_tick(
        tenant, agent, conversation_id, monkeypatch):
    before = stored(conversation_id).updated_at
    plan(tenant, agent, [conversation_id])
    stop_the_clock(monkeypatch, before)
    assert apply_command(tenant.id, KEY, conversation_id) == "applied"
    assert stored(conversation_id).updated_at == before + ONE_MICROSECOND


@pytest.mark.parametrize("field", ["status", "assignee", "bot_active", "any_other_write",
                                   "a_write_changed_back", "a_unit_of_work_write"])
def test_a_conversation_changed_since_its_snapshot_is_state_changed_and_nothing_overwritten(
        tenant, agent, other_agent, conversation_id, field):
    plan(tenant, agent, [conversation_id])
    if field == "status":
        change(conversation_id, status="pending")
    elif field == "assignee":
        change(conversation_id, assignee_member_id=other_agent.id)
    elif field == "bot_active":
        change(conversation_id, bot_active=True)
    elif field == "any_other_write":  # only the update time tells it
        change(conversation_id, last_activity_at=utcnow())
    elif field == "a_write_changed_back":
        change(conversation_id, status="resolved")
        change(conversation_id, status="open")
    else:
        found = db.session.get(Conversation, conversation_id)
        found.last_activity_at = utcnow()
        db.session.commit()
    before = stored(conversation_id)
    assert apply_command(tenant.id, KEY, conversation_id) == "state_changed"
    assert stored(conversation_id) == before  # nothing overwritten, not even the update time
    assert receipt(conversation_id).status == "state_changed"


@pytest.mark.parametrize("values", [{"status": "pending"}, {"bot_active": True}, {"assignee": True},
                                    {"tenant": True}], ids=["status", "bot_active", "assignee", "tenant"])
def test_each_snapshot_field_is_compared_even_when_the_update_time_was_set_back_by_hand(
        tenant, other_tenant, agent, other_agent, conversation_id, values):
    plan(tenant, agent, [conversation_id])
    if values.pop("assignee", False):
        values["assignee_member_id"] = other_agent.id
    if values.pop("tenant", False):  # the same row id can never be reassigned for another tenant
        values["tenant_id"] = other_tenant.id
    kept = stored(conversation_id).updated_at
    change(conversation_id, **values, updated_at=kept)  # an explicit value overrides changed_time
    before = stored(conversation_id)
    assert before.updated_at == kept
    outcome = apply_command(tenant.id, KEY, conversation_id)
    assert outcome == "state_changed"
    assert stored(conversation_id) == before


def test_a_command_beaten_by_another_planned_from_the_same_state_is_a_command_conflict(
        tenant, agent, other_agent, conversation_id):
    plan(tenant, agent, [conversation_id], key="run:first")
    plan(tenant, other_agent, [conversation_id], key="run:second")  # the same snapshot, another plan
    assert apply_command(tenant.id, "run:first", conversation_id) == "applied"
    before = stored(conversation_id)
    assert apply_command(tenant.id, "run:second", conversation_id) == "command_conflict"
    assert stored(conversation_id) == before  # the first command's assignment stands
    assert receipt(conversation_id, "run:second").status == "command_conflict"


def test_a_change_by_a_person_after_another_commands_older_assignment_is_state_changed(
        tenant, agent, other_agent, conversation_id):
    plan(tenant, agent, [conversation_id], key="run:first")
    assert apply_command(tenant.id, "run:first", conversation_id) == "applied"
    plan(tenant, agent, [conversation_id], key="run:second")  # snapshotted after the first applied
    change(conversation_id, assignee_member_id=other_agent.id)
    assert apply_command(tenant.id, "run:second", conversation_id) == "state_changed"


def test_open_commands_are_the_pending_and_sending_ones_of_the_prefix_unchanged_since_the_cutoff(
        tenant, agent):
    ids = open_conversations(tenant, 4)
    plan(tenant, agent, ids)
    plan(tenant, agent, ids[:1], key="other:key")
    assert mark_sending(tenant.id, KEY, ids[1])
    db.session.commit()
    assert apply_command(tenant.id, KEY, ids[2]) == "applied"
    cutoff = utcnow() - timedelta(minutes=1)  # the receipts of ids[3] stay newer
    db.session.execute(update(AssignmentReceipt).where(AssignmentReceipt.conversation_id != ids[3])
                       .values(updated_at=cutoff - ONE_MICROSECOND))
    db.session.commit()
    found = adapter.open_commands("run:", cutoff)
    assert {tuple(row) for row in found} == {(tenant.id, KEY, ids[0], "pending"), (tenant.id, KEY, ids[1], "sending")}
    assert adapter.open_commands("run:_", cutoff) == []  # the prefix is literal, not a pattern


def test_queueing_the_same_commands_twice_creates_one_receipt_each(tenant, agent, other_agent):
    ids = open_conversations(tenant, 3)
    assert plan(tenant, agent, ids) == 3
    assert plan(tenant, other_agent, ids) == 0  # a replay keeps the original command
    assert plan(tenant, agent, ids[:1] + open_conversations(tenant, 1)) == 1
    assert db.session.scalar(select(func.count()).select_from(AssignmentReceipt)) == 4
    assert {found.target_member_id for found in receipts(tenant.id, KEY)} == {agent.id}


def test_applying_a_command_twice_applies_it_once_and_the_second_writes_nothing(
        tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    assert apply_command(tenant.id, KEY, conversation_id) == "applied"
    first, first_receipt = stored(conversation_id), receipt(conversation_id)
    assert apply_command(tenant.id, KEY, conversation_id) == "applied"
    assert stored(conversation_id) == first
    assert stored(conversation_id).updated_at == first.updated_at
    assert receipt(conversation_id) == first_receipt


def test_with_atomic_assignment_off_applying_is_503_and_writes_nothing(
        app, tenant, agent, conversation_id, monkeypatch):
    plan(tenant, agent, [conversation_id])
    before = stored(conversation_id)
    monkeypatch.setitem(app.config, "ATOMIC_ASSIGNMENT_ENABLED", False)
    with pytest.raises(ApiError) as refused:
        apply_command(tenant.id, KEY, conversation_id)
    assert (refused.value.code, refused.value.status) == ("atomic_assignment_disabled", 503)
    assert stored(conversation_id) == before
    assert receipt(conversation_id).status == "pending"


def test_another_tenant_can_neither_apply_nor_see_nor_change_the_commands(
        tenant, other_tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    before = stored(conversation_id)
    with pytest.raises(ApiError) as refused:
        apply_command(other_tenant.id, KEY, conversation_id)
    assert (refused.value.code, refused.value.status) == ("not_found", 404)
    assert not mark_sending(other_tenant.id, KEY, conversation_id)
    with pytest.raises(ApiError):
        reject_command(other_tenant.id, KEY, conversation_id, "member_invalid")
    with pytest.raises(ApiError):
        resolve_uncertain(other_tenant.id, KEY, conversation_id)
    assert cancel_commands(other_tenant.id, [KEY]) == 0
    assert receipts(other_tenant.id, KEY) == []
    db.session.commit()
    assert stored(conversation_id) == before
    assert receipt(conversation_id).status == "pending"


def test_commands_for_another_tenants_conversation_or_member_are_not_queued(
        tenant, other_tenant, agent, conversation_id):
    foreign_conversation = open_conversations(other_tenant, 1)[0]
    foreign_member = seat(other_tenant, "agent")
    seen = snapshot(db.session.get(Conversation, foreign_conversation))
    with pytest.raises(ApiError) as refused:
        queue_commands(other_tenant.id, KEY, [(foreign_conversation, agent.id, seen)])
    assert refused.value.code == "not_found"
    db.session.rollback()
    with pytest.raises(ApiError):
        plan(tenant, foreign_member, [conversation_id])
    db.session.rollback()
    with pytest.raises(ValueError):  # a snapshot of another tenant's conversation is no command
        queue_commands(tenant.id, KEY, [(conversation_id, agent.id, seen)])
    db.session.rollback()
    assert db.session.scalar(select(func.count()).select_from(AssignmentReceipt)) == 0


def test_a_key_queued_by_another_tenant_is_never_taken_over(tenant, other_tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    assert receipts(other_tenant.id, KEY) == []
    assert [found.tenant_id for found in receipts(tenant.id, KEY)] == [tenant.id]


def test_cancelling_a_key_cancels_only_its_pending_commands(tenant, agent):
    ids = open_conversations(tenant, 4)
    plan(tenant, agent, ids)
    assert mark_sending(tenant.id, KEY, ids[0])
    db.session.commit()
    assert apply_command(tenant.id, KEY, ids[1]) == "applied"
    assert cancel_commands(tenant.id, [KEY]) == 2
    db.session.commit()
    assert [receipt(cid).status for cid in ids] == ["sending", "applied", "cancelled", "cancelled"]
    before = stored(ids[2])
    assert apply_command(tenant.id, KEY, ids[2]) == "cancelled"  # a cancelled command never writes
    assert stored(ids[2]) == before
    assert apply_command(tenant.id, KEY, ids[0]) == "applied"  # an already sent one may complete


def test_a_rejected_command_keeps_its_reason_and_never_writes(tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    assert mark_sending(tenant.id, KEY, conversation_id)
    assert reject_command(tenant.id, KEY, conversation_id, "member_invalid") == "rejected"
    db.session.commit()
    assert receipt(conversation_id)[:2] == ("rejected", "member_invalid")
    before = stored(conversation_id)
    assert apply_command(tenant.id, KEY, conversation_id) == "rejected"
    assert stored(conversation_id) == before


def test_a_finished_command_cannot_be_rejected_or_marked_sending(tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    assert apply_command(tenant.id, KEY, conversation_id) == "applied"
    assert reject_command(tenant.id, KEY, conversation_id, "rule_paused") == "applied"
    assert not mark_sending(tenant.id, KEY, conversation_id)
    db.session.commit()
    assert receipt(conversation_id)[:2] == ("applied", None)


def test_a_command_rejected_while_it_was_being_applied_rolls_its_reassignment_back(
        app, tenant, agent, conversation_id, monkeypatch):
    plan(tenant, agent, [conversation_id])
    before, tenant_id = stored(conversation_id), tenant.id
    assign = adapter.assign_if_unchanged

    def rejected_meanwhile(*args):  # another worker's recheck fails after this one read the receipt
        def reject():
            with app.app_context():
                reject_command(tenant_id, KEY, conversation_id, "rule_paused")
                db.session.commit()
        other = threading.Thread(target=reject)
        other.start()
        other.join(20)
        return assign(*args)

    monkeypatch.setattr(adapter, "assign_if_unchanged", rejected_meanwhile)
    assert apply_command(tenant.id, KEY, conversation_id) == "rejected"
    assert stored(conversation_id) == before
    assert receipt(conversation_id)[:2] == ("rejected", "rule_paused")


def test_apply_refuses_to_run_inside_a_unit_of_work_that_has_written(tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    mark_sending(tenant.id, KEY, conversation_id)  # not committed
    with pytest.raises(RuntimeError):
        apply_command(tenant.id, KEY, conversation_id)
    db.session.rollback()
    assert receipt(conversation_id).status == "pending"


def test_resolving_finds_an_applied_receipt_applied(tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    mark_sending(tenant.id, KEY, conversation_id)
    db.session.commit()
    apply_command(tenant.id, KEY, conversation_id)
    assert resolve_uncertain(tenant.id, KEY, conversation_id) == "applied"
    db.session.commit()
    assert receipt(conversation_id)[:2] == ("applied", None)


def test_resolving_a_sending_command_that_never_committed_marks_it_uncertain_without_resending(
        tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    mark_sending(tenant.id, KEY, conversation_id)
    db.session.commit()
    before = stored(conversation_id)
    assert resolve_uncertain(tenant.id, KEY, conversation_id) == "uncertain"
    db.session.commit()
    assert receipt(conversation_id)[:2] == ("uncertain", "interrupted")
    assert stored(conversation_id) == before  # nothing was sent again
    assert resolve_uncertain(tenant.id, KEY, conversation_id) == "uncertain"


def test_resolving_a_command_never_sent_leaves_it_pending(tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    assert resolve_uncertain(tenant.id, KEY, conversation_id) == "pending"
    db.session.commit()
    assert receipt(conversation_id).status == "pending"


def test_an_uncertain_command_applied_later_still_compares_its_snapshot(
        tenant, agent, other_agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    mark_sending(tenant.id, KEY, conversation_id)
    db.session.commit()
    resolve_uncertain(tenant.id, KEY, conversation_id)
    db.session.commit()
    change(conversation_id, assignee_member_id=other_agent.id)
    assert apply_command(tenant.id, KEY, conversation_id) == "state_changed"
    assert stored(conversation_id).assignee_member_id == other_agent.id


# --- Concurrency (PostgreSQL in CI; they run on SQLite too) ---------------------------------------

def in_own_context(app, work, *args):
    """Run `work` in a fresh app context: its own database session, as another worker has."""
    with app.app_context():
        return work(*args)


def test_a_plan_applied_while_another_writer_changes_some_conversations_overwrites_none_of_them(
        app, tenant, agent, other_agent):
    ids = open_conversations(tenant, 20)
    plan(tenant, agent, ids)
    changes = {ids[1]: {"status": "pending"}, ids[6]: {"assignee_member_id": other_agent.id},
               ids[10]: {"bot_active": True}, ids[14]: {"last_activity_at": utcnow()},
               ids[19]: {"status": "resolved", "assignee_member_id": other_agent.id}}
    holding, tenant_id = threading.Event(), tenant.id

    def other_writer():  # writes its changes, holds the rows while the plan's workers run, commits
        for conversation_id, values in changes.items():
            db.session.execute(update(Conversation).where(
                Conversation.id == conversation_id, Conversation.tenant_id == tenant_id).values(**values))
        holding.set()
        time.sleep(0.5)
        db.session.commit()

    with ThreadPoolExecutor(9) as pool:
        writer = pool.submit(in_own_context, app, other_writer)
        assert holding.wait(20)
        outcomes = dict(zip(ids, pool.map(lambda cid: in_own_context(app, apply_command, tenant_id, KEY, cid), ids)))
        writer.result()
    assert {cid for cid, outcome in outcomes.items() if outcome == "state_changed"} == set(changes)
    assert {cid for cid, outcome in outcomes.items() if outcome == "applied"} == set(ids) - set(changes)
    for cid in ids:
        row, values = stored(cid), changes.get(cid, {})
        assert receipt(cid).status == outcomes[cid]
        assert row.assignee_member_id == values.get("assignee_member_id", None if cid in changes else agent.id)
        assert row.status == values.get("status", "open")
        assert row.bot_active == values.get("bot_active", False)


@pytest.mark.parametrize("workers", [2, 8])
def test_workers_racing_on_the_same_command_apply_it_once(app, tenant, agent, conversation_id, monkeypatch,
                                                          workers):
    before = stored(conversation_id).updated_at
    plan(tenant, agent, [conversation_id])
    stop_the_clock(monkeypatch, before)  # every write moves the update time by exactly a microsecond
    all_read, writes = threading.Barrier(workers), []
    assign = adapter.assign_if_unchanged

    def after_all_have_read(*args):  # every worker has seen the receipt pending before any writes
        all_read.wait(20)
        writes.append(assign(*args))
        return writes[-1]

    monkeypatch.setattr(adapter, "assign_if_unchanged", after_all_have_read)
    tenant_id = tenant.id
    with ThreadPoolExecutor(workers) as pool:
        outcomes = list(pool.map(lambda _: in_own_context(app, apply_command, tenant_id, KEY, conversation_id),
                                 range(workers)))
    assert outcomes == ["applied"] * workers
    assert writes.count(True) == 1  # one reassignment; every other worker's matched nothing
    after = stored(conversation_id)
    assert after.assignee_member_id == agent.id
    assert after.updated_at == before + ONE_MICROSECOND  # written once
    assert receipt(conversation_id).status == "applied"
    assert [found.status for found in receipts(tenant.id, KEY)] == ["applied"]


DIE_IN_APPLY = """
import os, sys, uuid
from sqlalchemy import event
from sqlalchemy.orm import Session
from app import create_app
from desk.conversations import apply_command

event.listen(Session, sys.argv[4], lambda *args: os._exit(1))  # killed before reporting
with create_app().app_context():
    print(apply_command(uuid.UUID(sys.argv[1]), sys.argv[2], uuid.UUID(sys.argv[3])))
"""


def run_worker_killed(app_config, tenant, conversation_id, moment: str) -> subprocess.CompletedProcess:
    """A worker process that applies the command and is killed at `moment` of its commit."""
    return subprocess.run([sys.executable, "-c", DIE_IN_APPLY, str(tenant.id), KEY, str(conversation_id), moment],
                          cwd=PROJECT_ROOT, env=process_env(app_config), capture_output=True, text=True,
                          timeout=120)


def test_a_worker_killed_after_its_commit_is_resolved_as_applied_without_resending(
        app_config, tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    assert mark_sending(tenant.id, KEY, conversation_id)
    db.session.commit()
    killed = run_worker_killed(app_config, tenant, conversation_id, "after_commit")
    assert killed.returncode == 1 and killed.stdout == "", killed.stderr
    written = stored(conversation_id)
    assert written.assignee_member_id == agent.id
    assert resolve_uncertain(tenant.id, KEY, conversation_id) == "applied"
    db.session.commit()
    assert receipt(conversation_id)[:2] == ("applied", None)
    assert stored(conversation_id) == written  # looked up, never sent again


def test_a_worker_killed_before_its_commit_is_resolved_as_uncertain_with_nothing_written(
        app_config, tenant, agent, conversation_id):
    plan(tenant, agent, [conversation_id])
    assert mark_sending(tenant.id, KEY, conversation_id)
    db.session.commit()
    before = stored(conversation_id)
    killed = run_worker_killed(app_config, tenant, conversation_id, "before_commit")
    assert killed.returncode == 1 and killed.stdout == "", killed.stderr
    assert stored(conversation_id) == before
    assert resolve_uncertain(tenant.id, KEY, conversation_id) == "uncertain"
    db.session.commit()
    assert receipt(conversation_id)[:2] == ("uncertain", "interrupted")
    assert stored(conversation_id) == before


def test_only_an_uncertain_command_reopens_and_then_still_compares_its_snapshot(tenant, other_tenant, agent,
                                                                                  other_agent):
    uncertain, applied, changed = ids = open_conversations(tenant, 3)
    plan(tenant, agent, ids)
    for conversation_id in (uncertain, changed):
        assert mark_sending(tenant.id, KEY, conversation_id)
    db.session.commit()
    for conversation_id in (uncertain, changed):
        assert resolve_uncertain(tenant.id, KEY, conversation_id) == "uncertain"
    db.session.commit()
    assert apply_command(tenant.id, KEY, applied) == "applied"
    assert not adapter.reopen_uncertain(tenant.id, KEY, applied)
    assert not adapter.reopen_uncertain(other_tenant.id, KEY, uncertain)  # never another tenant's
    assert adapter.reopen_uncertain(tenant.id, KEY, uncertain) and adapter.reopen_uncertain(tenant.id, KEY, changed)
    db.session.commit()
    assert receipt(uncertain).status == "pending"
    change(changed, assignee_member_id=other_agent.id)
    assert apply_command(tenant.id, KEY, uncertain) == "applied"
    assert apply_command(tenant.id, KEY, changed) == "state_changed"
    assert stored(changed).assignee_member_id == other_agent.id

