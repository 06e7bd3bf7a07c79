"""The database plumbing both ledgers share (budget, lineage): SQLite by default, PostgreSQL by URL, through
SQLAlchemy; one transaction per write, one error per failure.

A ledger's location (:func:`ledger_location`) is a SQLite file (``sqlite:///PATH``, a plain path, or the default
under ``$DPSYN_HOME``) or a PostgreSQL database (``postgresql://USER@HOST/DB``, ``postgresql+psycopg://…``;
always driven by psycopg 3). :func:`connect` yields a :class:`Db`: ``execute(sql, params)`` with ``?``
placeholders, rows read by column name or index. The ledgers' SQL is the common subset of both dialects.

A write is one transaction, rolled back on any exception, with the ledger's schema applied first (idempotent, so
an older ledger gains the tables a newer version added), and writers never interleave:

* SQLite: ``BEGIN IMMEDIATE`` … ``COMMIT``: the database's write lock is taken before the first read, so a
  writer reads what every earlier writer committed, and no other writer starts until it commits;
* PostgreSQL: ``BEGIN ISOLATION LEVEL READ COMMITTED``, then ``pg_advisory_xact_lock(K)`` with ``K`` fixed per
  kind of ledger, released by the ``COMMIT``/``ROLLBACK``. The same one-writer-at-a-time rule: the lock comes
  first (before the schema's DDL, which PostgreSQL cannot run concurrently, and before any read), and each later
  statement reads a fresh READ COMMITTED snapshot, i.e. everything the previous holder committed. A row lock
  (``SELECT … FOR UPDATE``) would not do: the row that a reservation checks against (its population) may not
  exist yet, and "the sum of the other reservations" is not one row. (Under REPEATABLE READ the snapshot would
  be taken before the lock wait, hence the explicit isolation level.)

Reads take no lock: each statement sees committed writes only. A read of a ledger that does not exist yet (no
file, or a database without any table) reads an empty one (in memory), and nothing is created. A database that
is not this kind of ledger (it lacks ``required_table`` and holds other tables) is refused on read and on write,
so a mistyped ``--ledger`` never writes into someone else's database. Errors are one line: a constraint violation
is :class:`~dpsyn.errors.LedgerConflictError`, anything else :class:`~dpsyn.errors.InputError`; a URL is shown
with its password hidden, never in full.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpsyn.errors import ConfigError, InputError, LedgerConflictError
from dpsyn.home import sqlite_file

if TYPE_CHECKING:
    from sqlalchemy.engine import URL, Connection, Engine

__all__ = ["BUSY_TIMEOUT_S", "Db", "Row", "connect", "display", "hide_password", "ledger_location"]

#: how long a writer waits for another writer's lock before giving up (both dialects)
BUSY_TIMEOUT_S = 30.0
#: how long a PostgreSQL connection attempt may take (unless the URL sets connect_timeout)
CONNECT_TIMEOUT_S = 10

_SERVER_SCHEMES = {"postgresql", "postgres", "postgresql+psycopg"}


# -- where a ledger is ---------------------------------------------------------------------------------------
def ledger_location(url: str | Path | None, *, env: str, default_name: str, what: str) -> Path | URL:
    """The ledger at ``url``: a :class:`~pathlib.Path` for SQLite (``sqlite:///PATH``, a plain path, a Path), a
    SQLAlchemy URL with the psycopg driver for PostgreSQL. ``None`` means ``$<env>`` if set, else
    ``$DPSYN_HOME/<default_name>``; ``what`` names the ledger in errors."""
    if not isinstance(url, Path):
        raw = url or os.environ.get(env) or ""
        if "://" in raw and raw.split("://", 1)[0].lower() != "sqlite":
            return _server_url(raw, what)
    return sqlite_file(url, env=env, default_name=default_name, what=what)


def _server_url(raw: str, what: str) -> URL:
    scheme = raw.split("://", 1)[0]
    if scheme.lower() not in _SERVER_SCHEMES:
        raise ConfigError(f"{what} URL must be sqlite:///PATH, a file path or postgresql://USER@HOST/DB "
                          f"(got scheme '{scheme[:40]}')")
    from sqlalchemy.engine import make_url

    try:
        url = make_url(raw)
    except Exception:  # noqa: BLE001 - the parser's message may quote the password: say what, not the URL
        raise ConfigError(f"{what} URL cannot be parsed (scheme '{scheme}'; check its user, password, host, "
                          "port and database; the URL is not shown, it may hold a password)") from None
    url = url.set(drivername="postgresql+psycopg")
    if not url.database:
        raise ConfigError(f"{what} URL {display(url)} names no database (postgresql://USER@HOST/DB)")
    return url


def hide_password(url: str | None) -> str | None:
    """A ledger URL as it may be logged (MLflow params, reports): a server URL's password as ``***``; an
    unparseable server URL as its scheme only; a path or a SQLite URL unchanged."""
    if not url or "://" not in url or url.split("://", 1)[0].lower() == "sqlite":
        return url
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # noqa: BLE001 - the parser's message may quote the password
        return url.split("://", 1)[0] + "://(unparseable)"


def display(location: Path | URL) -> str:
    """The location as shown in messages and logs: a path, or the URL with its password hidden."""
    if isinstance(location, Path):
        return str(location)
    return location.render_as_string(hide_password=True)


# -- a connection ------------------------------------------------------------------------------------------
class Row:
    """A result row: ``row["column"]``, ``row[0]``, ``row.keys()``, ``tuple(row)`` (the values)."""

    __slots__ = ("_map", "_values")

    def __init__(self, row: Any):
        self._map = row._mapping
        self._values = tuple(row)

    def __getitem__(self, key: str | int) -> Any:
        return self._values[key] if isinstance(key, int | slice) else self._map[key]

    def keys(self) -> list[str]:
        return list(self._map.keys())

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self.keys(), self._values, strict=True))!r})"


class Cursor:
    """The outcome of one statement: its rows (read at once) and ``rowcount``."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, result: Any):
        self.rowcount = result.rowcount
        self._rows = [Row(r) for r in result] if result.returns_rows else []

    def fetchone(self) -> Row | None:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Row]:
        return list(self._rows)

    def __iter__(self) -> Iterator[Row]:
        return iter(self._rows)


class Db:
    """A ledger's connection: ``execute`` with ``?`` placeholders, in the dialect's own SQL otherwise."""

    def __init__(self, conn: Connection):
        self.conn = conn
        self.dialect: str = conn.dialect.name  # "sqlite" | "postgresql"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        return Cursor(self.conn.exec_driver_sql(_placeholders(sql, self.dialect), tuple(params)))

    def ddl(self, statement: str) -> None:
        """Run a statement of a ledger's schema, written in SQLite's types, in this dialect."""
        self.execute(_ddl(statement, self.dialect))

    def tables(self) -> set[str]:
        from sqlalchemy import inspect

        return set(inspect(self.conn).get_table_names())

    def has_table(self, name: str) -> bool:
        return name in self.tables()

    def columns(self, table: str) -> set[str]:
        from sqlalchemy import inspect

        return {c["name"] for c in inspect(self.conn).get_columns(table)}


@functools.lru_cache(maxsize=256)
def _placeholders(sql: str, dialect: str) -> str:
    """``?`` outside quoted literals → the driver's placeholder (psycopg: ``%s``, every literal ``%`` doubled: it
    parses every statement, with parameters or not)."""
    if dialect != "postgresql":
        return sql
    parts = re.split(r"('(?:[^']|'')*')", sql.replace("%", "%%"))
    return "".join(p if i % 2 else p.replace("?", "%s") for i, p in enumerate(parts))


def _ddl(statement: str, dialect: str) -> str:
    if dialect != "postgresql":
        return statement
    statement = statement.replace("INTEGER PRIMARY KEY AUTOINCREMENT",
                                  "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY")
    statement = re.sub(r"\bREAL\b", "DOUBLE PRECISION", statement)  # PostgreSQL's REAL is 4 bytes: ε would round
    return re.sub(r"\bINTEGER\b", "BIGINT", statement)


def _statements(schema: Sequence[str] | str) -> list[str]:
    return [x for x in schema.split(";") if x.strip()] if isinstance(schema, str) else list(schema)


def _schema_tables(statements: list[str]) -> set[str]:
    return {m.group(1) for s in statements
            if (m := re.match(r"\s*CREATE TABLE IF NOT EXISTS (\w+)", s, re.IGNORECASE))}


@functools.lru_cache(maxsize=32)
def _engine(url: URL) -> Engine:
    """One engine per database; no pool (a connection per call, as safe across fork as a fresh one), and
    SQLAlchemy in autocommit mode: :func:`_transaction` says where each transaction begins and ends."""
    from sqlalchemy import create_engine
    from sqlalchemy.pool import NullPool

    if url.get_backend_name() == "sqlite":
        args: dict[str, Any] = {"timeout": BUSY_TIMEOUT_S}
    else:
        args = {} if "connect_timeout" in url.query else {"connect_timeout": CONNECT_TIMEOUT_S}
    return create_engine(url, poolclass=NullPool, isolation_level="AUTOCOMMIT", connect_args=args)


def _sqlite_url(path: Path | None) -> URL:
    from sqlalchemy.engine import URL

    return URL.create("sqlite", database=None if path is None else str(path))


def _lock_key(what: str) -> int:
    """The advisory-lock key of a kind of ledger (within its database): 64 bits of a hash of its name."""
    return int.from_bytes(hashlib.sha256(f"dpsyn {what}".encode()).digest()[:8], "big", signed=True)


@contextlib.contextmanager
def _transaction(db: Db, what: str) -> Iterator[None]:
    if db.dialect == "sqlite":
        db.execute("BEGIN IMMEDIATE")
    else:
        db.execute("BEGIN ISOLATION LEVEL READ COMMITTED")
        db.execute(f"SET LOCAL lock_timeout = '{int(BUSY_TIMEOUT_S * 1000)}ms'")
        db.execute("SET LOCAL client_min_messages = warning")  # no NOTICE per CREATE TABLE IF NOT EXISTS
        db.execute("SELECT pg_advisory_xact_lock(?)", (_lock_key(what),))
    try:
        yield
    except BaseException:
        from sqlalchemy.exc import SQLAlchemyError

        with contextlib.suppress(SQLAlchemyError):
            db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _memory(statements: list[str]) -> Connection:
    """An empty ledger in memory: what a read of a ledger that does not exist yet reads."""
    conn = _engine(_sqlite_url(None)).connect()
    db = Db(conn)
    for stmt in statements:
        db.ddl(stmt)
    return conn


def _ours(db: Db, required_table: str, what: str, shown: str, server: bool) -> bool:
    """Whether the database holds this kind of ledger (False: it holds no table at all); refuses a foreign one."""
    tables = db.tables()
    if required_table in tables:
        return True
    if tables - {"sqlite_sequence"}:
        new = "of an empty database" if server else "of a new file"
        raise InputError(f"{shown} is not a dpsyn {what} (it holds other tables); give the "
                         f"{'URL' if server else 'path'} of a {what} or {new}")
    return False


def _why(e: BaseException, location: Path | URL) -> str:
    """Why a connection failed, in one line: the driver's first line for a server (where it says refused,
    unknown host or no such database), the exception's type for a file; never the password."""
    orig = getattr(e, "orig", None) or e
    name = type(orig).__name__
    if isinstance(location, Path):
        return name
    first = (str(orig).strip().splitlines() or [""])[0][:300]
    if location.password:
        first = first.replace(str(location.password), "***")
    return f"{name}: {first}" if first else name


@contextlib.contextmanager
def connect(location: Path | URL, *, write: bool, schema: Sequence[str] | str, required_table: str, what: str,
            version: tuple[str, str] | None = None, migrate_on_read: bool = False) -> Iterator[Db]:
    """A connection to the ledger at ``location`` (see the module docstring); ``version`` = (meta name, value) is
    stored on every write; ``migrate_on_read`` applies the (idempotent) schema, in a write transaction, before a
    read of an existing ledger that lacks one of its tables, for queries that join a table an older version
    lacks."""
    from sqlalchemy.exc import IntegrityError, SQLAlchemyError

    server = not isinstance(location, Path)
    shown = display(location)
    statements = _statements(schema)
    conn = None
    try:
        if server or write or location.exists():
            if write and not server:
                location.parent.mkdir(parents=True, exist_ok=True)
            conn = _engine(location if server else _sqlite_url(location)).connect()
        else:
            conn = _memory(statements)
    except (SQLAlchemyError, OSError, ImportError) as e:  # ImportError: no psycopg installed
        raise InputError(f"{what} {shown} cannot be opened ({_why(e, location)})") from None
    try:
        db = Db(conn)
        if db.dialect == "sqlite":
            db.execute("PRAGMA foreign_keys = ON")
        if write:
            with _transaction(db, what):
                _ours(db, required_table, what, shown, server)
                for stmt in statements:
                    db.ddl(stmt)
                if version is not None:
                    db.execute("INSERT INTO meta(name, value) VALUES (?, ?) "
                               "ON CONFLICT(name) DO UPDATE SET value = excluded.value", version)
                yield db
        else:
            if not _ours(db, required_table, what, shown, server):  # no ledger here yet: read an empty one
                conn.close()
                conn = _memory(statements)
                db = Db(conn)
            elif migrate_on_read and _schema_tables(statements) - db.tables():
                with _transaction(db, what):
                    for stmt in statements:
                        db.ddl(stmt)
            yield db
    except IntegrityError:
        raise LedgerConflictError(f"{what} {shown}: the change contradicts a stored record") from None
    except SQLAlchemyError as e:
        raise InputError(f"{what} {shown} cannot be used ({type(getattr(e, 'orig', None) or e).__name__})") from None
    finally:
        conn.close()
