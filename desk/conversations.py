"""Reading a conversation and its messages for the workbench, always inside one tenant; the changes
people make by hand (assignee, status); and the atomic assignment adapter, the one writer of
automated reassignments (document 2). Both writers are compare-and-swap statements that move the
conversation's change stamp (`updated_at`), so neither ever overwrites the other."""
import uuid
from datetime import datetime
from functools import cache

from flask import current_app
from sqlalchemy import Row, bindparam, literal, select, update
from sqlalchemy.sql import Update

from core.api import ApiError
from core.clock import iso, utcnow
from core.db import WROTE, db, tenant_row
from core.once import CreateOnce
from desk import service_timers, waiting
from desk.models import (CONVERSATION_STATUSES, AssignmentReceipt, Conversation, ConversationEvent, Member,
                         Message)


def get_conversation(tenant_id: uuid.UUID, conversation_id: uuid.UUID) -> Conversation:
    """One conversation of the tenant; a foreign id is indistinguishable from a missing one."""
    return tenant_row(Conversation, tenant_id, conversation_id)


def conversation_messages(conversation: Conversation) -> list[Message]:
    """The conversation's messages and notes in order."""
    return list(db.session.scalars(select(Message).where(
        Message.conversation_id == conversation.id, Message.tenant_id == conversation.tenant_id)
        .order_by(Message.created_at)))


# --- Changes by hand (the workbench) --------------------------------------------------------------
# A person's change is applied only while the conversation's assignee and status are still what
# the person saw; it moves the change stamp, so an automated command planned before it finds the
# conversation changed and ends `state_changed`. Each change is an event in the thread.

UNCHANGED = object()  # "leave this field as it is" in change_by_hand
REASSIGNING_ROLES = ("admin", "supervisor")  # agents take free conversations and let go of their own


def assignable_member(tenant_id: uuid.UUID, member_id: uuid.UUID) -> Member:
    """An active member of the tenant who can be given conversations; else 409 member_unavailable
    (inactive, missing and foreign members alike)."""
    member = db.session.scalar(select(Member).where(
        Member.id == member_id, Member.tenant_id == tenant_id, Member.active.is_(True)))
    if member is None:
        raise ApiError("member_unavailable", 409)
    return member


def _may_assign(actor: Member, before: uuid.UUID | None, after: uuid.UUID | None) -> bool:
    """Supervisors and administrators assign freely; an agent takes an unassigned conversation
    for themself or lets go of their own."""
    if actor.role in REASSIGNING_ROLES:
        return True
    return (before is None and after == actor.id) or (before == actor.id and after is None)


def change_by_hand(tenant_id: uuid.UUID, actor: Member, conversation_id: uuid.UUID, expected_assignee: uuid.UUID | None,
                   expected_status: str, assignee=UNCHANGED, status: str | None = None,
                   snooze: datetime | None = None) -> Conversation:
    """Set the conversation's assignee (a member id or None) and/or status as `actor`, only while
    they are still `expected_assignee` and `expected_status`; records one event per field changed.
    `snooze`: pending until then (`desk.snooze`); any other change of status ends a snooze.

    404 not_found for a foreign conversation; 403 reassign_forbidden when an agent would take
    another's conversation; 409 member_unavailable for an inactive or foreign assignee; 409
    conversation_changed when someone (a person or a rule) changed it meanwhile, or merged it (a merged
    conversation stays resolved). Flushes only.
    """
    conversation = get_conversation(tenant_id, conversation_id)
    values, events = {}, []
    if snooze is not None:
        status = "pending"
    if assignee is not UNCHANGED and assignee != expected_assignee:
        if not _may_assign(actor, expected_assignee, assignee):
            raise ApiError("reassign_forbidden", 403)
        if assignee is not None:
            assignable_member(tenant_id, assignee)
        values["assignee_member_id"], values["assigned_at"] = assignee, utcnow()
        events.append(("assignment", expected_assignee, assignee))
    if status is not None and status != expected_status:
        if status not in CONVERSATION_STATUSES:
            raise ApiError("invalid_status", 400)
        values["status"] = status
        events.append(("status", expected_status, status))
    if snooze is not None:
        values["snoozed_until"] = snooze
        events.append(("snooze", None, iso(snooze)))
    elif "status" in values:
        values["snoozed_until"] = None
    if not values:
        return conversation
    changed = db.session.execute(update(Conversation).where(
        Conversation.id == conversation.id, Conversation.tenant_id == tenant_id,
        Conversation.status == expected_status, Conversation.assignee_member_id.is_not_distinct_from(expected_assignee),
        Conversation.merged_into_id.is_(None))
        .values(**values).execution_options(synchronize_session=False)).rowcount
    if changed != 1:
        raise ApiError("conversation_changed", 409)
    waiting.leave(tenant_id, conversation.id)  # a change by hand takes it out of the waiting queue
    now = utcnow()
    if "status" in values:
        service_timers.on_status(tenant_id, conversation.id, status, actor.id, now)
    db.session.add_all(ConversationEvent(
        tenant_id=tenant_id, conversation_id=conversation.id, actor_member_id=actor.id, kind=kind,
        before=None if before is None else str(before), after=None if after is None else str(after), created_at=now)
        for kind, before, after in events)
    db.session.flush()
    db.session.refresh(conversation)
    return conversation


def conversation_events(conversation: Conversation) -> list[ConversationEvent]:
    """The changes people made to the conversation, in order."""
    return list(db.session.scalars(select(ConversationEvent).where(
        ConversationEvent.conversation_id == conversation.id, ConversationEvent.tenant_id == conversation.tenant_id)
        .order_by(ConversationEvent.created_at)))


def applied_receipts(conversation: Conversation) -> list[AssignmentReceipt]:
    """The automated reassignments of the conversation (its applied commands), in order."""
    return list(db.session.scalars(select(AssignmentReceipt).where(
        AssignmentReceipt.conversation_id == conversation.id, AssignmentReceipt.tenant_id == conversation.tenant_id,
        AssignmentReceipt.status == "applied").order_by(AssignmentReceipt.updated_at)))


# --- The atomic assignment adapter (document 2, "States and transitions") -----------------------
# `rules/` plans and rechecks; this is the only code that writes an automated reassignment. Every
# command is a receipt created once per (command key, conversation); the reassignment and the
# receipt's outcome are written in one transaction by conditional UPDATEs, so a changed
# conversation is never overwritten and a command racing itself is applied once.

OPEN_RECEIPT_STATES = ("pending", "sending", "uncertain")  # the adapter may still decide these
RECEIPTS = CreateOnce(AssignmentReceipt, ("command_key", "conversation_id"))


def snapshot(conversation) -> dict:
    """The atomic snapshot of a conversation, a Conversation or a Row of its columns (`snapshot_of`)."""
    return snapshot_of(tenant_id=conversation.tenant_id, conversation_id=conversation.id,
                       assignee_member_id=conversation.assignee_member_id, bot_active=conversation.bot_active,
                       status=conversation.status, updated_at=conversation.updated_at)


SNAPSHOT_COLUMNS = ("assignee_member_id", "bot_active", "status", "updated_at")  # of the conversation, by name


def snapshot_of(*, tenant_id: uuid.UUID, conversation_id: uuid.UUID, assignee_member_id: uuid.UUID | None,
                bot_active: bool, status: str, updated_at: datetime) -> dict:
    """What the adapter compares before it writes, JSON-storable; `updated_at` to the microsecond,
    UTC."""
    return {"tenant_id": str(tenant_id), "conversation_id": str(conversation_id),
            "assignee_member_id": None if assignee_member_id is None else str(assignee_member_id),
            "bot_active": bool(bot_active), "status": status, "updated_at": iso(updated_at)}


def queue_commands(tenant_id: uuid.UUID, command_key: str,
                   commands: list[tuple[uuid.UUID, uuid.UUID, dict]]) -> int:
    """Create one `pending` receipt per (conversation_id, target_member_id, snapshot) under
    `command_key`, once: a command already queued under the key keeps its receipt (its original
    target and snapshot). Conversations and members must be the tenant's (else 404 not_found,
    nothing created); flushes, the caller commits. Returns how many receipts were new."""
    conversation_ids = {conversation_id for conversation_id, _, _ in commands}
    member_ids = {member_id for _, member_id, _ in commands}
    if len(conversation_ids) != len(commands):
        raise ValueError("one command per conversation under a key")
    for conversation_id, _, expected in commands:
        if expected["tenant_id"] != str(tenant_id) or expected["conversation_id"] != str(conversation_id):
            raise ValueError("the snapshot is of another conversation")
    own_conversations = set(db.session.scalars(select(Conversation.id).where(
        Conversation.tenant_id == tenant_id, Conversation.id.in_(conversation_ids))))
    own_members = set(db.session.scalars(select(Member.id).where(
        Member.tenant_id == tenant_id, Member.id.in_(member_ids))))
    if own_conversations != conversation_ids or own_members != member_ids:
        raise ApiError("not_found", 404)
    created = 0
    now = utcnow()
    for conversation_id, member_id, expected in commands:
        row, replayed = RECEIPTS.insert({
            "id": uuid.uuid4(), "tenant_id": tenant_id, "command_key": command_key,
            "conversation_id": conversation_id, "target_member_id": member_id, "snapshot": expected,
            "status": "pending", "reason": None, "created_at": now, "updated_at": now})
        if row.tenant_id != tenant_id:  # a key is one tenant's: another's twin is never touched
            raise ApiError("not_found", 404)
        created += not replayed
    db.session.flush()
    return created


# The adapter's own statements, built once (Core statements on the tables: a command is three
# small statements and a commit, so building them per call would cost a third of its time).
_RECEIPT, _CONVERSATION = AssignmentReceipt.__table__, Conversation.__table__
_THE_RECEIPT = (_RECEIPT.c.tenant_id == bindparam("p_tenant"), _RECEIPT.c.command_key == bindparam("p_command_key"),
                _RECEIPT.c.conversation_id == bindparam("p_conversation"))
_READ_RECEIPT = select(_RECEIPT.c.status, _RECEIPT.c.target_member_id, _RECEIPT.c.snapshot).where(*_THE_RECEIPT)


@cache
def _move_receipt(before: tuple[str, ...]) -> Update:
    """The receipt's conditional move out of the `before` states (a fixed list, no expanding IN)."""
    return update(_RECEIPT).where(*_THE_RECEIPT, _RECEIPT.c.status.in_([literal(state) for state in before])) \
        .values(status=bindparam("p_status"), reason=bindparam("p_reason"), reason_code=bindparam("p_reason_code"),
                updated_at=bindparam("p_now"))


# The compare-and-swap: only while tenant, status, assignee, bot and the update time (to the
# microsecond) are as snapshotted. The table's UPDATE moves `updated_at` (its `changed_time`).
_ASSIGN_IF_UNCHANGED = update(_CONVERSATION).where(
    _CONVERSATION.c.id == bindparam("p_conversation"), _CONVERSATION.c.tenant_id == bindparam("p_tenant"),
    _CONVERSATION.c.status == bindparam("p_expected_status"),
    _CONVERSATION.c.assignee_member_id.is_not_distinct_from(bindparam("p_expected_assignee")),
    _CONVERSATION.c.bot_active == bindparam("p_expected_bot_active"),
    _CONVERSATION.c.updated_at == bindparam("p_expected_updated_at"),
).values(assignee_member_id=bindparam("p_target"), assigned_at=bindparam("p_now"))


# Another command planned from the same state of the conversation and applied: the two raced.
_RACED_BY_ANOTHER_COMMAND = select(_RECEIPT.c.id).where(
    _RECEIPT.c.tenant_id == bindparam("p_tenant"), _RECEIPT.c.conversation_id == bindparam("p_conversation"),
    _RECEIPT.c.command_key != bindparam("p_command_key"), _RECEIPT.c.status == literal("applied"),
    _RECEIPT.c.snapshot["updated_at"].as_string() == bindparam("p_expected_updated_at")).limit(1)


def _why_changed(tenant_id: uuid.UUID, command_key: str, conversation_id: uuid.UUID, expected: dict,
                 execute) -> str:
    """The outcome of a command whose conversation is no longer as snapshotted (nothing written):
    `command_conflict` when another automated command (another plan, round or message event),
    planned from the very same state of the conversation, was applied first; else
    `state_changed` (a person, the desk or a command planned from another state changed it)."""
    raced = execute(_RACED_BY_ANOTHER_COMMAND, {
        "p_tenant": tenant_id, "p_conversation": conversation_id, "p_command_key": command_key,
        "p_expected_updated_at": expected["updated_at"]}).first()
    return "state_changed" if raced is None else "command_conflict"


def _read_command(tenant_id: uuid.UUID, command_key: str, conversation_id: uuid.UUID,
                  execute=None) -> Row:
    """The committed receipt's columns (past the identity map); 404 not_found when there is none."""
    found = (execute or db.session.execute)(_READ_RECEIPT, {
        "p_tenant": tenant_id, "p_command_key": command_key, "p_conversation": conversation_id}).first()
    if found is None:
        raise ApiError("not_found", 404)
    return found


def _set_receipt(tenant_id: uuid.UUID, command_key: str, conversation_id: uuid.UUID, before: tuple[str, ...],
                 status: str, reason: str | None = None, reason_code: str | None = None, execute=None) -> bool:
    """Move the receipt from one of the `before` states to `status` with one conditional UPDATE."""
    return (execute or db.session.execute)(_move_receipt(before), {
        "p_tenant": tenant_id, "p_command_key": command_key, "p_conversation": conversation_id,
        "p_status": status, "p_reason": reason, "p_reason_code": reason_code, "p_now": utcnow()}).rowcount == 1


def assign_if_unchanged(tenant_id: uuid.UUID, conversation_id: uuid.UUID, target: uuid.UUID,
                        expected: dict, execute=None) -> bool:
    """Reassign the conversation to `target` only while it is exactly as `expected` (a snapshot)."""
    assignee = expected["assignee_member_id"]
    return (execute or db.session.execute)(_ASSIGN_IF_UNCHANGED, {
        "p_conversation": conversation_id, "p_tenant": tenant_id, "p_target": target,
        "p_expected_status": expected["status"],
        "p_expected_assignee": None if assignee is None else uuid.UUID(assignee),
        "p_expected_bot_active": bool(expected["bot_active"]),
        "p_expected_updated_at": datetime.fromisoformat(expected["updated_at"]), "p_now": utcnow()}).rowcount == 1


def apply_command(tenant_id: uuid.UUID, command_key: str, conversation_id: uuid.UUID,
                  availability: bool | None = None) -> str:
    """Run one queued command through the adapter and commit; the receipt's final status.

    It owns its transaction (call it with nothing uncommitted): the conditional reassignment and
    the receipt's move to `applied` (or to `state_changed`, nothing overwritten, when the
    conversation is no longer as snapshotted) commit together. When the receipt was finished
    meanwhile by another worker, everything is rolled back and that worker's outcome returned, so
    a command is applied at most once. A final receipt is returned as is, without writing.
    With the tenant's availability policy on (`availability`; None: looked up), the target's
    availability is the last fact checked, in the same transaction (`_refused`).
    503 atomic_assignment_disabled when the switch is off; 404 not_found for a foreign receipt.
    """
    session = db.session
    if session.new or session.dirty or session.deleted or session.info.get(WROTE):
        raise RuntimeError("apply_command() owns its transaction: commit the caller's writes first")
    if not current_app.config["ATOMIC_ASSIGNMENT_ENABLED"]:
        raise ApiError("atomic_assignment_disabled", 503)
    # The session's own connection and transaction, without the ORM's per-statement work: the
    # transaction ends here either way, so nothing needs the session to track these writes.
    execute = session.connection().execute
    command = _read_command(tenant_id, command_key, conversation_id, execute)
    if command.status not in OPEN_RECEIPT_STATES:
        session.rollback()  # only read
        return command.status
    if availability is None:
        availability = waiting.policy_on(tenant_id, execute)
    target, expected = command.target_member_id, command.snapshot
    refused, queued = _refused(tenant_id, target, conversation_id, execute) if availability else (None, False)
    outcome = "rejected" if refused else _compare_and_swap(tenant_id, command_key, conversation_id, target, expected,
                                                           execute)
    if not _set_receipt(tenant_id, command_key, conversation_id, OPEN_RECEIPT_STATES, outcome,
                        waiting.UNAVAILABLE if refused else None, refused, execute):
        session.rollback()  # another worker finished it first: its outcome stands, not ours
        return _read_command(tenant_id, command_key, conversation_id).status
    if availability:
        _queue_after(tenant_id, conversation_id, target, expected, outcome, refused, queued, execute)
    session.commit()
    return outcome


def _compare_and_swap(tenant_id: uuid.UUID, command_key: str, conversation_id: uuid.UUID, target: uuid.UUID,
                      expected: dict, execute) -> str:
    """The reassignment while the conversation is as `expected`: `applied`, else why not."""
    if assign_if_unchanged(tenant_id, conversation_id, target, expected, execute):
        return "applied"
    return _why_changed(tenant_id, command_key, conversation_id, expected, execute)


def _refused(tenant_id: uuid.UUID, target: uuid.UUID, conversation_id: uuid.UUID, execute) -> tuple[str | None, bool]:
    """With the tenant's availability policy on, the last fact checked before the write, in its
    transaction: why `target` may not receive an automated assignment now (a reason code; None
    when they may), read under the member's row lock (`desk.waiting.target_state`), and whether the
    conversation waits in the queue."""
    seen, queued = waiting.target_state(tenant_id, target, conversation_id, utcnow(), execute)
    return (None if seen is None else seen.reason_code), queued


def _queue_after(tenant_id: uuid.UUID, conversation_id: uuid.UUID, target: uuid.UUID, expected: dict,
                 outcome: str, refused: str | None, queued: bool, execute) -> None:
    """With the policy on: a command refused for its target's availability has the conversation
    wait for that member; an applied one takes a waiting conversation out of the queue."""
    if refused:
        assignee = expected["assignee_member_id"]
        waiting.join(tenant_id, conversation_id, target, refused, None if assignee is None else uuid.UUID(assignee),
                     utcnow())
    elif outcome == "applied" and queued:
        waiting.leave(tenant_id, conversation_id, execute=execute)


def apply_now(tenant_id: uuid.UUID, command_key: str, conversation_id: uuid.UUID, target: uuid.UUID,
              expected: dict, availability: bool) -> str:
    """Apply one command at once, inside the caller's transaction; its outcome.

    For a caller that decided on one conversation it has just read in the tenant (`expected`, its
    snapshot) and rechecked `target`: the same compare-and-swap as `apply_command`, then the
    command's receipt created final under `command_key` (`RECEIPTS`, once): `applied`, or
    `state_changed` / `command_conflict` with nothing overwritten, or, with the tenant's
    availability policy on (`availability`, which the caller's recheck read), `rejected` for a
    target who may not receive it now (the conversation then waits for them). No `pending` receipt
    is ever committed, so none is left for a sweep. The caller writes its own rows in the same
    transaction and commits: the reassignment, its receipt and those rows commit together or not at
    all. A receipt already under the key (a repeat of the same command) keeps its outcome, returned.
    503 atomic_assignment_disabled when the switch is off.
    """
    if not current_app.config["ATOMIC_ASSIGNMENT_ENABLED"]:
        raise ApiError("atomic_assignment_disabled", 503)
    if expected["tenant_id"] != str(tenant_id) or expected["conversation_id"] != str(conversation_id):
        raise ValueError("the snapshot is of another conversation")
    execute = db.session.connection().execute
    refused, queued = _refused(tenant_id, target, conversation_id, execute) if availability else (None, False)
    outcome = "rejected" if refused else _compare_and_swap(tenant_id, command_key, conversation_id, target, expected,
                                                           execute)
    now = utcnow()
    row, _ = RECEIPTS.insert({
        "id": uuid.uuid4(), "tenant_id": tenant_id, "command_key": command_key,
        "conversation_id": conversation_id, "target_member_id": target, "snapshot": expected,
        "status": outcome, "reason": waiting.UNAVAILABLE if refused else None, "reason_code": refused,
        "created_at": now, "updated_at": now})
    if availability:
        _queue_after(tenant_id, conversation_id, target, expected, outcome, refused, queued, execute)
    return row.status


def mark_sending(tenant_id: uuid.UUID, command_key: str, conversation_id: uuid.UUID) -> bool:
    """pending → sending before a worker applies the command; False when it was not pending.
    The caller commits (so an interruption later leaves a `sending` receipt to resolve)."""
    return _set_receipt(tenant_id, command_key, conversation_id, ("pending",), "sending")


def reject_command(tenant_id: uuid.UUID, command_key: str, conversation_id: uuid.UUID,
                   reason: str) -> str:
    """pending/sending → rejected with `reason` (the caller's recheck of publisher, tenant, member
    or rule failed); the receipt's status afterwards (another outcome, when it came first).
    The caller commits."""
    if _set_receipt(tenant_id, command_key, conversation_id, ("pending", "sending"), "rejected", reason):
        return "rejected"
    return _read_command(tenant_id, command_key, conversation_id).status


def cancel_commands(tenant_id: uuid.UUID, command_keys: list[str], reason: str | None = None) -> int:
    """Every pending receipt of the keys → cancelled (commands already sending may complete);
    how many. The caller commits."""
    if not command_keys:
        return 0
    return db.session.execute(update(AssignmentReceipt).where(
        AssignmentReceipt.tenant_id == tenant_id, AssignmentReceipt.command_key.in_(command_keys),
        AssignmentReceipt.status == "pending")
        .values(status="cancelled", reason=reason, updated_at=utcnow())
        .execution_options(synchronize_session=False)).rowcount


def open_commands(key_prefix: str, older_than: datetime, limit: int = 500) -> list[Row]:
    """(tenant_id, command_key, conversation_id, status) of receipts under keys starting with
    `key_prefix` still `pending` or `sending` and unchanged since `older_than`, oldest first:
    commands whose worker may be gone, across tenants (for the platform's sweep of their owner,
    which handles each inside its own tenant)."""
    return db.session.execute(select(
        AssignmentReceipt.tenant_id, AssignmentReceipt.command_key, AssignmentReceipt.conversation_id,
        AssignmentReceipt.status).where(
        AssignmentReceipt.status.in_(("pending", "sending")), AssignmentReceipt.updated_at < older_than,
        AssignmentReceipt.command_key.startswith(key_prefix, autoescape=True))
        .order_by(AssignmentReceipt.updated_at).limit(limit)).all()


def resolve_uncertain(tenant_id: uuid.UUID, command_key: str, conversation_id: uuid.UUID) -> str:
    """After a timeout or an interrupted worker, reconcile by the committed receipt only, never by
    sending again: the reassignment and its receipt commit together, so an `applied` receipt is
    the proof it happened, and a receipt still `sending` proves it did not; that one becomes
    `uncertain` (reason 'interrupted') and is not resent blindly. Any other status is returned as
    is (a `pending` receipt was never sent: no receipt is not a failure). The caller commits."""
    if _read_command(tenant_id, command_key, conversation_id).status == "sending" and \
            _set_receipt(tenant_id, command_key, conversation_id, ("sending",), "uncertain", "interrupted"):
        return "uncertain"
    return _read_command(tenant_id, command_key, conversation_id).status


def reopen_uncertain(tenant_id: uuid.UUID, command_key: str, conversation_id: uuid.UUID) -> bool:
    """uncertain → pending for a person's retry; False when the command is not uncertain. Safe:
    an `uncertain` receipt proves its write never committed (the two commit together), and the
    retried command compares its snapshot again, so nothing changed since is overwritten. The
    caller commits, then has the command run again."""
    return _set_receipt(tenant_id, command_key, conversation_id, ("uncertain",), "pending")


def receipts(tenant_id: uuid.UUID, command_key: str) -> list[AssignmentReceipt]:
    """The receipts of one command key, in the order they were queued."""
    return receipts_of(tenant_id, [command_key]).get(command_key, [])


def receipts_of(tenant_id: uuid.UUID, command_keys: list[str]) -> dict[str, list[AssignmentReceipt]]:
    """The receipts of several command keys in one statement, by key, each in the order queued."""
    found: dict[str, list[AssignmentReceipt]] = {}
    if command_keys:
        for receipt in db.session.scalars(select(AssignmentReceipt).where(
                AssignmentReceipt.tenant_id == tenant_id, AssignmentReceipt.command_key.in_(command_keys))
                .order_by(AssignmentReceipt.created_at, AssignmentReceipt.conversation_id)
                .execution_options(populate_existing=True)):
            found.setdefault(receipt.command_key, []).append(receipt)
    return found
