"""Database base class, shared column types and the Flask-SQLAlchemy handle."""
import re
import uuid
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from functools import cache, lru_cache

from flask import g, has_app_context
from flask_sqlalchemy import SQLAlchemy
from psycopg.pq import TransactionStatus
from sqlalchemy import JSON, DateTime, ForeignKey, MetaData, Row, TypeDecorator, Uuid, event, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import JSONB
from redis.exceptions import RedisError
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, registry

from core.api import ApiError


NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator):
    """A timestamp stored in UTC with microseconds and always read back timezone-aware."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given; store aware UTC datetimes only")
        value = value.astimezone(timezone.utc)
        # SQLite keeps no zone: store the UTC wall time so ordering stays lexical.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect):
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


# Documents queried inside SQL (chart aggregation) are JSONB on PostgreSQL: parsed once on write.
JSONDocument = JSON().with_variant(JSONB(), "postgresql")


class Base(DeclarativeBase):
    """Typed declarative base with a constraint naming convention for stable migrations."""

    registry = registry(metadata=MetaData(naming_convention=NAMING_CONVENTION),
                        type_annotation_map={datetime: UTCDateTime(), uuid.UUID: Uuid()})


class UUIDPrimaryKey:
    """Mixin: a random UUID primary key."""

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, default=uuid.uuid4)


class TenantAppCount:
    """Mixin: a tenant's count of applications ever created, the row `take_tenant_slot` updates."""

    tenant_id: Mapped[uuid.UUID] = mapped_column(ForeignKey("tenant.id"), primary_key=True)
    app_count: Mapped[int] = mapped_column(default=0)


db = SQLAlchemy(model_class=Base)

READ_ONLY_SQLSTATE = "25006"  # read_only_sql_transaction: a failed-over old primary refuses writes
QUERY_CANCELED_SQLSTATE = "57014"  # query_canceled: the statement outlived statement_timeout
CONNECT_TIMEOUT_SECONDS = 5  # a PostgreSQL that does not answer a connection attempt within this is away
_STATEMENT_TIMEOUT = ContextVar("statement_timeout_ms", default=None)  # a job's own, else the process's
_TIMEOUT_SET = "statement_timeout_ms"  # a pooled connection's info: the statement_timeout it has now


def engine_options(cfg) -> dict:
    """The engine options for the configured database: on PostgreSQL each connection is opened with
    a bounded connect wait and the web's statement_timeout (DB_STATEMENT_TIMEOUT_SECONDS), so a
    request never waits on a lock or a slow statement longer than that, and no extra round trip is
    spent setting it; and in the driver's autocommit mode, so a transaction begins at the first
    write (`watch_engine`), as on SQLite."""
    options = dict(cfg["SQLALCHEMY_ENGINE_OPTIONS"])
    if cfg["SQLALCHEMY_DATABASE_URI"].startswith("postgresql"):
        options.setdefault("isolation_level", "AUTOCOMMIT")
        options.setdefault("connect_args", {
            "connect_timeout": CONNECT_TIMEOUT_SECONDS,
            "options": f"-c statement_timeout={_milliseconds(cfg['DB_STATEMENT_TIMEOUT_SECONDS'])}"})
    return options


def _milliseconds(seconds: float) -> int:
    return int(seconds * 1000)


def watch_engine(engine: Engine, statement_timeout_seconds: float) -> None:
    """Wire the engine's outage handling (called once per app, at wiring time):

    - a statement refused with SQLSTATE 25006 counts as a disconnect, so the whole pool is dropped
      and the next checkout connects anew: a pool attached to a failed-over, read-only old primary
      follows the new primary at once instead of failing for days (a dead connection, found by
      the statement that meets it, drops the pool the same way);
    - on PostgreSQL a transaction begins at the first write (`_begin_at_first_write`);
    - on PostgreSQL a connection checked out inside `statement_timeout(…)` (a job) gets that bound,
      set only when it differs from the one the connection has.
    """
    event.listen(engine, "handle_error", _read_only_is_a_disconnect)
    if engine.dialect.name != "postgresql":
        return
    event.listen(engine, "before_cursor_execute", _begin_at_first_write)
    default_ms = _milliseconds(statement_timeout_seconds)

    def connected(dbapi_connection, record):
        record.info[_TIMEOUT_SET] = default_ms  # opened with it (engine_options)

    def checked_out(dbapi_connection, record, proxy):
        wanted = _STATEMENT_TIMEOUT.get()
        wanted = default_ms if wanted is None else wanted
        if record.info.get(_TIMEOUT_SET) != wanted:
            with dbapi_connection.cursor() as cursor:
                cursor.execute(f"SET statement_timeout = {int(wanted)}")
            dbapi_connection.commit()  # a SET inside a transaction would end with its rollback
            record.info[_TIMEOUT_SET] = wanted

    event.listen(engine, "connect", connected)
    event.listen(engine, "checkout", checked_out)


_LOCKING_READ = re.compile(r"\bFOR\s+(?:NO\s+KEY\s+)?(?:UPDATE|SHARE|KEY\s+SHARE)\b", re.IGNORECASE)
WROTE_IN_CONTEXT = "db_wrote"  # flask.g flag: a transaction began in this request or job


@lru_cache(maxsize=4096)
def _reads_only(statement: str) -> bool:
    """Whether a statement needs no transaction: a SELECT that takes no row lock. Anything else (a
    write, a CTE, DDL, SET) begins one, the safe side."""
    return statement.lstrip()[:6].upper() == "SELECT" and _LOCKING_READ.search(statement) is None


def _begin_at_first_write(conn, cursor, statement, parameters, context, executemany) -> None:
    """PostgreSQL in autocommit mode (`engine_options`): reads outside a transaction cost one round
    trip each, and a transaction begins right before the first statement that writes or locks,
    ended by the session's commit or rollback (psycopg sends COMMIT or ROLLBACK only inside one).
    Under READ COMMITTED each statement sees the latest commit either way, so reads lose nothing.
    A connection set to AUTOCOMMIT explicitly (`step_connection`) runs each statement alone."""
    if cursor.connection.info.transaction_status != TransactionStatus.IDLE or _reads_only(statement) \
            or context.execution_options.get("isolation_level") == "AUTOCOMMIT":
        return
    cursor.execute("BEGIN")
    if has_app_context():
        g.setdefault(WROTE_IN_CONTEXT, True)


def wrote_in_context() -> bool:
    """Whether a transaction began on PostgreSQL in this request or job (a request that began none
    may be run again without doing anything twice)."""
    return g.get(WROTE_IN_CONTEXT, False)


def _read_only_is_a_disconnect(context) -> None:
    if getattr(context.original_exception, "sqlstate", None) == READ_ONLY_SQLSTATE:
        context.is_disconnect = True


@contextmanager
def statement_timeout(seconds: float):
    """Connections checked out inside the block bound each statement to `seconds` on PostgreSQL
    (0 or less: no bound, for migrations and jobs without a timeout). A job runs inside its own
    timeout, so a job that RQ cuts never leaves its statement running at the server."""
    token = _STATEMENT_TIMEOUT.set(_milliseconds(max(seconds, 0)))  # RQ's -1: no timeout
    try:
        yield
    finally:
        _STATEMENT_TIMEOUT.reset(token)


def is_store_outage(error: Exception) -> bool:
    """PostgreSQL or Redis out of reach or restarting, refusing writes as a failed-over old primary
    does (SQLSTATE 25006), or a statement cut by statement_timeout (a lock held too long): a
    temporary outage, never a fault of the request."""
    if isinstance(error, (RedisError, OperationalError)):
        return True
    return isinstance(error, DBAPIError) and (error.connection_invalidated or _sqlstate(error) == READ_ONLY_SQLSTATE)


def cut_by_statement_timeout(error: Exception) -> bool:
    """A statement PostgreSQL cancelled at statement_timeout (SQLSTATE 57014)."""
    return isinstance(error, DBAPIError) and _sqlstate(error) == QUERY_CANCELED_SQLSTATE


def _sqlstate(error: DBAPIError) -> str | None:
    return getattr(error.orig, "sqlstate", None)


@event.listens_for(Engine, "connect")
def _sqlite_pragmas(dbapi_connection, connection_record):
    """SQLite (the embedded default): enforce foreign keys, let readers and a writer overlap.

    A transaction begins at a unit of work's first write, as BEGIN IMMEDIATE: it waits for the
    write lock (busy timeout) and reads the latest commit from then on. Reads before it see the
    latest commit each, as under PostgreSQL's READ COMMITTED. A deferred transaction that read
    first would fail at once with "database is locked" when another write committed in between,
    which is why nothing here uses SAVEPOINT (pysqlite opens no transaction before it): use
    `insert_unless_present` and conditional statements instead.
    """
    if type(dbapi_connection).__module__.startswith("sqlite3"):
        dbapi_connection.isolation_level = "IMMEDIATE"
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")  # safe with WAL; skips an fsync per commit
        cursor.execute("PRAGMA busy_timeout=15000")
        cursor.close()


POSTGRESQL = "postgresql"  # the dialect whose statements may do in one what others do in steps


def prepared(build):
    """The one way to hand-build Core statements on a hot path: `build(…, dialect)` runs once per
    arguments and dialect and is kept (building them costs more than running them). The rules:
    bind parameters are named `p_<what>`, so none is taken for a column's own parameter of an
    INSERT or UPDATE; the dialect is an explicit argument, and callers branch on its name
    (`POSTGRESQL`), never on which statements a builder returned; each builder's docstring names
    the guarantee its statements rely on (a row lock, a compare-and-swap, an upsert)."""
    return cache(build)


def upsert_insert(dialect: str):
    """The dialect's INSERT with ON CONFLICT (PostgreSQL's or SQLite's), for `prepared` builders."""
    return postgresql.insert if dialect == POSTGRESQL else sqlite.insert


WROTE = "wrote"  # Session.info flag: this transaction has written (flushed or executed DML)


@event.listens_for(Session, "after_flush")
def _flushed(session, flush_context):
    session.info[WROTE] = True


@event.listens_for(Session, "do_orm_execute")
def _executed(state):
    if not state.is_select:
        state.session.info[WROTE] = True


@event.listens_for(Session, "after_commit")
@event.listens_for(Session, "after_rollback")
def _ended(session):
    session.info.pop(WROTE, None)


def step_connection():
    """A pooled connection for one step of a job that waits on an outside server between steps
    (claim, then outcome), so none is held meanwhile. On PostgreSQL each step is a single
    statement, atomic by itself, so it runs in autocommit, set explicitly so that even a write
    begins no transaction (`_begin_at_first_write`): one round trip, without BEGIN and COMMIT;
    elsewhere the step is a transaction its caller commits."""
    conn = db.engine.connect()
    return conn.execution_options(isolation_level="AUTOCOMMIT") if conn.dialect.name == POSTGRESQL else conn


def end_reads() -> None:
    """End a transaction that has only read, before waiting on something slow (the script
    runner, a model, an outside server): its pooled connection goes back to the pool and no lock
    is held. Loaded objects are expired and reload on their next use. A transaction that has
    written is refused, never rolled back: write after waiting, or commit before."""
    session = db.session
    if session.new or session.dirty or session.deleted or session.info.get(WROTE):
        raise RuntimeError("end_reads() after a write: write after waiting, or commit before")
    session.rollback()


@prepared
def _insert_unless_present(model, unique: tuple[str, ...], dialect: str):
    """INSERT … ON CONFLICT (unique) DO NOTHING RETURNING the row's columns, built once per model.
    Relies on the unique index: a concurrent twin waits for the first insert's transaction.

    A Core statement on the model's table: the ORM's bulk-insert path that would return an
    object costs a seventh of an inbound message's Python work (docs/benchmarks.md)."""
    table = model.__table__
    return upsert_insert(dialect)(table).on_conflict_do_nothing(index_elements=unique).returning(*table.c)


def insert_unless_present(model, unique: tuple[str, ...], values: dict) -> Row | None:
    """Insert one row unless a row with the same `unique` values exists; the new row, else None.

    One statement on PostgreSQL and SQLite: a duplicate neither raises nor spoils the transaction,
    so no savepoint is needed. A concurrent twin's insert waits for this one's transaction to end.
    The row is read-only, its columns as attributes; load the object when it must change.
    """
    statement = _insert_unless_present(model, unique, db.session.get_bind().dialect.name)
    return db.session.execute(statement, values).first()


def tenant_row(model, tenant_id: uuid.UUID, row_id: uuid.UUID, *criteria, fresh: bool = False, lock: bool = False):
    """The tenant's row of `model` with that id (and any further `criteria`); a foreign or missing id
    is 404 not_found, one answer for both (DESIGN.md §4.7). `fresh` reloads a row the session
    holds; `lock` takes its row lock."""
    query = select(model).where(model.id == row_id, model.tenant_id == tenant_id, *criteria)
    if fresh:
        query = query.execution_options(populate_existing=True)
    found = db.session.scalar(query.with_for_update() if lock else query)
    if found is None:
        raise ApiError("not_found", 404)
    return found
