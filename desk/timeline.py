"""A conversation's thread as the workbench shows it: messages, private notes and the decisions
about the conversation (changes by hand with their actor, automated reassignments with the rule,
revision, trigger, reason and run, availability decisions, service-level breaches), in time order."""
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from flask import current_app
from flask_babel import gettext as _
from sqlalchemy import select

from core.db import db
from desk.conversations import applied_receipts, conversation_events, conversation_messages
from desk.waiting import QUEUE_KEY_PREFIX, events_of
from desk.models import Channel, Conversation, Member
from desk.outbound import latest_deliveries

# app.extensions key: (tenant_id, applied receipts) -> {receipt id: why}, handed over by the app
# factory (the rules explain their own commands; the desk cannot import them).
EXPLAINER = "desk.decision_explainer"
Explainer = Callable[[uuid.UUID, list], dict]


@dataclass
class Entry:
    """One line of the thread: a `message`, a `change` by hand, an automated `decision`, an
    `availability` decision (issue 35: `change` is its kind, `actor` the member it is about,
    `after` the member it went to, `why` its reason code and numbers) or a service-level `breach`
    (issue 36: `change` is the target's kind)."""

    kind: str
    at: datetime
    message: object = None
    change: str | None = None  # assignment | status
    actor: str | None = None
    before: str | None = None
    after: str | None = None
    why: dict = field(default_factory=dict)
    delivery: object = None  # a reply's newest delivery to its channel, if it has one
    channel: str | None = None  # a message's channel, named when the thread holds several (a merge)


def member_names(tenant_id: uuid.UUID, ids: set) -> dict[str, str]:
    """Display names of the tenant's members by id (as text), in one statement."""
    wanted = {uuid.UUID(str(value)) for value in ids if value}
    if not wanted:
        return {}
    return {str(member_id): name for member_id, name in db.session.execute(select(Member.id, Member.display_name)
            .where(Member.tenant_id == tenant_id, Member.id.in_(wanted)))}


def channel_names(tenant_id: uuid.UUID, ids: set) -> dict:
    """The channels' names by id when there are several (a merged thread), else none: one channel
    needs no mark."""
    wanted = {value for value in ids if value}
    if len(wanted) < 2:
        return {}
    return dict(db.session.execute(select(Channel.id, Channel.name)
                                   .where(Channel.tenant_id == tenant_id, Channel.id.in_(wanted))).all())


def thread(conversation: Conversation, timers: list) -> list[Entry]:
    """The conversation's entries, oldest first; `timers` are its service-level timers."""
    messages = conversation_messages(conversation)
    events = conversation_events(conversation)
    # The queue's own assignments are told by their availability lines, with the reason.
    receipts = [r for r in applied_receipts(conversation) if not r.command_key.startswith(QUEUE_KEY_PREFIX)]
    availability = events_of(conversation.tenant_id, conversation.id)
    explain: Explainer | None = current_app.extensions.get(EXPLAINER)
    why = explain(conversation.tenant_id, receipts) if explain and receipts else {}
    names = member_names(conversation.tenant_id, {m.author_member_id for m in messages}
                         | {e.actor_member_id for e in events}
                         | {e.before for e in events if e.kind == "assignment"}
                         | {e.after for e in events if e.kind == "assignment"}
                         | {r.target_member_id for r in receipts}
                         | {e.member_id for e in availability} | {e.detail.get("to") for e in availability})

    former = _("a former member")

    def label(kind: str, value: str | None):
        if kind == "assignment" and value:
            return names.get(value, former)
        return datetime.fromisoformat(value) if kind == "snooze" and value else value

    deliveries = latest_deliveries(conversation.tenant_id, [m.id for m in messages
                                                            if m.direction == "outbound" and m.kind == "public"])
    channels = channel_names(conversation.tenant_id, {m.channel_id for m in messages})
    entries = [Entry("message", m.created_at, message=m, actor=names.get(str(m.author_member_id)),
                     delivery=deliveries.get(m.id), channel=channels.get(m.channel_id)) for m in messages]
    entries += [Entry("change", e.created_at, change=e.kind, actor=names.get(str(e.actor_member_id)),
                      before=label(e.kind, e.before), after=label(e.kind, e.after)) for e in events]
    entries += [Entry("decision", r.updated_at, change="assignment", after=names.get(str(r.target_member_id)),
                      why=why.get(r.id, {})) for r in receipts]
    entries += [Entry("availability", e.created_at, change=e.kind,
                      actor=names.get(str(e.member_id), former) if e.member_id else None,
                      after=names.get(e.detail["to"], former) if "to" in e.detail else None,
                      why={"reason_code": e.reason_code, **e.detail})
                for e in availability]
    entries += [Entry("breach", t.breached_at, change=t.kind) for t in timers if t.breached_at is not None]
    return sorted(entries, key=lambda entry: entry.at)
