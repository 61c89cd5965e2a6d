"""Signed webhooks delivered by real RQ workers to a real HTTPS receiver on loopback."""
import json
import time
from datetime import timedelta

from rq import Queue
from rq.registry import ScheduledJobRegistry
from sqlalchemy import select, update

from core.clock import utcnow
from core.db import db
from core.queue_names import WEBHOOKS
from openapi import webhooks
from openapi.apps import revoke
from openapi.models import WebhookAttempt, WebhookEvent
from tests.conftest import egress_env, worker_killed_once
from tests.support.openapi import create_record, deliver, verify


def the_event() -> WebhookEvent:
    db.session.expire_all()
    return db.session.scalar(select(WebhookEvent))


def test_a_created_record_is_delivered_signed(hooked, receiver, redis_conn):
    _, client, secret = hooked
    record_id = create_record(client)
    deliver(redis_conn)
    (seen,) = receiver.received
    body = json.loads(seen.body)
    assert verify(secret, seen.headers, seen.body)
    assert seen.headers["X-Service-Event-Id"] == body["id"]
    assert set(body) == {"id", "type", "api_version", "created_at", "data"}
    assert (body["type"], body["api_version"], body["data"]) == ("app.record.created", "v1", {"record_id": record_id})
    assert seen.server_name == "localhost" and seen.path == "/hook"
    event = the_event()
    assert event.status == "delivered" and event.attempts == 1


def test_a_tampered_body_fails_the_documented_check(hooked, receiver, redis_conn):
    _, client, secret = hooked
    create_record(client)
    deliver(redis_conn)
    (seen,) = receiver.received
    assert not verify(secret, seen.headers, seen.body.replace(b"v1", b"v2"))
    assert not verify("whsec_other", seen.headers, seen.body)


def test_a_receiver_failing_three_times_gets_four_attempts_on_schedule(hooked, receiver, redis_conn, app,
                                                                       monkeypatch):
    monkeypatch.setitem(app.config, "WEBHOOK_RETRY_INTERVALS", (2, 3, 4, 1, 1, 1, 1))
    _, client, secret = hooked
    receiver.answers.extend([(500, {}, b"no")] * 3)
    create_record(client)
    for _ in range(80):
        deliver(redis_conn)
        if the_event().status != "pending":
            break
        time.sleep(0.25)
    event = the_event()
    assert event.status == "delivered" and event.attempts == 4 and len(receiver.received) == 4
    stamps = [int(r.headers["X-Service-Timestamp"]) for r in receiver.received]
    assert len({r.headers["X-Service-Event-Id"] for r in receiver.received}) == 1
    assert all(verify(secret, r.headers, r.body) for r in receiver.received)
    attempts = list(db.session.scalars(select(WebhookAttempt).order_by(WebhookAttempt.number)))
    assert [a.status_code for a in attempts] == [500, 500, 500, 200]
    gaps = [(b.started_at - a.started_at).total_seconds() for a, b in zip(attempts, attempts[1:])]
    # RQ's scheduler keeps whole seconds, so a retry may start up to a second early.
    assert [gap >= want - 1 for gap, want in zip(gaps, (2, 3, 4))] == [True] * 3, gaps
    assert stamps == sorted(stamps)  # a fresh timestamp on every attempt


def test_after_eight_failed_attempts_the_event_is_failed(hooked, receiver, redis_conn, app, monkeypatch):
    monkeypatch.setitem(app.config, "WEBHOOK_RETRY_INTERVALS", (0,) * 7)
    _, client, _ = hooked
    receiver.default = (503, {}, b"down")
    create_record(client)
    deliver(redis_conn, rounds=3)
    event = the_event()
    assert event.status == "failed" and event.attempts == 8 and len(receiver.received) == 8
    assert [a.status_code for a in db.session.scalars(select(WebhookAttempt))] == [503] * 8


def test_in_production_retries_come_thirty_seconds_later_doubling_to_1920(hooked, receiver, redis_conn):
    _, client, _ = hooked
    receiver.default = (503, {}, b"down")
    create_record(client)
    scheduled = ScheduledJobRegistry(WEBHOOKS, connection=redis_conn)
    waits = []
    for _ in range(8):
        deliver(redis_conn)
        if the_event().status != "pending":
            break
        attempt = db.session.scalars(select(WebhookAttempt).order_by(WebhookAttempt.number.desc())).first()
        (job_id,) = scheduled.get_job_ids()
        rq_wait = (scheduled.get_scheduled_time(job_id) - attempt.started_at).total_seconds()
        wait = (the_event().next_attempt_at - attempt.started_at).total_seconds()
        assert rq_wait - 1 <= wait <= rq_wait + 1  # RQ keeps whole seconds
        waits.append(round(wait))
        # The wait passes: the retry is due for RQ and for the event.
        redis_conn.zadd(scheduled.key, {job_id: 0})
        db.session.execute(update(WebhookEvent).values(next_attempt_at=utcnow()))
        db.session.commit()
    assert waits == [30, 60, 120, 240, 480, 960, 1920]
    assert the_event().status == "failed" and len(receiver.received) == 8


def test_a_refused_address_is_an_attempt_that_failed(make_open_app, receiver, redis_conn, app, monkeypatch):
    monkeypatch.setitem(app.config, "WEBHOOK_RETRY_INTERVALS", (0,) * 7)
    _, client, _ = make_open_app(["app.records.write"], webhook_url=receiver.url("localhost"))
    monkeypatch.setitem(app.config, "EGRESS_ALLOW_CIDRS", None)  # loopback is internal again
    create_record(client)
    deliver(redis_conn, rounds=3)
    assert receiver.received == []
    assert {a.error for a in db.session.scalars(select(WebhookAttempt))} == {"address_not_public"}


def test_revocation_cancels_undelivered_events(hooked, receiver, redis_conn, tenant, admin):
    found, client, _ = hooked
    create_record(client)
    revoke(tenant.id, admin.user_id, found.id)
    db.session.commit()
    deliver(redis_conn)
    assert receiver.received == [] and the_event().status == "cancelled"


def test_applications_without_a_url_get_no_events(make_open_app, redis_conn):
    _, client, made = make_open_app(["app.records.write"])
    create_record(client)
    assert made.signing_secret is None and db.session.scalar(select(WebhookEvent)) is None
    assert Queue(WEBHOOKS, connection=redis_conn).count == 0


def test_the_signing_secret_is_encrypted_and_never_logged(hooked, receiver, redis_conn, caplog):
    found, client, secret = hooked
    assert secret not in found.signing_secret_encrypted
    create_record(client)
    with caplog.at_level("DEBUG"):
        deliver(redis_conn)
    assert len(receiver.received) == 1 and secret not in caplog.text


def test_a_worker_killed_mid_delivery_still_delivers(hooked, receiver, redis_conn, app, app_config):
    _, client, secret = hooked
    receiver.answers.append((200, {}, b"too late", 30))  # the first attempt stalls: the worker dies in it
    create_record(client)
    worker_killed_once(app_config, lambda: receiver.received, **egress_env(app))
    assert len(receiver.received) == 1 and the_event().status == "pending"
    # Time passes beyond the attempt's lease; the tick's sweeper finds the interrupted delivery.
    db.session.execute(update(WebhookEvent).values(next_attempt_at=utcnow() - timedelta(minutes=5)))
    db.session.commit()
    assert webhooks.sweep() == 1
    deliver(redis_conn)
    event = the_event()
    assert event.status == "delivered" and len(receiver.received) == 2
    assert receiver.received[0].headers["X-Service-Event-Id"] == receiver.received[1].headers["X-Service-Event-Id"]
    assert [a.error for a in db.session.scalars(select(WebhookAttempt).order_by(WebhookAttempt.number))] == \
        ["interrupted", None]
    assert verify(secret, receiver.received[1].headers, receiver.received[1].body)


def test_a_stray_job_after_the_last_attempt_adds_no_attempt(hooked, receiver, redis_conn):
    _, client, _ = hooked
    create_record(client)
    db.session.execute(update(WebhookEvent).values(attempts=8))
    db.session.commit()
    webhooks.deliver(str(the_event().id))
    assert receiver.received == [] and the_event().status == "failed"


def test_an_attempt_is_not_made_before_it_is_due(hooked, receiver):
    _, client, _ = hooked
    create_record(client)
    db.session.execute(update(WebhookEvent).values(next_attempt_at=utcnow() + timedelta(minutes=5)))
    db.session.commit()
    assert webhooks.deliver(str(the_event().id)) == "not claimed"
    assert receiver.received == [] and the_event().attempts == 0
