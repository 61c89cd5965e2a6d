"""Create-once: a row written at most once per key, however often and however concurrently asked.

Every writer of idempotent rows (Studio records, Open API records, inbound messages, and the
automation rules' command receipts) follows the same sequence through `CreateOnce`:

1. `existing(key, digest)`: the row saved earlier under the key is replayed, when its digest
   matches; another input under the same key is `409 idempotency_conflict`.
2. `insert(values, digest)`: `INSERT … ON CONFLICT DO NOTHING RETURNING`; when a concurrent twin
   won the race, its row is replayed by the same rule.
3. `take_slot(update, refusal)`: a conditional UPDATE that counts the new row against its limit;
   when it matches nothing, `refusal()` finds out which condition failed and that error is raised
   (the caller rolls the whole unit of work back, the inserted row with it).
"""
import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Row, select, update
from sqlalchemy.sql import Update

from core.api import ApiError
from core.db import db, insert_unless_present


def digest(value: object) -> str:
    """SHA-256 hex of a JSON value serialized compactly in the order given: reordered keys differ."""
    serialized = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    # surrogatepass: a lone surrogate must reach validation (and be refused) rather than crash here.
    return hashlib.sha256(serialized.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class CreateOnce:
    """How one kind of row is created once: its model, its unique key columns and where the digest
    of the request that created it is kept (None: every replay answers with the original)."""

    model: type
    key: tuple[str, ...]
    digest_column: str | None = None

    def _find(self, values: dict) -> Row | None:
        """The row already saved under the key in `values`, if any (its columns, as inserted)."""
        table = self.model.__table__
        return db.session.execute(select(*table.c).where(
            *(table.c[column] == values[column] for column in self.key))).first()

    def _replay(self, row, request_digest: str | None):
        """The original row for the same request; 409 idempotency_conflict for another one."""
        if self.digest_column is not None and getattr(row, self.digest_column) != request_digest:
            raise ApiError("idempotency_conflict", 409)
        return row

    def existing(self, values: dict, request_digest: str | None = None):
        """The row saved earlier under this key, replayed; None when the key is new."""
        row = self._find(values)
        return None if row is None else self._replay(row, request_digest)

    def insert(self, values: dict, request_digest: str | None = None) -> tuple[object, bool]:
        """Insert the row unless its key exists; (row, replayed) — a concurrent twin's row replayed.

        One statement on PostgreSQL and SQLite: a duplicate neither raises nor spoils the
        transaction, and a twin still in flight is waited for by the database.
        """
        if self.digest_column is not None:
            values = {**values, self.digest_column: request_digest}
        row = insert_unless_present(self.model, self.key, values)
        if row is None:
            return self._replay(self._find(values), request_digest), True
        return row, False


def take_slot(statement: Update, refusal: Callable[[], ApiError]) -> None:
    """Count one more item with a conditional UPDATE; when it matched no row, raise `refusal()`.

    `refusal` reads the current state to name the condition that failed (a limit reached, an
    application switched off or revoked meanwhile): one statement takes the slot, race-free on
    PostgreSQL and SQLite, and the reason is looked up only on the way out.
    """
    if db.session.execute(statement).rowcount != 1:
        raise refusal()


def take_tenant_slot(counter, tenant_id: uuid.UUID, limit: int, code: str) -> None:
    """Count one more of a tenant's items in `counter` (a `TenantAppCount` table), else `429 code`.

    The count never goes down, so deleted or revoked items keep counting.
    """
    insert_unless_present(counter, ("tenant_id",), {"tenant_id": tenant_id, "app_count": 0})
    take_slot(update(counter).where(counter.tenant_id == tenant_id, counter.app_count < limit)
              .values(app_count=counter.app_count + 1), lambda: ApiError(code, 429))
