"""The lineage ledger: a small database, the SQLite file ``$DPSYN_HOME/lineage.db`` by default, or a PostgreSQL
database (``DPSYN_LINEAGE_URL=postgresql://USER@HOST/DB``).

Tables (one row per thing, linked by foreign keys)::

    training_batches  batch_id (random) → source, rows (the run's noisy count), time window
    batch_digests     batch_id → keyed digests (HMAC under the pipeline's key) of the input file and masked rows
    training_runs     run_id (MLflow) → batch, synthesizer, schema, model name/version, ε, δ, accountant
    run_orchestration run_id (MLflow) → the dpsyn run's id (the Prefect flow run's under Prefect)
    datasets          dataset_id → run, sha256, path, rows, validation verdict, watermark settings
    codes             code → dataset, key id, timestamp (the HMAC's inputs are the run's batch and run id)

A release is written in one transaction (``BEGIN IMMEDIATE`` … ``COMMIT`` on SQLite, under an advisory lock on
PostgreSQL: dpsyn/sqlite.py): either all of its rows are stored or none. The ledger holds identifiers,
hashes, counts, settings and ε: no data value and no key (key ids only).
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dpsyn.errors import AuditFailedError, InputError, LedgerConflictError
from dpsyn.lineage.models import (
    DatasetRef,
    Lineage,
    ModelRef,
    PrivacyRef,
    Release,
    TrainingBatch,
    ValidationRef,
    WatermarkSettings,
)
from dpsyn.sqlite import Db, Row, connect, display, ledger_location

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

__all__ = ["LEDGER_ENV", "AuditFailedError", "Ledger", "LedgerConflictError", "ledger_path"]

logger = logging.getLogger(__name__)

LEDGER_ENV = "DPSYN_LINEAGE_URL"
LEDGER_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS training_batches (
    batch_id     TEXT PRIMARY KEY,
    source       TEXT NOT NULL,
    rows         INTEGER NOT NULL CHECK (rows >= 0),
    window_start TEXT,
    window_end   TEXT,
    recorded_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS training_runs (
    run_id             TEXT PRIMARY KEY,
    batch_id           TEXT NOT NULL REFERENCES training_batches(batch_id),
    synthesizer        TEXT,
    table_schema       TEXT,
    schema_fingerprint TEXT,
    model_name         TEXT,
    model_version      TEXT,
    epsilon            REAL NOT NULL CHECK (epsilon >= 0),
    delta              REAL NOT NULL CHECK (delta >= 0 AND delta <= 1),
    accountant         TEXT NOT NULL,
    recorded_at        TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS run_orchestration (
    run_id      TEXT PRIMARY KEY REFERENCES training_runs(run_id),
    flow_run_id TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS datasets (
    dataset_id      TEXT PRIMARY KEY,
    run_id          TEXT NOT NULL REFERENCES training_runs(run_id),
    sha256          TEXT NOT NULL,
    path            TEXT,
    rows            INTEGER,
    gate_passed     INTEGER,
    validation_json TEXT NOT NULL,
    validation_path TEXT,
    wm_strength     REAL,
    wm_grid         INTEGER,
    wm_categorical  INTEGER,
    recorded_at     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS datasets_by_sha256 ON datasets(sha256);
CREATE TABLE IF NOT EXISTS codes (
    code        TEXT PRIMARY KEY,
    dataset_id  TEXT NOT NULL REFERENCES datasets(dataset_id),
    key_id      TEXT NOT NULL,
    timestamp   TEXT NOT NULL,
    recorded_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS codes_by_key ON codes(key_id);
CREATE TABLE IF NOT EXISTS batch_digests (
    batch_id       TEXT PRIMARY KEY REFERENCES training_batches(batch_id),
    input_digest   TEXT,
    content_digest TEXT,
    key_id         TEXT NOT NULL,
    recorded_at    TEXT NOT NULL
);
"""

_SELECT = """
SELECT c.code, c.key_id, c.timestamp, c.recorded_at,
       d.dataset_id, d.sha256, d.path, d.rows, d.gate_passed, d.validation_json, d.validation_path,
       d.wm_strength, d.wm_grid, d.wm_categorical,
       r.run_id, r.synthesizer, r.table_schema, r.schema_fingerprint, r.model_name, r.model_version,
       r.epsilon, r.delta, r.accountant, o.flow_run_id,
       b.batch_id, b.source, b.rows AS batch_rows, b.window_start, b.window_end,
       g.input_digest, g.content_digest, g.key_id AS digest_key_id
FROM codes c
JOIN datasets d ON d.dataset_id = c.dataset_id
JOIN training_runs r ON r.run_id = d.run_id
JOIN training_batches b ON b.batch_id = r.batch_id
LEFT JOIN batch_digests g ON g.batch_id = b.batch_id
LEFT JOIN run_orchestration o ON o.run_id = r.run_id
"""


def ledger_path(url: str | Path | None = None) -> Path | URL:
    """Where a ledger URL points: a SQLite file (``sqlite:///path``, ``sqlite:////abs/path`` or a plain path) as a
    Path, or a PostgreSQL database (``postgresql://USER@HOST/DB``) as a SQLAlchemy URL (``str()`` of it hides the
    password).

    ``None`` means ``$DPSYN_LINEAGE_URL`` if set, else ``$DPSYN_HOME/lineage.db``.
    """
    return ledger_location(url, env=LEDGER_ENV, default_name="lineage.db", what="lineage ledger")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _iso(d: datetime | None) -> str | None:
    return d.isoformat() if d is not None else None


class Ledger:
    """The lineage ledger at ``url`` (see :func:`ledger_path`); created on first write."""

    def __init__(self, url: str | Path | None = None):
        #: a SQLite file (Path) or a PostgreSQL URL (``str()`` hides its password)
        self.path: Path | URL = ledger_path(url)

    def __repr__(self) -> str:
        return f"Ledger({display(self.path)!r})"

    # -- connection -------------------------------------------------------------------------
    def _connect(self, *, write: bool):
        return connect(self.path, write=write, schema=_SCHEMA, required_table="codes", what="lineage ledger",
                       version=("ledger_version", str(LEDGER_VERSION)), migrate_on_read=True)

    # -- writes -----------------------------------------------------------------------------
    def record(self, release: Release) -> str:
        """Store a release in one transaction; return its dataset id.

        Recording the same release twice is a no-op. A batch or run already
        stored must agree with the release (model name/version may be filled
        in later); a code or dataset id already used by another release raises
        :class:`LedgerConflictError`.
        """
        r = release
        now = _now()
        with self._connect(write=True) as db:
            old = db.execute("SELECT dataset_id FROM codes WHERE code = ?", (r.code,)).fetchone()
            if old is not None:
                if old["dataset_id"] == r.dataset.dataset_id or self._same(db, r):
                    return old["dataset_id"]
                raise LedgerConflictError(f"watermark code {r.code} is already recorded for another release")
            b = r.batch
            row = db.execute("SELECT rows FROM training_batches WHERE batch_id = ?", (b.batch_id,)).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO training_batches VALUES (?, ?, ?, ?, ?, ?)",
                    (b.batch_id, b.source, b.rows, _iso(b.window_start), _iso(b.window_end), now),
                )
            elif row["rows"] != b.rows:
                raise LedgerConflictError(f"training batch {b.batch_id[:16]}… is recorded with another row count")
            if b.digest_key_id and not db.execute("SELECT 1 FROM batch_digests WHERE batch_id = ?",
                                                  (b.batch_id,)).fetchone():
                db.execute("INSERT INTO batch_digests VALUES (?, ?, ?, ?, ?)",
                           (b.batch_id, b.input_digest, b.content_digest, b.digest_key_id, now))
            m, p = r.model, r.privacy
            row = db.execute("SELECT batch_id, epsilon FROM training_runs WHERE run_id = ?", (m.run_id,)).fetchone()
            if row is None:
                db.execute(
                    "INSERT INTO training_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (m.run_id, b.batch_id, m.synthesizer, m.table_schema, m.schema_fingerprint, m.name, m.version,
                     p.epsilon, p.delta, p.accountant, now),
                )
            elif row["batch_id"] != b.batch_id:
                raise LedgerConflictError(f"run {m.run_id} is recorded with another training batch")
            if m.orchestrator_run_id and not db.execute("SELECT 1 FROM run_orchestration WHERE run_id = ?",
                                                        (m.run_id,)).fetchone():
                db.execute("INSERT INTO run_orchestration VALUES (?, ?, ?)", (m.run_id, m.orchestrator_run_id, now))
            elif m.name or m.version:
                db.execute("UPDATE training_runs SET model_name = COALESCE(?, model_name), "
                           "model_version = COALESCE(?, model_version) WHERE run_id = ?", (m.name, m.version, m.run_id))
            d, v, w = r.dataset, r.validation, r.watermark
            if db.execute("SELECT 1 FROM datasets WHERE dataset_id = ?", (d.dataset_id,)).fetchone():
                raise LedgerConflictError(f"dataset id {d.dataset_id} is already recorded")
            db.execute(
                "INSERT INTO datasets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (d.dataset_id, m.run_id, d.sha256, d.path, d.rows, None if v.passed is None else int(v.passed),
                 json.dumps({"checks": v.checks, "failed": v.failed}), v.path, w.strength, w.grid,
                 None if w.categorical is None else int(w.categorical), now),
            )
            db.execute("INSERT INTO codes VALUES (?, ?, ?, ?, ?)", (r.code, d.dataset_id, r.key_id, r.timestamp, now))
        logger.info("lineage: recorded dataset %s (run %s)", d.dataset_id, m.run_id)
        return d.dataset_id

    def withdraw(self, dataset_id: str) -> bool:
        """Remove the record of a release that was never published (its run stopped between recording it and
        renaming its folder into place): its dataset row and its code. The training run and batch stay (they
        happened). Returns whether anything was removed."""
        with self._connect(write=True) as db:
            gone = db.execute("DELETE FROM codes WHERE dataset_id = ?", (dataset_id,)).rowcount
            gone += db.execute("DELETE FROM datasets WHERE dataset_id = ?", (dataset_id,)).rowcount
        if gone:
            logger.info("lineage: withdrew dataset %s (never published)", dataset_id)
        return bool(gone)

    @staticmethod
    def _same(db: Db, r: Release) -> bool:
        row = db.execute(_SELECT + " WHERE c.code = ?", (r.code,)).fetchone()
        return row is not None and row["sha256"] == r.dataset.sha256 and row["run_id"] == r.model.run_id

    def set_model_version(self, run_id: str, *, name: str, version: str) -> None:
        """Fill in the registered model name and version of a run (the MLflow registry comes later)."""
        with self._connect(write=True) as db:
            cur = db.execute("UPDATE training_runs SET model_name = ?, model_version = ? WHERE run_id = ?",
                             (name, str(version), run_id))
            if cur.rowcount == 0:
                raise InputError(f"run {run_id} is not in the lineage ledger")

    # -- reads ------------------------------------------------------------------------------
    def get(self, code: str) -> Lineage | None:
        with self._connect(write=False) as db:
            row = db.execute(_SELECT + " WHERE c.code = ?", (code,)).fetchone()
        return _lineage(row) if row is not None else None

    def by_sha256(self, sha256: str) -> list[Lineage]:
        with self._connect(write=False) as db:
            rows = db.execute(_SELECT + " WHERE d.sha256 = ? ORDER BY c.recorded_at", (sha256,)).fetchall()
        return [_lineage(r) for r in rows]

    def by_key(self, key_id: str, *, limit: int = 50) -> list[Lineage]:
        with self._connect(write=False) as db:
            rows = db.execute(_SELECT + " WHERE c.key_id = ? ORDER BY c.recorded_at DESC LIMIT ?",
                              (key_id, limit)).fetchall()
        return [_lineage(r) for r in rows]

    def by_run(self, run_id: str) -> list[Lineage]:
        with self._connect(write=False) as db:
            rows = db.execute(_SELECT + " WHERE r.run_id = ? ORDER BY c.recorded_at", (run_id,)).fetchall()
        return [_lineage(r) for r in rows]

    def batch_digests(self, batch_id: str) -> dict | None:
        """The keyed digests recorded for training batch ``batch_id`` (None: no such batch or no digests)."""
        with self._connect(write=False) as db:
            row = db.execute("SELECT * FROM batch_digests WHERE batch_id = ?", (batch_id,)).fetchone()
        return dict(zip(row.keys(), tuple(row), strict=True)) if row is not None else None

    def schemas(self) -> list[str]:
        """The table schemas of recorded runs (names or paths), most recent first."""
        with self._connect(write=False) as db:
            rows = db.execute("SELECT table_schema, MAX(recorded_at) AS t FROM training_runs "
                              "WHERE table_schema IS NOT NULL GROUP BY table_schema ORDER BY t DESC").fetchall()
        return [r["table_schema"] for r in rows]

    def count(self) -> int:
        with self._connect(write=False) as db:
            return int(db.execute("SELECT COUNT(*) FROM codes").fetchone()[0])


def _lineage(row: Row) -> Lineage:
    val = json.loads(row["validation_json"] or "{}")
    return Lineage(
        recorded_at=row["recorded_at"],
        release=Release(
            code=row["code"], key_id=row["key_id"], timestamp=row["timestamp"],
            dataset=DatasetRef(dataset_id=row["dataset_id"], sha256=row["sha256"], path=row["path"], rows=row["rows"]),
            model=ModelRef(run_id=row["run_id"], synthesizer=row["synthesizer"], table_schema=row["table_schema"],
                           schema_fingerprint=row["schema_fingerprint"], name=row["model_name"],
                           version=row["model_version"], orchestrator_run_id=row["flow_run_id"]),
            batch=TrainingBatch(batch_id=row["batch_id"], source=row["source"], rows=row["batch_rows"],
                                window_start=row["window_start"], window_end=row["window_end"],
                                input_digest=row["input_digest"], content_digest=row["content_digest"],
                                digest_key_id=row["digest_key_id"]),
            privacy=PrivacyRef(epsilon=row["epsilon"], delta=row["delta"], accountant=row["accountant"]),
            validation=ValidationRef(passed=None if row["gate_passed"] is None else bool(row["gate_passed"]),
                                     checks=val.get("checks", []), failed=val.get("failed", []),
                                     path=row["validation_path"]),
            watermark=WatermarkSettings(strength=row["wm_strength"], grid=row["wm_grid"],
                                        categorical=None if row["wm_categorical"] is None
                                        else bool(row["wm_categorical"])),
        ),
    )
