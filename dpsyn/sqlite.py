"""The SQLite plumbing both ledgers share (budget, lineage): one transaction per write, one error per failure.

:func:`connect` yields a connection with rows as :class:`sqlite3.Row` and foreign keys on. A write runs inside
``BEGIN IMMEDIATE`` … ``COMMIT`` (rolled back on any exception; two processes never interleave their writes) with
the ledger's schema applied first (idempotent, so an older ledger gains the tables a newer version added). A read
of a ledger that does not exist yet reads an empty one (in memory), and nothing is created. A file that is a SQLite
database but not this kind of ledger (it lacks ``required_table`` and holds other tables) is refused on read and on
write, so a mistyped ``--ledger`` never writes into someone else's database. Errors are one line: a constraint
violation is :class:`~dpsyn.errors.LedgerConflictError`, anything else :class:`~dpsyn.errors.InputError`.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from dpsyn.errors import InputError, LedgerConflictError

__all__ = ["BUSY_TIMEOUT_S", "connect"]

BUSY_TIMEOUT_S = 30.0


def _apply(conn: sqlite3.Connection, schema: Sequence[str] | str) -> None:
    """Run the schema's statements one by one (``executescript`` would COMMIT the open transaction)."""
    statements = [x for x in schema.split(";") if x.strip()] if isinstance(schema, str) else schema
    for stmt in statements:
        conn.execute(stmt)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


@contextlib.contextmanager
def connect(path: Path, *, write: bool, schema: Sequence[str] | str, required_table: str, what: str,
            version: tuple[str, str] | None = None, migrate_on_read: bool = False) -> Iterator[sqlite3.Connection]:
    """A connection to the ledger at ``path`` (see the module docstring); ``version`` = (meta name, value) is
    stored on every write; ``migrate_on_read`` applies the (idempotent) schema before a read of an existing
    ledger too, for queries that join a table an older version lacks."""
    conn = None
    try:
        if write or path.exists():
            if write:
                path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            conn.row_factory = sqlite3.Row
            tables = _tables(conn)
            if required_table not in tables:
                if tables - {"sqlite_sequence"}:
                    raise InputError(f"{path} is not a dpsyn {what} (it holds other tables); give the path of a "
                                     f"{what} or of a new file")
                if not write:
                    conn.close()
                    conn = None
        if conn is None:
            conn = sqlite3.connect(":memory:", isolation_level=None)
            conn.row_factory = sqlite3.Row
            _apply(conn, schema)
    except (sqlite3.DatabaseError, OSError) as e:
        if conn is not None:
            conn.close()
        raise InputError(f"{what} {path} cannot be opened ({type(e).__name__})") from None
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        if write:
            conn.execute("BEGIN IMMEDIATE")
            try:
                _apply(conn, schema)
                if version is not None:
                    conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES (?, ?)", version)
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        else:
            if migrate_on_read and path.exists():
                _apply(conn, schema)
            yield conn
    except sqlite3.IntegrityError:
        raise LedgerConflictError(f"{what} {path}: the change contradicts a stored record") from None
    except sqlite3.DatabaseError as e:
        raise InputError(f"{what} {path} cannot be used ({type(e).__name__})") from None
    finally:
        conn.close()
