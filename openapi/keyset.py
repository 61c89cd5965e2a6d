"""Keyset pages of the Open API: up to 50 items ordered by UUID, continued after the last id."""
import uuid

from core.api import parse_uuid

PAGE_SIZE = 50


def parse_cursor(value: str | None) -> uuid.UUID | None:
    """The `after` query parameter: absent, or a UUID in text form (400 invalid_cursor)."""
    return None if value is None else parse_uuid(value, "invalid_cursor")


def page(rows: list, as_json) -> dict:
    """A list page from up to 51 rows: 50 items and the id to continue after (null at the end)."""
    items = rows[:PAGE_SIZE]
    more = len(rows) > PAGE_SIZE
    return {"items": [as_json(row) for row in items], "next_after": str(items[-1].id) if more else None}
