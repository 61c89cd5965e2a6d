"""The service-level report (issue 36): for the last 7 or 30 Beijing days, per target kind, per member
and per channel, how many targets were measured, met and breached, the percentage achieved, and the
median and 90th percentile of the minutes a met or late target took (in its own hours: business
minutes for business-hours policies); and the percentage achieved per day for the chart.

A timer belongs to the Beijing day it started (`started_on`, indexed with the tenant). It is measured
once decided: `met` (ended in time) or `breached` (due time passed, answered or not); a running
timer not yet due and a response timer closed by resolving are not. A target's member is who ended
it (replied or resolved), so a breach nobody has answered yet counts for its kind and channel only.
Everything is computed by SQL aggregation over the stored timers, never by loading conversations:
percentiles are nearest-rank, from window functions both databases run alike.
"""
import uuid
from datetime import date, datetime, timedelta

from sqlalchemy import ColumnElement, case, func, select

from core.api import ApiError
from core.clock import to_beijing
from core.db import db
from desk.service_level_models import TIMER_KINDS, ServiceLevelTimer as Timer

REPORT_DAYS = (7, 30)
MEASURED = ("met", "breached")


def report_days(value: object) -> int:
    """7 or 30 from the query string; else 400 invalid_days."""
    if value not in {str(days) for days in REPORT_DAYS}:
        raise ApiError("invalid_days", 400)
    return int(value)


def first_day(now: datetime, days: int) -> date:
    """The first Beijing day of the `days` days that end today."""
    return to_beijing(now).date() - timedelta(days=days - 1)


def _percent(part: int, whole: int) -> float | None:
    return round(part * 100 / whole, 2) if whole else None


def _minutes(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _numbers(row=None) -> dict:
    """A group's numbers (`row` from `_grouped`; none: nothing measured)."""
    if row is None:
        return {"measured": 0, "met": 0, "breached": 0, "achieved_percent": None, "median_minutes": None,
                "p90_minutes": None}
    return {"measured": row.measured, "met": row.met, "breached": row.breached,
            "achieved_percent": _percent(row.met, row.measured), "median_minutes": _minutes(row.median),
            "p90_minutes": _minutes(row.p90)}


def _grouped(tenant_id: uuid.UUID, since: date, key: ColumnElement | None) -> list:
    """Per (`key`, kind): measured, met and breached counts and the nearest-rank median and 90th
    percentile of the minutes taken, in one statement."""
    keys = [Timer.kind] if key is None else [key.label("key"), Timer.kind]
    elapsed = Timer.elapsed_minutes
    ranked = select(*keys, Timer.outcome, elapsed,
                    func.row_number().over(partition_by=keys, order_by=elapsed.asc().nulls_last()).label("rank"),
                    func.count(elapsed).over(partition_by=keys).label("timed")).where(
        Timer.tenant_id == tenant_id, Timer.started_on >= since, Timer.outcome.in_(MEASURED)).subquery()
    columns = [ranked.c.kind] if key is None else [ranked.c.key, ranked.c.kind]

    def at_rank(rank) -> ColumnElement:
        return func.max(case((ranked.c.rank == rank, ranked.c.elapsed_minutes)))

    return list(db.session.execute(select(
        *columns, func.count().label("measured"),
        func.sum(case((ranked.c.outcome == "met", 1), else_=0)).label("met"),
        func.sum(case((ranked.c.outcome == "breached", 1), else_=0)).label("breached"),
        at_rank((ranked.c.timed + 1) // 2).label("median"), at_rank((ranked.c.timed * 9 + 9) // 10).label("p90"))
        .group_by(*columns)))


def _by_key(rows: list, name: str) -> list[dict]:
    """`[{name: key, <kind>: numbers, ...}]` ordered by key, every kind present."""
    found: dict[str, dict] = {}
    for row in rows:
        found.setdefault(str(row.key), {})[row.kind] = row
    return [{name: key, **{kind: _numbers(kinds.get(kind)) for kind in TIMER_KINDS}}
            for key, kinds in sorted(found.items())]


def report(tenant_id: uuid.UUID, days: int, now: datetime) -> dict:
    """`{days, kinds: {kind: numbers}, members: [{member_id, kind: numbers}], channels: [{channel_id,
    kind: numbers}]}` for the `days` Beijing days ending today; numbers are `measured`, `met`,
    `breached`, `achieved_percent`, `median_minutes`, `p90_minutes` (null when nothing measured)."""
    since = first_day(now, days)
    kinds = {row.kind: row for row in _grouped(tenant_id, since, None)}
    members = [row for row in _grouped(tenant_id, since, Timer.member_id) if row.key is not None]
    return {"days": days, "kinds": {kind: _numbers(kinds.get(kind)) for kind in TIMER_KINDS},
            "members": _by_key(members, "member_id"),
            "channels": _by_key(_grouped(tenant_id, since, Timer.channel_id), "channel_id")}


def daily(tenant_id: uuid.UUID, days: int, now: datetime) -> list[dict]:
    """`[{day, measured, achieved_percent}]` for each of the `days` Beijing days ending today, every
    kind together (the chart), oldest first; a day without a measured target has none."""
    since = first_day(now, days)
    rows = {row.started_on: row for row in db.session.execute(
        select(Timer.started_on, func.count().label("measured"),
               func.sum(case((Timer.outcome == "met", 1), else_=0)).label("met"))
        .where(Timer.tenant_id == tenant_id, Timer.started_on >= since, Timer.outcome.in_(MEASURED))
        .group_by(Timer.started_on))}
    series = []
    for offset in range(days):
        day = since + timedelta(days=offset)
        row = rows.get(day)
        series.append({"day": day, "measured": row.measured if row else 0,
                       "achieved_percent": _percent(row.met, row.measured) if row else None})
    return series
