"""Chart summaries: per-version aggregates of all saved records, grouped in SQL."""
from decimal import ROUND_HALF_UP, Decimal

from sqlalchemy import func, null, select

from core.db import db
from studio.models import StudioRecord

MAX_POINTS = 30
CENT = Decimal("0.01")


def chart_summaries(tenant_id, app_id, definitions: dict[int, dict]) -> dict[str, list[dict]]:
    """Summaries of each charted version that has records, keyed by version number as a string."""
    charted = {number: definition for number, definition in definitions.items() if definition.get("charts")}
    if not charted:
        return {}
    with_records = db.session.scalars(select(StudioRecord.version).distinct().where(
        StudioRecord.tenant_id == tenant_id, StudioRecord.app_id == app_id,
        StudioRecord.version.in_(list(charted))))
    summaries = {}
    for version in sorted(with_records):
        field_types = {field["key"]: field["type"] for field in charted[version]["fields"]}
        summaries[str(version)] = [
            chart_summary(tenant_id, app_id, version, chart, field_types[chart["group_by"]])
            for chart in charted[version]["charts"]]
    return summaries


def chart_summary(tenant_id, app_id, version: int, chart: dict, group_type: str) -> dict:
    """One chart over all saved records of one version of one tenant's application."""
    rows = _grouped_rows(tenant_id, app_id, version, chart, group_type)
    points = [_point(_label(row.label, group_type), row.included, row.total, chart["metric"])
              for row in rows if row.label is not None and row.included]
    shown = _shown(points, chart["type"])
    return {"key": chart["key"], "title": chart["title"], "type": chart["type"], "metric": chart["metric"],
            "record_count": sum(row.records for row in rows),
            "included_count": sum(point["count"] for point in points),
            "omitted_groups": len(points) - len(shown), "points": shown}


def _grouped_rows(tenant_id, app_id, version: int, chart: dict, group_type: str) -> list:
    """Per group value (NULL = group missing): all records, records with a value, and the value total."""
    field = StudioRecord.data[chart["group_by"]]
    group = field.as_boolean() if group_type == "checkbox" else field.as_string()
    if chart["metric"] == "count":
        included, total = func.count(), null()
    else:
        value = StudioRecord.data[chart["value_field"]].as_float()
        # COUNT(value) and SUM skip NULLs, so records missing the value are left out of both.
        included, total = func.count(value), func.sum(value)
    # One `group` object in SELECT and GROUP BY shares one bound JSON path, which PostgreSQL needs
    # to see the two as the same expression.
    return db.session.execute(
        select(group.label("label"), func.count().label("records"), included.label("included"),
               total.label("total"))
        .where(StudioRecord.tenant_id == tenant_id, StudioRecord.app_id == app_id,
               StudioRecord.version == version)
        .group_by(group)).all()


def _label(value, group_type: str) -> str:
    """The group value as a label; checkboxes read 1/0 on SQLite and true/false on PostgreSQL."""
    if group_type == "checkbox":
        return "true" if value else "false"
    return value


def _point(label: str, count: int, total, metric: str) -> dict:
    """One point; sums and averages rounded half up to two decimals, counts as integers."""
    if metric == "count":
        return {"label": label, "value": count, "count": count}
    exact = Decimal(str(total))  # the shortest float repr keeps 2.675 as stored, not its binary neighbour
    if metric == "average":
        exact /= count
    return {"label": label, "value": float(exact.quantize(CENT, rounding=ROUND_HALF_UP)), "count": count}


def _shown(points: list[dict], chart_type: str) -> list[dict]:
    """Bars: the 30 highest values, descending; lines: the latest 30 dates in calendar order."""
    if chart_type == "line":
        # YYYY-MM-DD labels sort lexically in calendar order.
        return sorted(points, key=lambda point: point["label"])[-MAX_POINTS:]
    return sorted(points, key=lambda point: (-point["value"], point["label"]))[:MAX_POINTS]
