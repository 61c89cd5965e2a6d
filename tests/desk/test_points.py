"""The AI points ledger, its console page and the operator's switch."""
import json
import uuid
from datetime import datetime, time, timedelta, timezone

import pytest
from sqlalchemy import select

from core.audit import AuditEntry
from core.clock import BEIJING, to_beijing, utcnow
from core.db import db
from desk.models import AiPointsEntry, Tenant
from desk.points import latest_entries, points_for, record_use, usage_summary
from studio.quota import reserve_generation

ZERO = {"uses": 0, "input_tokens": 0, "output_tokens": 0, "points": 0}


def beijing(day_offset: int, at: time) -> datetime:
    """A UTC moment given as a Beijing wall-clock time `day_offset` days from today."""
    day = to_beijing(utcnow()).date() + timedelta(days=day_offset)
    return datetime.combine(day, at, BEIJING).astimezone(timezone.utc)


def use_at(tenant_id: uuid.UUID, kind: str, tokens: tuple[int, int], moment: datetime) -> AiPointsEntry:
    """A ledger row recorded at a chosen time."""
    entry = record_use(tenant_id, kind, None, *tokens)
    entry.created_at = moment
    db.session.flush()
    return entry


def test_record_use_adds_a_row_with_its_points_and_leaves_the_commit_to_the_caller(tenant):
    entry = record_use(tenant.id, "generation", "studio_generation:abc", 1200, 300)
    stored = db.session.get(AiPointsEntry, entry.id)
    assert (stored.tenant_id, stored.kind, stored.reference, stored.input_tokens, stored.output_tokens,
            stored.points) == (tenant.id, "generation", "studio_generation:abc", 1200, 300, 2)
    db.session.rollback()
    assert db.session.scalars(select(AiPointsEntry)).all() == []


@pytest.mark.parametrize(("input_tokens", "output_tokens", "points"), [
    (0, 0, 0), (1, 0, 1), (0, 1, 1), (600, 400, 1), (600, 401, 2), (2500, 0, 3), (1000, 1000, 2)])
def test_one_point_per_started_thousand_tokens_of_input_and_output(tenant, input_tokens, output_tokens, points):
    assert points_for(input_tokens, output_tokens) == points
    assert record_use(tenant.id, "intent", None, input_tokens, output_tokens).points == points


@pytest.mark.parametrize(("kind", "tokens", "reference"), [
    ("translation", (1, 1), None), ("intent", (-1, 5), None), ("intent", (1, 1), "x" * 81)])
def test_record_use_refuses_unknown_kinds_negative_tokens_and_long_references(tenant, kind, tokens, reference):
    with pytest.raises(ValueError):
        record_use(tenant.id, kind, reference, *tokens)


def test_usage_summary_totals_per_kind_and_per_beijing_day(tenant):
    use_at(tenant.id, "generation", (1200, 300), beijing(0, time(0, 30)))
    use_at(tenant.id, "intent", (500, 500), beijing(0, time(9, 0)))
    # The same UTC date as today's 00:30, but still yesterday in Beijing, to the last microsecond.
    use_at(tenant.id, "intent", (100, 20), beijing(-1, time(23, 59, 59, 999_999)))
    use_at(tenant.id, "semantic_preview", (10, 0), beijing(-29, time(0, 0)))
    use_at(tenant.id, "generation", (5000, 0), beijing(-30, time(23, 0)))  # before the 30 days
    summary = usage_summary(tenant.id)
    today = to_beijing(utcnow()).date()
    assert (summary["days"], summary["first_day"], summary["last_day"]) == (
        30, (today - timedelta(days=29)).isoformat(), today.isoformat())
    assert summary["total"] == {"uses": 4, "input_tokens": 1810, "output_tokens": 820, "points": 5}
    assert summary["by_kind"] == {
        "generation": {"uses": 1, "input_tokens": 1200, "output_tokens": 300, "points": 2},
        "intent": {"uses": 2, "input_tokens": 600, "output_tokens": 520, "points": 2},
        "semantic_preview": {"uses": 1, "input_tokens": 10, "output_tokens": 0, "points": 1},
        "semantic_routing": ZERO}
    assert [(day["date"], day["uses"], day["points"]) for day in summary["by_day"]] == [
        (today.isoformat(), 2, 3), ((today - timedelta(days=1)).isoformat(), 1, 1),
        ((today - timedelta(days=29)).isoformat(), 1, 1)]


def test_usage_summary_of_a_tenant_without_use_is_all_zero(tenant):
    summary = usage_summary(tenant.id, days=7)
    assert summary["total"] == ZERO and summary["by_day"] == []
    assert summary["by_kind"] == {"generation": ZERO, "intent": ZERO, "semantic_preview": ZERO,
                                  "semantic_routing": ZERO}


def test_the_ledger_keeps_tenants_apart(tenant, other_tenant):
    mine = record_use(tenant.id, "generation", None, 10, 10)
    record_use(other_tenant.id, "intent", None, 3000, 0)
    assert usage_summary(tenant.id)["total"] == {"uses": 1, "input_tokens": 10, "output_tokens": 10,
                                                 "points": 1}
    assert [entry.id for entry in latest_entries(tenant.id)] == [mine.id]


def test_latest_entries_are_the_newest_fifty(tenant):
    entries = [use_at(tenant.id, "intent", (1, 1), utcnow() - timedelta(minutes=n)) for n in range(55)]
    assert [entry.id for entry in latest_entries(tenant.id)] == [entry.id for entry in entries[:50]]


def page(browser) -> str:
    """The AI usage page's HTML, which must load."""
    response = browser.get("/ai-usage")
    assert response.status_code == 200
    return response.get_data(as_text=True)


def test_the_page_shows_the_setting_the_quota_and_the_ledger(admin_client, tenant):
    record_use(tenant.id, "generation", None, 1200, 300)
    record_use(tenant.id, "intent", None, 40, 2)
    db.session.commit()
    reserve_generation(tenant.id, False)
    html = page(admin_client)
    assert "Not enabled" in html and "19 of 20" in html
    assert "Beijing time</dd>" in html  # the next generation waits for the minute to end
    assert "App generation" in html and "Intent classification" in html and "1,200" in html
    assert html.count("<td>Intent classification</td>") == 1  # one row among the latest entries
    assert "No AI usage yet" not in html


def test_the_page_of_a_metered_tenant_says_so(admin_client, tenant):
    tenant.ai_points_enabled = True
    db.session.commit()
    html = page(admin_client)
    assert '<span class="badge badge-live">Enabled</span>' in html and "Metered by AI points" in html and "of 20" not in html


def test_the_page_without_usage_shows_the_empty_state(admin_client, other_tenant):
    record_use(other_tenant.id, "generation", None, 1200, 300)
    db.session.commit()
    html = page(admin_client)
    assert "No AI usage yet" in html and "20 of 20" in html and "<dd>Now</dd>" in html
    assert "<td>App generation</td>" not in html


def test_the_page_is_for_administrators_in_the_console(agent_client, client):
    assert agent_client.get("/ai-usage").status_code == 403
    response = client.get("/ai-usage")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login")


def test_only_administrators_see_the_ai_usage_link(admin_client, agent_client):
    assert 'href="/ai-usage"' in page(admin_client)
    assert 'href="/ai-usage"' not in agent_client.get("/workbench").get_data(as_text=True)


def ai_points(app, *args: str):
    """Invoke `flask tenants ai-points ...`."""
    return app.test_cli_runner().invoke(args=["tenants", "ai-points", *args])


def test_the_cli_enables_and_disables_ai_points_with_an_audit_entry(app, tenant):
    enabled = ai_points(app, "--tenant", str(tenant.id), "--enable", "--json")
    assert json.loads(enabled.output) == {"tenant_id": str(tenant.id), "ai_points_enabled": True}
    db.session.expire_all()
    assert db.session.get(Tenant, tenant.id).ai_points_enabled is True
    disabled = ai_points(app, "--tenant", str(tenant.id), "--disable", "--json")
    assert json.loads(disabled.output)["ai_points_enabled"] is False
    db.session.expire_all()
    assert db.session.get(Tenant, tenant.id).ai_points_enabled is False
    audited = db.session.scalars(select(AuditEntry.summary).where(
        AuditEntry.action == "tenant.ai_points_changed").order_by(AuditEntry.created_at))
    assert list(audited) == [{"enabled": True}, {"enabled": False}]


def test_the_cli_needs_a_known_tenant_and_a_choice(app, tenant):
    unknown = ai_points(app, "--tenant", str(uuid.uuid4()), "--enable", "--json")
    assert unknown.exit_code != 0 and "not_found" in unknown.output
    undecided = ai_points(app, "--tenant", str(tenant.id), "--json")
    assert undecided.exit_code != 0
    assert db.session.get(Tenant, tenant.id).ai_points_enabled is False
