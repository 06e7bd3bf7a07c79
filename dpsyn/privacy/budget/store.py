"""The budget ledger's storage: its schema (SQLite's types, run on PostgreSQL too: dpsyn.sqlite), the migration of
older ledgers, checks and sums.

The ledger itself (:class:`dpsyn.privacy.budget.ledger.BudgetLedger`) is the protocol; this is what it stands on.
"""

from __future__ import annotations

import math
import os
import socket
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dpsyn.errors import InputError
from dpsyn.privacy.budget.models import ROW_UNIT, Reservation, unit_relation
from dpsyn.sqlite import Db, Row, ledger_location

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

BUDGET_ENV = "DPSYN_BUDGET_URL"
BUDGET_VERSION = 1
_REL_TOL = 1e-9


_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS meta (
        name  TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS populations (
        population  TEXT PRIMARY KEY,
        cap_epsilon REAL CHECK (cap_epsilon IS NULL OR cap_epsilon >= 0),
        cap_delta   REAL CHECK (cap_delta IS NULL OR (cap_delta >= 0 AND cap_delta <= 1)),
        created_at  TEXT NOT NULL,
        cap_set_at  TEXT,
        unit        TEXT
    )""",
    """CREATE TABLE IF NOT EXISTS reservations (
        run_id           TEXT PRIMARY KEY,
        population       TEXT NOT NULL REFERENCES populations(population),
        purpose          TEXT NOT NULL,
        state            TEXT NOT NULL CHECK (state IN ('reserved', 'committed', 'released')),
        reserved_epsilon REAL NOT NULL CHECK (reserved_epsilon >= 0),
        reserved_delta   REAL NOT NULL CHECK (reserved_delta >= 0 AND reserved_delta <= 1),
        spent_epsilon    REAL CHECK (spent_epsilon IS NULL OR spent_epsilon >= 0),
        spent_delta      REAL CHECK (spent_delta IS NULL OR (spent_delta >= 0 AND spent_delta <= 1)),
        read_at          TEXT,
        note             TEXT NOT NULL DEFAULT '',
        created_at       TEXT NOT NULL,
        updated_at       TEXT NOT NULL,
        owner_pid        INTEGER,
        owner_host       TEXT,
        heartbeat_at     TEXT,
        closed_by        TEXT,
        unit             TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS reservations_by_population ON reservations(population, state)",
    """CREATE TABLE IF NOT EXISTS accesses (
        access_id   INTEGER PRIMARY KEY AUTOINCREMENT,
        population  TEXT NOT NULL REFERENCES populations(population),
        tool        TEXT NOT NULL,
        note        TEXT NOT NULL DEFAULT '',
        created_at  TEXT NOT NULL
    )""",
]

#: columns added after version 1, per table (an older ledger gains them on its next write; NULL in its old rows)
_ADDED_COLUMNS = {
    "reservations": {"owner_pid": "INTEGER", "owner_host": "TEXT", "heartbeat_at": "TEXT", "closed_by": "TEXT",
                     "unit": "TEXT"},
    "populations": {"unit": "TEXT"},
}


def _migrate(db: Db) -> None:
    for table, added in _ADDED_COLUMNS.items():
        have = db.columns(table)
        for column, kind in added.items():
            if column not in have:
                db.ddl(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def _unit_conflict(population: str, recorded: str, asked: str, run_id: str) -> str:
    """Why a run under privacy unit ``asked`` cannot be charged to a population accounted under ``recorded``."""
    head = (f"run {run_id} cannot be charged to population '{population}': the population is accounted "
            f"{unit_relation(recorded)} and the run {unit_relation(asked)}. ")
    if recorded == ROW_UNIT:
        return head + ("Its earlier runs' ε bounds what one row changes, not one person with several rows, so no "
                       "per-person total can include them. Record person-level runs under a population name of "
                       "their own (budget.population / --population).")
    if asked == ROW_UNIT:
        return head + (f"A row-level ε does not bound what one person with several rows changes (k rows: up to k·ε). "
                       f"Declare privacy_unit (column {recorded}, max_rows_per_person: a public bound) in the "
                       f"schema so the run is person-level, or use another population name if these are other "
                       f"people.")
    return head + "One population has one person key: use the same one, or another population name."


def _owner() -> tuple[int, str]:
    return os.getpid(), socket.gethostname()


def budget_path(url: str | Path | None = None) -> Path | URL:
    """Where a budget ledger URL points: a SQLite file (``sqlite:///path``, ``sqlite:////abs/path`` or a plain path)
    as a Path, or a PostgreSQL database (``postgresql://USER@HOST/DB``) as a SQLAlchemy URL (``str()`` of it
    hides the password).

    ``None`` means ``$DPSYN_BUDGET_URL`` if set, else ``$DPSYN_HOME/budget.db``.
    """
    return ledger_location(url, env=BUDGET_ENV, default_name="budget.db", what="budget ledger")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _exceeds(value: float, limit: float) -> bool:
    """``value > limit``, allowing a relative floating-point slack."""
    return value > limit + max(abs(limit) * _REL_TOL, 1e-15)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15)


def _check_epsilon(value: float | None, what: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InputError(f"{what} must be a finite number ≥ 0 (got {value!r})")


def _check_delta(value: float | None, what: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0 <= value <= 1:
        raise InputError(f"{what} must be a number in [0, 1] (got {value!r})")


def _check_name(value: str, what: str) -> None:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} must be a non-empty string")


def _reservation(row: Row) -> Reservation:
    return Reservation(**dict(zip(row.keys(), tuple(row), strict=True)))


def _totals(db: Db, population: str) -> tuple[float, float, float, float]:
    """(spent ε, reserved ε, spent δ, reserved δ) of a population, summed exactly."""
    rows = db.execute("SELECT state, reserved_epsilon, reserved_delta, spent_epsilon, spent_delta "
                      "FROM reservations WHERE population = ? AND state != 'released'", (population,)).fetchall()
    committed = [r for r in rows if r["state"] == "committed"]  # they count what they spent
    return (math.fsum(r["spent_epsilon"] or 0.0 for r in committed),
            math.fsum(r["reserved_epsilon"] for r in rows if r["state"] == "reserved"),  # open: in full
            math.fsum(r["spent_delta"] or 0.0 for r in committed),
            math.fsum(r["reserved_delta"] for r in rows if r["state"] == "reserved"))


def _over_cap(population: str, symbol: str, asked: float, cap: float, spent: float, reserved: float,
              run_id: str) -> str:
    remaining = cap - spent - reserved
    return (f"privacy budget of population '{population}' exceeded: run {run_id} asks for {symbol}={asked:g}, "
            f"but the lifetime cap is {symbol}={cap:g}, with {spent:g} spent and {reserved:g} reserved by open runs, "
            f"so {max(remaining, 0.0):g} remains. Raise the cap (dpsyn budget set-cap --population {population} "
            f"...) if the data owner allows it, wait for open runs to commit or release (a run whose process is "
            f"gone never will: dpsyn budget show marks it dead, dpsyn budget close RUN settles it), or use a "
            f"smaller {symbol}")
