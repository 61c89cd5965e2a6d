"""The AI points ledger: each use of the platform model by a tenant, its tokens and its points.

Points: 1 per started 1,000 tokens, input and output counted together (1 token is 1 point,
1,000 tokens are 1, 1,001 are 2). With AI points enabled a tenant's generations are metered by
this ledger instead of being capped at 20 per day.
"""
import uuid
from datetime import timedelta

from sqlalchemy import Date, func, select
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from core import audit
from core.api import ApiError
from core.clock import beijing_day_range, to_beijing, utcnow
from core.db import db
from desk.models import AI_USES, AiPointsEntry, Tenant

POINTS_PER_1K_TOKENS = 1
LATEST_ENTRIES = 50
REFERENCE_MAX = 80
TOTALS = ("uses", "input_tokens", "output_tokens", "points")


class beijing_date(FunctionElement):  # noqa: N801  a SQL function, named like one
    """The Beijing calendar date of a stored UTC time, computed by the database for GROUP BY."""

    type = Date()
    inherit_cache = True


@compiles(beijing_date, "postgresql")
def _beijing_date_postgresql(element, compiler, **kw):
    """PostgreSQL: the stored timestamptz as a Beijing wall-clock time, cut to its date."""
    (moment,) = element.clauses
    return f"CAST(timezone('Asia/Shanghai', {compiler.process(moment, **kw)}) AS DATE)"


@compiles(beijing_date, "sqlite")
def _beijing_date_sqlite(element, compiler, **kw):
    """SQLite: the stored UTC text eight hours on, cut to its date."""
    # SQLite keeps the UTC wall time as text and rounds fractions to milliseconds, which would put
    # 23:59:59.9999 on the next day: the whole seconds are enough for a date. Beijing has no DST.
    (moment,) = element.clauses
    return f"date(substr({compiler.process(moment, **kw)}, 1, 19), '+8 hours')"


def points_for(input_tokens: int, output_tokens: int) -> int:
    """The points a use costs: POINTS_PER_1K_TOKENS per started 1,000 tokens of input and output."""
    started_thousands = -(-(input_tokens + output_tokens) // 1000)
    return started_thousands * POINTS_PER_1K_TOKENS


def record_use(tenant_id: uuid.UUID, kind: str, reference: str | None, input_tokens: int,
               output_tokens: int) -> AiPointsEntry:
    """Add a ledger row for one use of the model (flush, never commit)."""
    if kind not in AI_USES:
        raise ValueError(f"unknown AI use {kind!r}")
    if input_tokens < 0 or output_tokens < 0:
        raise ValueError("token counts cannot be negative")
    if reference is not None and len(reference) > REFERENCE_MAX:
        raise ValueError(f"reference longer than {REFERENCE_MAX} characters")
    entry = AiPointsEntry(tenant_id=tenant_id, kind=kind, reference=reference,
                          input_tokens=input_tokens, output_tokens=output_tokens,
                          points=points_for(input_tokens, output_tokens))
    db.session.add(entry)
    db.session.flush()
    return entry


def set_ai_points(tenant_id: uuid.UUID, enabled: bool, actor_id: uuid.UUID | None = None) -> Tenant:
    """Turn metered AI use on or off for a tenant, audited (404 for an unknown tenant)."""
    tenant = db.session.get(Tenant, tenant_id)
    if tenant is None:
        raise ApiError("not_found", 404)
    if tenant.ai_points_enabled != enabled:
        tenant.ai_points_enabled = enabled
        audit.record(tenant.id, actor_id, "tenant.ai_points_changed", f"tenant:{tenant.id}",
                     {"enabled": enabled})
    db.session.flush()
    return tenant


def _sums() -> tuple:
    """The aggregate columns every total reports."""
    return (func.count().label("uses"), func.sum(AiPointsEntry.input_tokens).label("input_tokens"),
            func.sum(AiPointsEntry.output_tokens).label("output_tokens"),
            func.sum(AiPointsEntry.points).label("points"))


def _totals(row) -> dict:
    """One aggregate row as plain integers (SUM over no rows is NULL)."""
    return {name: int(getattr(row, name) or 0) for name in TOTALS}


def usage_summary(tenant_id: uuid.UUID, days: int = 30) -> dict:
    """The tenant's use over the last `days` Beijing days, today included: totals overall, per
    kind (every kind, zero when unused) and per day with use (newest first)."""
    last = to_beijing(utcnow()).date()
    first = last - timedelta(days=days - 1)
    lower, upper = beijing_day_range(first, last)
    scope = (AiPointsEntry.tenant_id == tenant_id, AiPointsEntry.created_at >= lower,
             AiPointsEntry.created_at < upper)
    day = beijing_date(AiPointsEntry.created_at)
    per_kind = {row.kind: _totals(row) for row in db.session.execute(
        select(AiPointsEntry.kind, *_sums()).where(*scope).group_by(AiPointsEntry.kind))}
    per_day = db.session.execute(select(day.label("day"), *_sums()).where(*scope)
                                 .group_by(day).order_by(day.desc()))
    return {"days": days, "first_day": first.isoformat(), "last_day": last.isoformat(),
            "total": _totals(db.session.execute(select(*_sums()).where(*scope)).one()),
            "by_kind": {kind: per_kind.get(kind, dict.fromkeys(TOTALS, 0)) for kind in AI_USES},
            "by_day": [{"date": row.day.isoformat(), **_totals(row)} for row in per_day]}


def latest_entries(tenant_id: uuid.UUID, limit: int = LATEST_ENTRIES) -> list[AiPointsEntry]:
    """The tenant's most recent ledger rows, newest first."""
    return list(db.session.scalars(select(AiPointsEntry).where(AiPointsEntry.tenant_id == tenant_id)
                                   .order_by(AiPointsEntry.created_at.desc()).limit(limit)))
