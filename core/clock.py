"""Clock helpers: store UTC, display and interpret dates in Beijing time (Asia/Shanghai)."""
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


def format_beijing(moment: datetime | None, with_zone: bool = True) -> str:
    """Render a moment for people: `2026-11-22 21:35 Beijing time`."""
    if moment is None:
        return ""
    text = to_beijing(moment).strftime("%Y-%m-%d %H:%M")
    return f"{text} Beijing time" if with_zone else text


def format_beijing_seconds(moment: str | None) -> str:
    """An ISO-8601 time (as the JSON APIs give it) for people, to the second: rolling quotas
    free up at any second."""
    if moment is None:
        return ""
    return to_beijing(datetime.fromisoformat(moment)).strftime("%Y-%m-%d %H:%M:%S") + " Beijing time"


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
