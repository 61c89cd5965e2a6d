"""The SQL the app sends, counted."""
from sqlalchemy import event

from core.db import db


def statements(app, action) -> int:
    """How many SQL statements `action` makes."""
    executed = []
    listen = lambda *args: executed.append(args[2])  # noqa: E731  (conn, cursor, statement, ...)
    event.listen(db.engine, "before_cursor_execute", listen)
    try:
        action()
    finally:
        event.remove(db.engine, "before_cursor_execute", listen)
    return len(executed)
