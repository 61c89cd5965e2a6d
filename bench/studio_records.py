"""The authenticated console read, Studio record submissions and chart summaries, each against a
baseline from the same run.

Run: .venv/bin/python -m bench.studio_records
Targets: an authenticated console read (GET /api/extensions/capabilities) >= 0.35 x GET /healthz
(issue 11, on PostgreSQL) and, printed beside it, issue 34's >= 0.25 (reads without needless
round trips: no pre-ping, no BEGIN and ROLLBACK around a request that only reads); submissions
>= 0.2 x that authenticated read (issue 11); one chart
summary <= 5 x a count(*) query (issue 3). The read is also compared with a request that makes
only its store round trips: on PostgreSQL that request alone is below 0.35 x /healthz, so the
proposed target is the read >= 0.4 x that request (docs/benchmarks.md).
"""
import logging
import re
import uuid

from sqlalchemy import func, literal, select

from bench.common import (add_stores_route, bench_app, durable_write_seconds, logged_in, median_seconds, rate,
                          rates, target)
from core.db import db
from core.redis import get_redis, run_script
from desk.sessions import _RESUME, SESSION_KEY
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
EMAIL = f"bench-{uuid.uuid4().hex[:12]}@bench.example"  # a new user each run: one seat, no tenant choice
PASSWORD = "bench-password"
READ_TARGET, SUBMIT_TARGET, CHART_TARGET = 0.35, 0.2, 5
ROUND_TRIPS_READ_TARGET = 0.25  # issue 34: the read without pre-ping, BEGIN and ROLLBACK
PROPOSED_READ_TARGET = 0.4  # x a request making only the read's store round trips (docs/benchmarks.md)
STORES_ONLY = "/bench/session-stores-only"
SAMPLE = {"title": "Bench record", **{f"n{i}": i * 7 for i in range(8)}, "day": "2026-11-20", "notes": "x" * 200}


def _live_apps(app, count: int) -> tuple:
    """A tenant, its administrator and `count` published 12-field apps (each takes 1,000 records)."""
    with app.app_context():
        tenant = create_tenant("Bench")
        admin = add_member(tenant.id, EMAIL, PASSWORD, "admin")
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
    """Print the authenticated read and its parts, the submissions and the charts."""
    logging.disable(logging.INFO)
    app = bench_app()
    add_stores_route(app, STORES_ONLY, _session_round_trips)
    tenant_id, app_ids = _live_apps(app, APPS)
    client = logged_in(app, EMAIL, PASSWORD)
    reads = _authenticated_read(app, client)
    submitted_count = 0

    def submit():
        nonlocal submitted_count
        url = f"/api/extensions/{app_ids[submitted_count // RECORDS_PER_APP]}/records"
        body = {"version": 1, "input": SAMPLE, "idempotency_key": str(uuid.uuid4())}
        assert client.post(url, json=body, headers={"Origin": "http://localhost"}).status_code == 200
        submitted_count += 1

    submitted = rate(submit, seconds=4.0)
    ratio = submitted / reads
    print(f"POST record (12 fields, 8 rules)            {1000 / submitted:7.3f} ms {submitted:8.1f}/s   "
          f"ratio {ratio:.3f} to the read {target(ratio, at_least=SUBMIT_TARGET)}")
    print(f"one INSERT + COMMIT (the floor of a write)  {durable_write_seconds(app) * 1000:7.3f} ms")
    _charts(app, tenant_id, app_ids[-1])


def _authenticated_read(app, client) -> float:
    """Print the authenticated console read against /healthz and what each part of it costs.

    Each part is the difference between two real requests that differ by that part alone (timed
    in alternating rounds), so it is measured where it runs, not in a warm loop of its own.
    """
    other = logged_in(app, EMAIL, PASSWORD)
    stale = {"Cookie": f"session={other.get_cookie('session').value}"}
    _log_out(other)  # the copied cookie still names the user, but its session is no longer live
    cookieless = app.test_client(use_cookies=False)  # sends only the headers it is given
    url = "/api/extensions/capabilities"

    measured = rates({
        "healthz": lambda: expect(client.get("/healthz"), 200),
        "read": lambda: expect(client.get(url), 200),
        "bare healthz": lambda: expect(cookieless.get("/healthz"), 200),
        "no session": lambda: expect(cookieless.get(url), 401),
        "not live": lambda: expect(cookieless.get(url, headers=stale), 401),
        "stores only": lambda: expect(cookieless.get(STORES_ONLY), 204)}, seconds=9.0)
    base, reads, bare, no_session, not_live, stores_only = measured.values()
    parts = [("the WSGI stack (GET /healthz without a cookie)", 1 / bare),
             ("the console guard and its 401 answer", 1 / no_session - 1 / bare),
             ("the cookie and the session registry check in Redis", 1 / not_live - 1 / no_session),
             ("the user and seat from the database, the view, its answer", 1 / reads - 1 / not_live)]
    ratio, floor_ratio = reads / base, stores_only / base
    print(f"GET /healthz                                {1000 / base:7.3f} ms {base:8.1f}/s (baseline)")
    print(f"GET {url}      {1000 / reads:7.3f} ms {reads:8.1f}/s   ratio {ratio:.3f} "
          f"{target(ratio, at_least=READ_TARGET)}; issue 34's {target(ratio, at_least=ROUND_TRIPS_READ_TARGET)}")
    for label, seconds in parts:
        print(f"  {label:<56} {seconds * 1000:7.3f} ms {seconds * reads:4.0%}")
    print(f"  time per read that target allows          {1000 / (READ_TARGET * base):7.3f} ms")
    print(f"a request making only its store round trips {1000 / stores_only:7.3f} ms {stores_only:8.1f}/s   "
          f"ratio {floor_ratio:.3f} (the stores' floor: registry script, one SELECT)")
    print(f"  the read / that request                                          ratio {reads / stores_only:.3f} "
          f"proposed {target(reads / stores_only, at_least=PROPOSED_READ_TARGET)}")
    return reads


def _session_round_trips() -> None:
    """What loading a console session asks of the stores, without its logic: the registry's Lua
    script in Redis and one SELECT (on PostgreSQL outside any transaction, as the read's own)."""
    run_script(get_redis(), _RESUME, [SESSION_KEY + "bench"], ["bench", 60_000])
    db.session.execute(select(literal(1))).scalar()


def expect(response, status: int) -> None:
    """The request got the expected answer."""
    assert response.status_code == status, response.status_code


def _log_out(browser) -> None:
    """Press "Log out" (the form's CSRF token is on every console page)."""
    page = browser.get("/extensions").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)
    assert browser.post("/logout", data={"csrf_token": token}).status_code == 302


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
    print(f"SELECT count(*) (1,000 rows)                {count * 1000:7.3f} ms (baseline)")
    print(f"one chart summary (bar, sum)                {one * 1000:7.3f} ms            ratio {one / count:.3f} "
          f"{target(one / count, at_most=CHART_TARGET)}")
    print(f"chart_summaries (2 charts)                  {both * 1000:7.3f} ms            ratio {both / count:.3f}")


if __name__ == "__main__":
    main()
