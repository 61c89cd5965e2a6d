"""Studio record submissions and chart summaries, each against a baseline from the same run.

Run: .venv/bin/python -m bench.studio_records
Targets (issue 3): submissions >= 0.4 x the /healthz rate; chart summary <= 5 x a count(*) query.
"""
import logging
import uuid

from sqlalchemy import func, select

from bench.common import bench_app, durable_write_seconds, logged_in, median_seconds, print_write_budget, rate
from core.db import db
from desk.tenancy import add_member, create_tenant
from studio.apps import create_app, get_app, publish, simulate
from studio.charts import chart_summaries, chart_summary
from studio.catalog import LIMITS, PUBLISH_PERMISSIONS
from studio.models import StudioRecord

FIELDS = [{"key": f"n{i}", "label": f"Number {i}", "type": "number", "required": False} for i in range(8)] + [
    {"key": "title", "label": "Title", "type": "text", "required": True},
    {"key": "kind", "label": "Kind", "type": "select", "required": False, "options": ["a", "b", "c"]},
    {"key": "day", "label": "Day", "type": "date", "required": False},
    {"key": "notes", "label": "Notes", "type": "textarea", "required": False}]
RULES = [{"name": f"Rule {i}", "when": {"field": f"n{i}", "operator": "gte", "value": 10 * i},
          "then": {"field": "kind", "value": "abc"[i % 3]}} for i in range(8)]
DEFINITION = {
    "schema_version": 1, "name": "Bench", "description": "12 fields, 8 rules.",
    "page": {"title": "Bench", "description": "Bench form.", "columns": 2, "submit_label": "Save"},
    "fields": FIELDS, "table_columns": ["title", "kind"],
    "workflow": {"trigger": "form.submitted", "rules": RULES},
    "charts": [{"key": "by_kind", "title": "By kind", "type": "bar", "group_by": "kind", "metric": "sum",
                "value_field": "n1"},
               {"key": "per_day", "title": "Per day", "type": "line", "group_by": "day", "metric": "count"}],
}
RECORDS_PER_APP = LIMITS["records_per_app"]
APPS = 12  # enough for 12,000 submissions in the timed rounds; at most 20 per tenant
SAMPLE = {"title": "Bench record", **{f"n{i}": i * 7 for i in range(8)}, "day": "2026-11-20", "notes": "x" * 200}


def _live_apps(app, count: int) -> tuple:
    """A tenant, its administrator and `count` published 12-field apps (each takes 1,000 records)."""
    with app.app_context():
        tenant = create_tenant("Bench")
        admin = add_member(tenant.id, "bench@bench.example", "bench-password", "admin")
        app_ids = []
        for _ in range(count):
            version = create_app(tenant.id, admin.user_id, DEFINITION)
            found = get_app(tenant.id, version.app_id)
            simulate(found, admin.user_id, 1, SAMPLE)
            publish(found, admin.user_id, 1, None, PUBLISH_PERMISSIONS, False)
            app_ids.append(found.id)
        db.session.commit()
        return tenant.id, app_ids


def main() -> None:
    """Print both comparisons."""
    logging.disable(logging.INFO)
    app = bench_app()
    tenant_id, app_ids = _live_apps(app, APPS)
    client = logged_in(app, "bench@bench.example", "bench-password")
    submitted_count = 0

    def healthz():
        assert client.get("/healthz").status_code == 200

    def submit():
        nonlocal submitted_count
        url = f"/api/extensions/{app_ids[submitted_count // RECORDS_PER_APP]}/records"
        body = {"version": 1, "input": SAMPLE, "idempotency_key": str(uuid.uuid4())}
        assert client.post(url, json=body, headers={"Origin": "http://localhost"}).status_code == 200
        submitted_count += 1

    def capabilities():
        assert client.get("/api/extensions/capabilities").status_code == 200

    def refused_post():
        # Same session, user and seat loading as a submission; refused at the Origin check.
        assert client.post(f"/api/extensions/{app_ids[-1]}/records", json={}).status_code == 403

    base = rate(healthz)
    reads = rate(capabilities)
    refused = rate(refused_post)
    submitted = rate(submit, seconds=4.0)
    print(f"GET /healthz                  {base:9.1f} req/s (baseline)")
    print(f"GET /api/extensions/capabilities {reads:6.1f} req/s (authenticated console read)")
    print(f"POST refused after login check {refused:8.1f} req/s (authenticated, saves nothing)")
    print(f"POST record (12 fields/8 rules) {submitted:7.1f} req/s")
    print(f"ratio submit/healthz          {submitted / base:9.3f}   (target >= 0.4)")
    print(f"ratio submit/authenticated read {submitted / reads:7.3f}")
    print(f"ratio refused POST/healthz    {refused / base:9.3f}   (the login check alone)")
    print_write_budget(base, 0.4, durable_write_seconds(app))
    _charts(app, tenant_id, app_ids[-1])


def _charts(app, tenant_id, app_id) -> None:
    """Fill the app to 1,000 records, then compare the chart summary with a count(*)."""
    with app.app_context():
        have = db.session.scalar(select(func.count()).select_from(StudioRecord)
                                 .where(StudioRecord.app_id == app_id))
        db.session.add_all(StudioRecord(
            tenant_id=tenant_id, app_id=app_id, version=1, trace=[], input_digest="bench",
            idempotency_key=uuid.uuid4(),
            data={**SAMPLE, "n1": n % 17, "kind": "abc"[n % 3], "day": f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}"})
            for n in range(1000 - have))
        db.session.commit()
        count = median_seconds(lambda: db.session.scalar(
            select(func.count()).select_from(StudioRecord).where(StudioRecord.app_id == app_id)))
        one = median_seconds(lambda: chart_summary(tenant_id, app_id, 1, DEFINITION["charts"][0], "select"))
        both = median_seconds(lambda: chart_summaries(tenant_id, app_id, {1: DEFINITION}))
    print(f"SELECT count(*) (1,000 rows)  {count * 1000:9.2f} ms (baseline)")
    print(f"one chart summary (bar, sum)  {one * 1000:9.2f} ms   ratio {one / count:6.3f} (target <= 5)")
    print(f"chart_summaries (2 charts)    {both * 1000:9.2f} ms   ratio {both / count:6.3f}")


if __name__ == "__main__":
    main()
