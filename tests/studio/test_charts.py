"""Chart summaries aggregate every saved record of one version, in SQL, on SQLite and PostgreSQL."""
import random
import uuid
from datetime import date, timedelta

from core.db import db
from studio.charts import chart_summaries, chart_summary
from studio.models import StudioApp, StudioRecord, StudioVersion

FIELDS = [
    {"key": "title", "label": "Title", "type": "text", "required": True},
    {"key": "amount", "label": "Amount", "type": "number", "required": False},
    {"key": "priority", "label": "Priority", "type": "select", "required": False, "options": ["low", "high"]},
    {"key": "due", "label": "Due date", "type": "date", "required": False},
    {"key": "urgent", "label": "Urgent", "type": "checkbox", "required": False},
]
GROUP_TYPES = {field["key"]: field["type"] for field in FIELDS}


def chart(metric: str = "count", group_by: str = "priority", chart_type: str = "bar",
          key: str = "main") -> dict:
    """A validated chart definition; sum and average read the amount field."""
    found = {"key": key, "title": key.title(), "type": chart_type, "group_by": group_by, "metric": metric}
    return found if metric == "count" else {**found, "value_field": "amount"}


def definition(charts: list[dict] | None = None) -> dict:
    """A normalized definition, with charts when given."""
    found = {"schema_version": 1, "name": "Requests", "fields": FIELDS}
    return found if charts is None else {**found, "charts": charts}


def make_app(tenant_id, versions: dict[int, dict] | None = None) -> StudioApp:
    """A committed application with its versions (version 1 without charts by default)."""
    versions = versions or {1: definition()}
    found = StudioApp(tenant_id=tenant_id, name="Requests", latest_version=max(versions))
    db.session.add(found)
    db.session.flush()
    db.session.add_all(StudioVersion(tenant_id=tenant_id, app_id=found.id, version=number, definition=body,
                                     definition_hash=f"{number:064d}") for number, body in versions.items())
    db.session.commit()
    return found


def save(found: StudioApp, rows: list[dict], version: int = 1, tenant_id=None) -> None:
    """Commit one record per data dict in a single batch."""
    db.session.add_all(StudioRecord(tenant_id=tenant_id or found.tenant_id, app_id=found.id, version=version,
                                    data=data, trace=[], idempotency_key=uuid.uuid4(), input_digest="0" * 64)
                       for data in rows)
    db.session.commit()


def summarize(found: StudioApp, definition_chart: dict, version: int = 1) -> dict:
    """chart_summary for one chart of this application."""
    return chart_summary(found.tenant_id, found.id, version, definition_chart,
                         GROUP_TYPES[definition_chart["group_by"]])


def values(summary: dict) -> dict:
    """label → value of the shown points."""
    return {point["label"]: point["value"] for point in summary["points"]}


def test_count_sum_and_average_per_group(tenant):
    found = make_app(tenant.id)
    save(found, [{"priority": "low", "amount": 10}, {"priority": "low", "amount": 20},
                 {"priority": "high", "amount": 5}])
    assert summarize(found, chart("count")) == {
        "key": "main", "title": "Main", "type": "bar", "metric": "count", "record_count": 3,
        "included_count": 3, "omitted_groups": 0,
        "points": [{"label": "low", "value": 2, "count": 2}, {"label": "high", "value": 1, "count": 1}]}
    assert summarize(found, chart("sum"))["points"] == [{"label": "low", "value": 30, "count": 2},
                                                        {"label": "high", "value": 5, "count": 1}]
    assert summarize(found, chart("average"))["points"] == [{"label": "low", "value": 15, "count": 2},
                                                            {"label": "high", "value": 5, "count": 1}]


def test_records_missing_the_group_or_the_value_are_skipped(tenant):
    found = make_app(tenant.id)
    save(found, [{"priority": "low", "amount": 4}, {"amount": 7}, {"priority": "high"},
                 {"priority": None, "amount": 1}, {"priority": "high", "amount": None}])
    summed = summarize(found, chart("sum"))
    assert (summed["record_count"], summed["included_count"]) == (5, 1)
    assert summed["points"] == [{"label": "low", "value": 4, "count": 1}]
    counted = summarize(found, chart("count"))
    assert (counted["record_count"], counted["included_count"]) == (5, 3)
    assert values(counted) == {"low": 1, "high": 2}


def test_zero_and_negative_values_are_counted(tenant):
    found = make_app(tenant.id)
    save(found, [{"priority": "low", "amount": 0}, {"priority": "low", "amount": -4},
                 {"priority": "high", "amount": 0}, {"priority": "high", "amount": -0.5}])
    summed = summarize(found, chart("sum"))
    assert summed["included_count"] == 4
    assert summed["points"] == [{"label": "high", "value": -0.5, "count": 2},
                                {"label": "low", "value": -4, "count": 2}]
    assert values(summarize(found, chart("average"))) == {"low": -2, "high": -0.25}


def test_average_divides_by_included_records_only(tenant):
    found = make_app(tenant.id)
    save(found, [{"priority": "low", "amount": 10}, {"priority": "low", "amount": 20}, {"priority": "low"}])
    averaged = summarize(found, chart("average"))
    assert averaged["points"] == [{"label": "low", "value": 15, "count": 2}]
    assert (averaged["record_count"], averaged["included_count"]) == (3, 2)


def test_values_are_rounded_half_up_to_two_decimals(tenant):
    found = make_app(tenant.id)
    save(found, [{"priority": "thirds", "amount": 3}, {"priority": "thirds", "amount": 3},
                 {"priority": "thirds", "amount": 4}, {"priority": "binary", "amount": 2.675},
                 {"priority": "eighth", "amount": 0.125}])
    assert values(summarize(found, chart("average"))) == {"thirds": 3.33, "binary": 2.68, "eighth": 0.13}
    assert values(summarize(found, chart("sum"))) == {"thirds": 10, "binary": 2.68, "eighth": 0.13}
    assert all(type(value) is int for value in values(summarize(found, chart("count"))).values())


def test_bar_chart_shows_the_30_highest_groups_descending_and_counts_the_rest(tenant):
    found = make_app(tenant.id)
    rows = [{"title": f"group {index:02d}", "amount": index} for index in range(35)]
    rows.append({"title": "group 00 tie", "amount": 33})  # ties are ordered by label
    random.Random(7).shuffle(rows)
    save(found, rows)
    summary = summarize(found, chart("sum", group_by="title"))
    expected = ["group 34", "group 00 tie", "group 33"] + [f"group {index:02d}" for index in range(32, 5, -1)]
    assert [point["label"] for point in summary["points"]] == expected
    assert summary["omitted_groups"] == 6
    assert (summary["record_count"], summary["included_count"]) == (36, 36)
    assert not any(point["label"].lower() in ("other", "others") for point in summary["points"])


def test_line_chart_shows_the_latest_30_dates_ascending_without_zero_fill(tenant):
    found = make_app(tenant.id)
    dates = [(date(2024, 1, 1) + timedelta(days=3 * index)).isoformat() for index in range(40)]
    rows = [{"due": day} for day in dates] + [{"due": dates[-1]}]
    random.Random(3).shuffle(rows)
    save(found, rows)
    summary = summarize(found, chart("count", group_by="due", chart_type="line"))
    assert [point["label"] for point in summary["points"]] == dates[10:]
    assert [point["value"] for point in summary["points"]] == [1] * 29 + [2]
    assert summary["omitted_groups"] == 10


def test_versions_never_mix(tenant):
    found = make_app(tenant.id, {1: definition(), 2: definition()})
    save(found, [{"priority": "low", "amount": 1}] * 2, version=1)
    save(found, [{"priority": "low", "amount": 100}, {"priority": "high", "amount": 5}], version=2)
    first = summarize(found, chart("sum"), version=1)
    assert (first["record_count"], first["points"]) == (2, [{"label": "low", "value": 2, "count": 2}])
    assert values(summarize(found, chart("sum"), version=2)) == {"low": 100, "high": 5}


def test_records_of_another_tenant_or_another_app_never_count(tenant, other_tenant):
    found = make_app(tenant.id)
    save(found, [{"priority": "low"}])
    save(make_app(tenant.id), [{"priority": "low"}, {"priority": "high"}])
    save(make_app(other_tenant.id), [{"priority": "low"}, {"priority": "high"}])
    save(found, [{"priority": "high"}], tenant_id=other_tenant.id)  # a row only the tenant filter excludes
    summary = summarize(found, chart("count"))
    assert (summary["record_count"], summary["points"]) == (1, [{"label": "low", "value": 1, "count": 1}])


def test_checkbox_groups_are_labelled_true_and_false(tenant):
    found = make_app(tenant.id)
    save(found, [{"urgent": True}, {"urgent": True}, {"urgent": False}, {"title": "no answer"}])
    summary = summarize(found, chart("count", group_by="urgent"))
    assert summary["points"] == [{"label": "true", "value": 2, "count": 2},
                                 {"label": "false", "value": 1, "count": 1}]
    assert (summary["record_count"], summary["included_count"]) == (4, 3)


def test_chart_summaries_keys_only_versions_with_charts_and_records(tenant):
    charts = [chart("count", key="by_priority"), chart("sum", group_by="urgent", key="urgent_amount")]
    versions = {1: definition(charts), 2: definition(charts), 3: definition()}
    found = make_app(tenant.id, versions)
    save(found, [{"priority": "low", "urgent": True, "amount": 2}], version=1)
    save(found, [{"priority": "high"}], version=3)
    summaries = chart_summaries(tenant.id, found.id, versions)
    assert list(summaries) == ["1"]
    assert [summary["key"] for summary in summaries["1"]] == ["by_priority", "urgent_amount"]
    assert summaries["1"][1]["points"] == [{"label": "true", "value": 2, "count": 1}]


def test_chart_summaries_are_empty_when_no_version_has_charts(tenant):
    found = make_app(tenant.id)
    save(found, [{"priority": "low"}])
    assert chart_summaries(tenant.id, found.id, {1: definition()}) == {}


def test_every_record_is_aggregated_not_only_the_latest_100(tenant):
    found = make_app(tenant.id)
    save(found, [{"priority": "low" if index % 3 else "high", "amount": 1} for index in range(150)])
    summary = summarize(found, chart("sum"))
    assert summary["record_count"] == 150
    assert values(summary) == {"low": 100, "high": 50}
