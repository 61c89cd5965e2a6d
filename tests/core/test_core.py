"""Clock, crypto, audit and configuration helpers."""
from datetime import date, datetime, timezone

import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from core import audit
from core.audit import AuditEntry
from core.clock import beijing_day_range, beijing_to_utc, to_beijing, utcnow
from core.config import load_config
from core.crypto import decrypt, encrypt, hmac_sha256_hex, sha256_hex
from core.db import db
from desk.models import Conversation, Customer


def test_utcnow_is_aware_utc():
    assert utcnow().tzinfo == timezone.utc


def test_beijing_is_eight_hours_ahead():
    moment = datetime(2026, 11, 22, 16, 30, tzinfo=timezone.utc)
    assert to_beijing(moment).hour == 0


def test_monday_midnight_beijing_is_sunday_1600_utc():
    assert beijing_to_utc(datetime(2026, 11, 23, 0, 0)) == datetime(2026, 11, 22, 16, 0, tzinfo=timezone.utc)


def test_beijing_day_range_includes_the_whole_end_day():
    lower, upper = beijing_day_range(date(2026, 11, 1), date(2026, 11, 2))
    assert lower == datetime(2026, 10, 31, 16, 0, tzinfo=timezone.utc)
    assert upper == datetime(2026, 11, 2, 16, 0, tzinfo=timezone.utc)


def test_naive_datetimes_are_refused():
    with pytest.raises(ValueError):
        to_beijing(datetime(2026, 1, 1))


def test_timestamps_round_trip_aware_with_microseconds(app, tenant):
    customer = Customer(tenant_id=tenant.id, name="C")
    db.session.add(customer)
    db.session.flush()
    moment = datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=timezone.utc)
    conversation = Conversation(tenant_id=tenant.id, customer_id=customer.id, updated_at=moment)
    db.session.add(conversation)
    db.session.commit()
    db.session.expire_all()
    assert conversation.updated_at == moment and conversation.updated_at.tzinfo is not None


def test_encryption_round_trips_and_supports_key_rotation(app):
    token = encrypt("top secret")
    assert "top secret" not in token and decrypt(token) == "top secret"
    old_key = app.config["ENCRYPTION_KEY"]
    app.config["ENCRYPTION_KEY"] = f"{Fernet.generate_key().decode()},{old_key}"
    try:
        assert decrypt(token) == "top secret"
    finally:
        app.config["ENCRYPTION_KEY"] = old_key


def test_digests():
    assert sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert hmac_sha256_hex("key", b"The quick brown fox jumps over the lazy dog") == \
        "f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8"


def test_audit_record_is_kept_in_the_transaction(app, tenant, admin):
    audit.record(tenant.id, admin.user_id, "studio.simulate", "app:1", {"version": 2})
    db.session.commit()
    entry = db.session.scalar(select(AuditEntry))
    assert (entry.tenant_id, entry.actor_id, entry.action, entry.summary) == \
        (tenant.id, admin.user_id, "studio.simulate", {"version": 2})


def test_config_reads_switches_and_lets_overrides_win():
    env = {"DATABASE_URL": "postgresql+psycopg://h/db", "SECRET_KEY": "s", "ENCRYPTION_KEY": "k",
           "AUTOMATION_PLANNING_ENABLED": "true", "OPEN_PLATFORM_ENABLED": "0"}
    cfg = load_config({"SECRET_KEY": "override"}, environ=env)
    assert cfg["SQLALCHEMY_DATABASE_URI"] == "postgresql+psycopg://h/db"
    assert cfg["SECRET_KEY"] == "override"
    assert cfg["AUTOMATION_PLANNING_ENABLED"] is True and cfg["OPEN_PLATFORM_ENABLED"] is False
    assert cfg["EXTENSIONS_ENABLED"] is True and cfg["REDIS_URL"] is None


def test_egress_knobs_are_logged_as_warnings(caplog):
    from core.config import warn_about_egress_knobs

    warn_about_egress_knobs({"EGRESS_ALLOW_CIDRS": "127.0.0.0/8", "EGRESS_PORT": 8443})
    assert "EGRESS_ALLOW_CIDRS" in caplog.text and "EGRESS_PORT" in caplog.text


