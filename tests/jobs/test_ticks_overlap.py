"""Two ticks at once (a tick job run twice, or two clocks that each believed they held the lease):
everything a tick does still happens once. Every job is lost first (Redis restarted), so the
sweepers meet a webhook event never delivered, a record action never sent and one interrupted while
sending, a plan command left `sending` by a dead worker and one whose job was lost; two ticks run
concurrently, each in its own app context, then workers drain the queues."""
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from rq import Queue
from sqlalchemy import func, select, update

from core.clock import utcnow
from core.db import db
from core.queue_names import ALL_QUEUES, DEFAULT
from desk.conversations import mark_sending
from desk.models import AssignmentReceipt, Conversation
from jobs import cron
from openapi.models import WebhookEvent
from rules import execution
from studio.models import StudioActionRun
from tests.support.actions import audit_of, bound, run_action, save, the_run
from tests.support.jobs import work
from tests.support.openapi import create_record, deliver
from tests.support.rule_runs import CONFIRM, age_receipt, complete_plan, execution_status, make_conversations

pytestmark = pytest.mark.usefixtures("single_run_switches")


def _overlapping_ticks(app, ticks: int = 2) -> None:
    """`ticks` ticks started together, each in its own app context (its own database session)."""
    start = threading.Barrier(ticks)

    def one_tick():
        with app.app_context():
            start.wait(20)
            cron.tick()

    with ThreadPoolExecutor(ticks) as pool:
        for done in [pool.submit(one_tick) for _ in range(ticks)]:
            done.result()  # a handler that failed in either tick fails the test


def test_two_ticks_at_once_do_everything_once(app, redis_conn, receiver, hooked, api, acting, rules, tenant,
                                              published, target):
    _, client, _ = hooked
    create_record(client)  # a webhook event
    binding_id = bound(api, acting, receiver.url("localhost"))
    never_sent, interrupted = (run_action(api, acting, save(api, acting, {"title": title}), binding_id)
                               .get_json()["data"]["run_id"] for title in ("A", "B"))
    left_sending, lost = make_conversations(tenant, 2)
    plan = complete_plan(tenant, published, target, [left_sending, lost])
    assert rules.post(f"/{plan.id}/execute-plan", CONFIRM).status_code == 202
    for name in ALL_QUEUES:  # Redis restarted: every queued job is gone
        Queue(name, connection=redis_conn).empty()
    assert mark_sending(tenant.id, execution.command_key(plan.id), left_sending.id)  # its worker died
    db.session.commit()
    for conversation in (left_sending, lost):
        age_receipt(plan, conversation, execution.STALE_AFTER.total_seconds() + 1)
    long_ago = utcnow() - timedelta(hours=1)
    db.session.execute(update(WebhookEvent).values(next_attempt_at=long_ago))
    db.session.execute(update(StudioActionRun).where(StudioActionRun.id == uuid.UUID(never_sent))
                       .values(created_at=long_ago))
    db.session.execute(update(StudioActionRun).where(StudioActionRun.id == uuid.UUID(interrupted))
                       .values(status="sending", started_at=long_ago))
    db.session.commit()

    _overlapping_ticks(app)
    deliver(redis_conn)
    work(app, redis_conn, DEFAULT)

    webhooks = [r for r in receiver.received if "X-Service-Event-Id" in r.headers]
    sent_actions = [r.headers["x-service-action-id"] for r in receiver.received if "x-service-action-id" in r.headers]
    db.session.expire_all()
    assert len(webhooks) == 1 and db.session.scalar(select(WebhookEvent.status)) == "delivered"
    assert sent_actions == [never_sent] and the_run(never_sent).status == "accepted"
    assert (the_run(interrupted).status, the_run(interrupted).error) == ("awaiting_verification", "interrupted")
    outcomes = [entry.summary["outcome"] for entry in audit_of("studio.action_run")]
    assert sorted(outcomes) == ["accepted", "awaiting_verification"]
    receipts = {r["conversation_id"]: r["status"] for r in execution_status(rules, plan)["receipts"]}
    assert receipts == {str(left_sending.id): "uncertain", str(lost.id): "applied"}
    assert db.session.get(Conversation, left_sending.id).assignee_member_id is None  # never resent
    assert db.session.get(Conversation, lost.id).assignee_member_id == target.id
    assert db.session.scalar(select(func.count()).select_from(AssignmentReceipt)) == 2  # one command each
