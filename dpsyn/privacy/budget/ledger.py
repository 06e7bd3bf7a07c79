"""The privacy-budget ledger: a small database, the SQLite file ``$DPSYN_HOME/budget.db`` by default, or a
PostgreSQL database shared by several hosts (``DPSYN_BUDGET_URL=postgresql://USER@HOST/DB``).

It keeps each population (a sensitive dataset) within the lifetime privacy
budget its owner allowed, across every run that ever reads it.

Tables::

    populations   population → cap ε, cap δ (NULL: no cap), when the cap was set, unit (what its ε counts)
    reservations  run_id → population, purpose, state, reserved ε/δ, spent ε/δ, read_at, note, timestamps, unit
    accesses      reads of a population by owner-side tools that are *not* DP (the fairness audit, attack
                  tools): what read it and when. They spend no ε, but their outputs are not protected, so
                  they must stay with the data owner (``dpsyn budget show`` lists them)

Composition is *basic* (sequential) composition: a population's total is the
sum of its runs' ε and the sum of their δ. That bound holds for any mix of
(ε, δ)-DP mechanisms run on the same data, adaptively chosen or not, so the
ledger is sound whatever accountant each run used internally (it may be loose:
advanced or RDP composition across runs would give a smaller total).

A run's life (every step is one transaction, durable when the call returns, and writers never interleave:
``BEGIN IMMEDIATE`` on SQLite, a transaction-level advisory lock on PostgreSQL; dpsyn/sqlite.py)::

    reserve(run, ε, δ)   write-ahead, before any data is read: check the cap and
                         insert the reservation, atomically (two processes can
                         never both take the last of the budget)
    mark_read(run)       just before the run first reads private data
    commit(run, ε', δ')  the actual spend, ε' ≤ ε and δ' ≤ δ; the rest is freed
    release(run)         drop the reservation; only if mark_read was never called
    close(run, by=…)     a run whose process is gone (SIGKILL): committed at its full reservation, recorded
                         with who closed it; refused while the owner pid is alive on this host

Each reservation records its owner (pid, host) and a heartbeat (reserve, mark_read, ``heartbeat``), so
``dpsyn budget show`` tells a dead run (same host, pid gone) from a running one.

What counts against the cap::

    remaining = cap − Σ spent (committed runs) − Σ reserved (open reservations)

An open reservation counts in full: a run that dies (SIGKILL, power loss)
after reserving leaves its whole ε charged until someone commits or releases
it, and after ``mark_read`` it can only be committed. Nothing is ever charged
for a released reservation.

Every call is idempotent by run id: reserving a run again with the same ε and
δ returns the stored reservation without charging twice (a different ε or δ
raises :class:`~dpsyn.errors.LedgerConflictError`; a released reservation is
re-opened, after a fresh cap check); committing again with the same spend, or
releasing again, is a no-op; ``mark_read`` again is a no-op.

The cap: :meth:`BudgetLedger.set_cap` stores it (and is the only way to raise
or remove it). ``reserve(..., cap=…)`` passes the cap of the run's config: it
is stored when the population has none, tightens a stored cap when lower, and
raises :class:`~dpsyn.errors.ConfigError` when higher (raise it with
``set_cap`` / ``dpsyn budget set-cap`` first). A population without a cap is
unlimited, but every run is still recorded. Comparisons allow a relative
slack of 1e-9 for floating-point sums (e.g. 0.1 + 0.2 against a cap of 0.3).

Per person or per row: a run's ε is a bound under its neighbouring relation, and sums are only meaningful under
one relation. Each reservation records the run's privacy unit (``unit``: the person column of a person-level run,
add/remove one person with all their rows; ``""`` for a row-level run, add/remove one row), and the population's
first run fixes what the population counts. A run under another unit is refused before anything is charged
(:class:`~dpsyn.errors.ConfigError` saying what to do): a row-level ε does not bound what a person with k rows
changes (up to k·ε), and row-level charges cannot enter a per-person total. Runs recorded by a ledger older than
units (``unit`` NULL) are counted as they are: the ledger cannot tell which relation they were under.

The ledger holds population names, run ids, purposes, notes, unit column names, ε and δ: no data
value.
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from dpsyn.errors import ConfigError, InputError, LedgerConflictError, PrivacyBudgetExceededError
from dpsyn.privacy.budget.models import ROW_UNIT, Access, PopulationBudget, Reservation, unit_relation
from dpsyn.privacy.budget.store import (
    _SCHEMA,
    BUDGET_ENV,
    BUDGET_VERSION,
    _check_delta,
    _check_epsilon,
    _check_name,
    _exceeds,
    _migrate,
    _now,
    _over_cap,
    _owner,
    _reservation,
    _same,
    _totals,
    _unit_conflict,
    budget_path,
)
from dpsyn.sqlite import Db, Row, connect, display

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

__all__ = [
    "BUDGET_ENV",
    "Access",
    "BudgetLedger",
    "PopulationBudget",
    "PrivacyBudgetExceededError",
    "Reservation",
    "budget_path",
]

logger = logging.getLogger(__name__)

#: runs in the order they were reserved: SQLite's rowid breaks ties within a second; PostgreSQL has no rowid
_ORDER = {"sqlite": "created_at, rowid", "postgresql": "created_at, run_id"}


def _fix_unit(db: Db, population: str, recorded: str | None, unit: str) -> bool:
    """Record ``unit`` as what ``population``'s ε counts if none is recorded yet (the first run or cap that names
    one fixes it); False when another unit is recorded (the caller raises, inside its transaction)."""
    if recorded is None:
        db.execute("UPDATE populations SET unit = ? WHERE population = ?", (unit, population))
        return True
    return recorded == unit


class BudgetLedger:
    """The privacy-budget ledger at ``url`` (see :func:`budget_path`); created on first write."""

    def __init__(self, url: str | Path | None = None):
        #: a SQLite file (Path) or a PostgreSQL URL (``str()`` hides its password)
        self.path: Path | URL = budget_path(url)

    def __repr__(self) -> str:
        return f"BudgetLedger({display(self.path)!r})"

    @contextlib.contextmanager
    def _connect(self, *, write: bool):
        """A connection; for writes, inside one transaction that excludes other writers (dpsyn.sqlite), an older
        ledger migrated first."""
        with connect(self.path, write=write, schema=_SCHEMA, required_table="reservations", what="budget ledger",
                     version=("budget_version", str(BUDGET_VERSION))) as db:
            if write:
                _migrate(db)
            yield db

    # -- writes -----------------------------------------------------------------------------
    def set_cap(self, population: str, *, epsilon: float | None, delta: float | None = None,
                unit: str | None = None) -> None:
        """Set the lifetime cap of ``population`` (``None``: no cap). The only way to raise or remove a cap.

        Both caps are set as given: ``delta=None`` means no δ cap. A cap below
        what is already spent is stored as asked; the population then has no
        budget left (``remaining`` is negative) and every reservation fails.

        ``unit`` declares what the population's ε counts before any run fixes it: a person column (per person)
        or ``ROW_UNIT`` ("": per row); ``None`` leaves it as recorded. A unit once recorded is not changed (the
        runs already charged were accounted under it): asking for another raises :class:`ConfigError`, in the
        same transaction as the cap, so nothing is changed.
        """
        _check_name(population, "population")
        _check_epsilon(epsilon, "cap ε", optional=True)
        _check_delta(delta, "cap δ", optional=True)
        if unit:
            _check_name(unit, "privacy unit")
        now = _now()
        with self._connect(write=True) as db:
            db.execute("INSERT INTO populations(population, cap_epsilon, cap_delta, created_at, cap_set_at) "
                       "VALUES (?, ?, ?, ?, ?) ON CONFLICT(population) DO UPDATE SET "
                       "cap_epsilon = excluded.cap_epsilon, cap_delta = excluded.cap_delta, "
                       "cap_set_at = excluded.cap_set_at",
                       (population, epsilon, delta, now, now))
            if unit is not None:
                recorded = db.execute("SELECT unit FROM populations WHERE population = ?",
                                      (population,)).fetchone()["unit"]
                if not _fix_unit(db, population, recorded, unit):  # raised inside the transaction: no cap kept
                    raise ConfigError(
                        f"population '{population}' is accounted {unit_relation(recorded)}, not "
                        f"{unit_relation(unit)}: its runs were charged under that unit, so it cannot change; "
                        "use another population name for the other unit")
        logger.info("budget: population %s cap set to ε=%s δ=%s", population, epsilon, delta)

    def reserve(
        self,
        population: str,
        run_id: str,
        *,
        epsilon: float,
        delta: float = 0.0,
        cap: float | None = None,
        cap_delta: float | None = None,
        purpose: str = "synthesize",
        note: str = "",
        unit: str | None = None,
    ) -> Reservation:
        """Reserve ``epsilon`` (and ``delta``) of ``population``'s budget for ``run_id``, before reading any data.

        Checks the cap and inserts the reservation in one transaction. ``cap``
        / ``cap_delta`` are the caps of the run's config (see the module
        docstring). ``unit``: the run's privacy unit, the person column of a person-level run (None: row-level);
        a population accounted under another unit refuses the run (:class:`ConfigError`). Raises
        :class:`PrivacyBudgetExceededError` if the reservation does not fit. Idempotent by ``run_id``.
        """
        _check_name(population, "population")
        _check_name(run_id, "run id")
        _check_epsilon(epsilon, "ε")
        _check_delta(delta, "δ")
        _check_epsilon(cap, "cap ε", optional=True)
        _check_delta(cap_delta, "cap δ", optional=True)
        if unit is not None:
            _check_name(unit, "privacy unit")
        unit = unit or ROW_UNIT
        now = _now()
        with self._connect(write=True) as db:
            old = db.execute("SELECT * FROM reservations WHERE run_id = ?", (run_id,)).fetchone()
            if old is not None:
                if old["population"] != population or not _same(old["reserved_epsilon"], epsilon) \
                        or not _same(old["reserved_delta"], delta) or old["unit"] not in (None, unit):
                    raise LedgerConflictError(
                        f"run {run_id} already holds a reservation of ε={old['reserved_epsilon']:g}, "
                        f"δ={old['reserved_delta']:g} on population '{old['population']}'; a run id reserves once "
                        f"(use a new run id for ε={epsilon:g}, δ={delta:g} on '{population}')")
                if old["state"] != "released":
                    return _reservation(old)  # a retry: already charged
            pop = self._population(db, population, cap, cap_delta, now)
            if not _fix_unit(db, population, pop["unit"], unit):  # raised inside the transaction: nothing kept
                raise ConfigError(_unit_conflict(population, pop["unit"], unit, run_id))
            spent_e, reserved_e, spent_d, reserved_d = _totals(db, population)
            cap_e, cap_d = pop["cap_epsilon"], pop["cap_delta"]
            if cap_e is not None and _exceeds(spent_e + reserved_e + epsilon, cap_e):
                raise PrivacyBudgetExceededError(_over_cap(
                    population, "ε", epsilon, cap_e, spent_e, reserved_e, run_id))
            if cap_d is not None and _exceeds(spent_d + reserved_d + delta, cap_d):
                raise PrivacyBudgetExceededError(_over_cap(
                    population, "δ", delta, cap_d, spent_d, reserved_d, run_id))
            pid, host = _owner()
            if old is not None:  # a released reservation, opened again
                db.execute("UPDATE reservations SET state = 'reserved', read_at = NULL, spent_epsilon = NULL, "
                           "spent_delta = NULL, purpose = ?, note = ?, updated_at = ?, owner_pid = ?, owner_host = ?, "
                           "heartbeat_at = ?, unit = ? WHERE run_id = ?", (purpose, note, now, pid, host, now, unit,
                                                                          run_id))
            else:
                db.execute("INSERT INTO reservations(run_id, population, purpose, state, reserved_epsilon, "
                           "reserved_delta, note, created_at, updated_at, owner_pid, owner_host, heartbeat_at, unit) "
                           "VALUES (?, ?, ?, 'reserved', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                           (run_id, population, purpose, float(epsilon), float(delta), note, now, now, pid, host, now,
                            unit))
            row = db.execute("SELECT * FROM reservations WHERE run_id = ?", (run_id,)).fetchone()
        logger.info("budget: run %s reserved ε=%g δ=%g of population %s", run_id, epsilon, delta, population)
        return _reservation(row)

    @staticmethod
    def _population(db: Db, population: str, cap: float | None, cap_delta: float | None, now: str) -> Row:
        """The population's row, created if new; a config cap sets a missing cap or tightens a stored one."""
        row = db.execute("SELECT * FROM populations WHERE population = ?", (population,)).fetchone()
        if row is None:
            db.execute("INSERT INTO populations(population, cap_epsilon, cap_delta, created_at, cap_set_at) "
                       "VALUES (?, ?, ?, ?, ?)", (population, cap, cap_delta, now,
                                                  now if cap is not None or cap_delta is not None else None))
        else:
            for column, asked, symbol in (("cap_epsilon", cap, "ε"), ("cap_delta", cap_delta, "δ")):
                stored = row[column]
                if asked is None or (stored is not None and _same(asked, stored)):
                    continue
                if stored is not None and asked > stored:
                    raise ConfigError(
                        f"the run's config caps population '{population}' at {symbol}={asked:g}, above the recorded "
                        f"lifetime cap {symbol}={stored:g}; a cap is raised only on purpose: "
                        f"dpsyn budget set-cap --population {population} ... (or lower the config's cap)")
                db.execute(f"UPDATE populations SET {column} = ?, cap_set_at = ? WHERE population = ?",
                           (asked, now, population))
                logger.info("budget: population %s cap %s set to %g by a run's config", population, symbol, asked)
        return db.execute("SELECT * FROM populations WHERE population = ?", (population,)).fetchone()

    def mark_read(self, run_id: str) -> None:
        """Record that ``run_id`` is about to read private data: from now on it can only be committed."""
        now = _now()
        with self._connect(write=True) as db:
            row = self._row(db, run_id)
            if row["state"] == "released":
                raise LedgerConflictError(
                    f"run {run_id}'s budget reservation was released; reserve again before reading data")
            if row["read_at"] is None:
                db.execute("UPDATE reservations SET read_at = ?, updated_at = ?, heartbeat_at = ? WHERE run_id = ?",
                           (now, now, now, run_id))

    def heartbeat(self, run_id: str) -> None:
        """Record that ``run_id``'s process is alive (shown by ``dpsyn budget show`` for runs on other hosts)."""
        now = _now()
        with self._connect(write=True) as db:
            self._row(db, run_id)
            db.execute("UPDATE reservations SET heartbeat_at = ? WHERE run_id = ? AND state = 'reserved'",
                       (now, run_id))

    def close(self, run_id: str, *, by: str, force: bool = False) -> Reservation:
        """Settle an open reservation whose run will never finish (its process was killed): committed at its full
        reserved ε and δ (what it may have spent; a crash never under-counts), recorded with ``by``.

        Refused while the owner process is alive on this host (``force`` overrides: for a run known to be gone
        whose pid was reused, or one on another host). Closing a closed (committed) run again is a no-op."""
        _check_name(by, "closed by")
        now = _now()
        with self._connect(write=True) as db:
            row = self._row(db, run_id)
            r = _reservation(row)
            if row["state"] == "committed":
                return r
            if row["state"] == "released":
                raise LedgerConflictError(f"run {run_id}'s reservation was released: nothing is charged, nothing to "
                                          "close")
            if r.owner_state == "running" and not force:
                raise LedgerConflictError(
                    f"run {run_id} is still running (pid {r.owner_pid} on this host); let it finish, or stop it first "
                    "(dpsyn budget close --force settles it anyway)")
            db.execute("UPDATE reservations SET state = 'committed', spent_epsilon = reserved_epsilon, "
                       "spent_delta = reserved_delta, closed_by = ?, note = ?, updated_at = ? WHERE run_id = ?",
                       (by, (row["note"] + "; " if row["note"] else "") + f"closed by {by} at its full reservation",
                        now, run_id))
            row = self._row(db, run_id)
        logger.info("budget: run %s closed by %s at its full reservation", run_id, by)
        return _reservation(row)

    def commit(self, run_id: str, *, epsilon: float, delta: float = 0.0, note: str | None = None) -> Reservation:
        """Record what ``run_id`` actually spent (at most what it reserved); the rest of its reservation is freed.

        Committing again with the same spend is a no-op; with another spend it
        raises :class:`LedgerConflictError`. A spend above the reservation
        raises :class:`PrivacyBudgetExceededError` and leaves the reservation
        (charged in full) in place. ``note`` replaces the stored note if given.
        """
        _check_epsilon(epsilon, "spent ε")
        _check_delta(delta, "spent δ")
        now = _now()
        with self._connect(write=True) as db:
            row = self._row(db, run_id)
            if row["state"] == "committed":
                if _same(row["spent_epsilon"], epsilon) and _same(row["spent_delta"], delta):
                    return _reservation(row)
                raise LedgerConflictError(
                    f"run {run_id} already committed ε={row['spent_epsilon']:g}, δ={row['spent_delta']:g} "
                    f"(asked to commit ε={epsilon:g}, δ={delta:g}); a commit is final")
            if row["state"] == "released":
                raise LedgerConflictError(
                    f"run {run_id}'s budget reservation was released; it cannot be committed (reserve again first)")
            for symbol, spent, reserved in (("ε", epsilon, row["reserved_epsilon"]),
                                            ("δ", delta, row["reserved_delta"])):
                if _exceeds(spent, reserved):
                    raise PrivacyBudgetExceededError(
                        f"run {run_id} spent {symbol}={spent:g} but reserved only {symbol}={reserved:g} of population "
                        f"'{row['population']}'; the reservation stays charged in full. This is a bug in the "
                        f"run's accounting: report it")
            db.execute("UPDATE reservations SET state = 'committed', spent_epsilon = ?, spent_delta = ?, "
                       "note = COALESCE(?, note), updated_at = ? WHERE run_id = ?",
                       (float(epsilon), float(delta), note, now, run_id))
            row = self._row(db, run_id)
        logger.info("budget: run %s committed ε=%g δ=%g", run_id, epsilon, delta)
        return _reservation(row)

    def release(self, run_id: str) -> Reservation:
        """Drop ``run_id``'s reservation (nothing charged); only if it never read data. Releasing twice is a no-op."""
        now = _now()
        with self._connect(write=True) as db:
            row = self._row(db, run_id)
            if row["state"] == "released":
                return _reservation(row)
            if row["state"] == "committed":
                raise LedgerConflictError(f"run {run_id} already committed its spend; a commit cannot be released")
            if row["read_at"] is not None:
                raise LedgerConflictError(
                    f"run {run_id} read private data at {row['read_at']}: its reservation cannot be released, "
                    f"commit the ε it spent (ledger.commit); until then the full reservation stays charged")
            db.execute("UPDATE reservations SET state = 'released', updated_at = ? WHERE run_id = ?", (now, run_id))
            row = self._row(db, run_id)
        logger.info("budget: run %s released its reservation", run_id)
        return _reservation(row)

    def record_access(self, population: str, tool: str, note: str = "") -> Access:
        """Record that ``tool`` read ``population`` without a DP guarantee (owner-side review, not a release)."""
        _check_name(population, "population")
        _check_name(tool, "tool")
        now = _now()
        with self._connect(write=True) as db:
            self._population(db, population, None, None, now)
            row = db.execute("INSERT INTO accesses(population, tool, note, created_at) VALUES (?, ?, ?, ?) "
                             "RETURNING *", (population, tool, note, now)).fetchone()
        logger.info("budget: %s read population %s (not DP; recorded)", tool, population)
        return Access(**dict(zip(row.keys(), tuple(row), strict=True)))

    @staticmethod
    def _row(db: Db, run_id: str) -> Row:
        row = db.execute("SELECT * FROM reservations WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise InputError(f"run {run_id} has no privacy-budget reservation (reserve before reading data)")
        return row

    # -- reads ------------------------------------------------------------------------------
    def get(self, run_id: str) -> Reservation | None:
        with self._connect(write=False) as db:
            row = db.execute("SELECT * FROM reservations WHERE run_id = ?", (run_id,)).fetchone()
        return _reservation(row) if row is not None else None

    def status(self, population: str | None = None) -> list[PopulationBudget]:
        """Cap, totals and runs of every population (or of one; ``[]`` if it is not recorded), by name."""
        with self._connect(write=False) as db:
            if population is None:
                pops = db.execute("SELECT * FROM populations ORDER BY population").fetchall()
            else:
                pops = db.execute("SELECT * FROM populations WHERE population = ?", (population,)).fetchall()
            has_accesses = db.has_table("accesses")  # a version-1 ledger, read as is, has none
            out = []
            for p in pops:
                name = p["population"]
                runs = db.execute(f"SELECT * FROM reservations WHERE population = ? ORDER BY {_ORDER[db.dialect]}",
                                  (name,)).fetchall()
                spent_e, reserved_e, spent_d, reserved_d = _totals(db, name)
                cap_e, cap_d = p["cap_epsilon"], p["cap_delta"]
                accesses = db.execute("SELECT * FROM accesses WHERE population = ? ORDER BY access_id",
                                      (name,)).fetchall() if has_accesses else []
                out.append(PopulationBudget(
                    population=name, cap_epsilon=cap_e, cap_delta=cap_d,
                    spent_epsilon=spent_e, reserved_epsilon=reserved_e,
                    remaining_epsilon=None if cap_e is None else cap_e - spent_e - reserved_e,
                    spent_delta=spent_d, reserved_delta=reserved_d,
                    remaining_delta=None if cap_d is None else cap_d - spent_d - reserved_d,
                    cap_set_at=p["cap_set_at"], unit=p["unit"] if "unit" in p.keys() else None,  # older: none
                    runs=[_reservation(r) for r in runs],
                    accesses=[Access(**dict(zip(a.keys(), tuple(a), strict=True))) for a in accesses],
                ))
        return out
