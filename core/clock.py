"""Clock helpers: store UTC, interpret dates in Beijing time (Asia/Shanghai); core/i18n.py shows them."""
from datetime import date, datetime, time, timedelta, timezone
from zoneinfo import ZoneInfo

BEIJING = ZoneInfo("Asia/Shanghai")


def utcnow() -> datetime:
    """The current time as an aware UTC datetime."""
    return datetime.now(timezone.utc)


def to_beijing(moment: datetime) -> datetime:
    """Convert an aware datetime to Beijing time."""
    if moment.tzinfo is None:
        raise ValueError("naive datetime")
    return moment.astimezone(BEIJING)


def beijing_day_range(start: date, end: date) -> tuple[datetime, datetime]:
    """UTC bounds [from, until) of Beijing days start..end, the end day included in full."""
    if end < start:
        raise ValueError("end before start")
    lower = datetime.combine(start, time.min, BEIJING)
    upper = datetime.combine(end + timedelta(days=1), time.min, BEIJING)
    return lower.astimezone(timezone.utc), upper.astimezone(timezone.utc)


def beijing_to_utc(local: datetime) -> datetime:
    """Interpret a naive wall-clock time as Beijing time and return it in UTC."""
    if local.tzinfo is not None:
        raise ValueError("expected a naive Beijing wall-clock time")
    return local.replace(tzinfo=BEIJING).astimezone(timezone.utc)


def iso(moment: datetime | None) -> str | None:
    """ISO 8601 in UTC with microseconds and a `Z`, as every JSON API returns timestamps."""
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
