"""The lineage ledger: from a watermark code to everything a synthetic release came from.

code → synthetic dataset (id, sha256) → model (name, version, when registered)
→ training run (MLflow run id) → training batch (content hash, source, rows,
time window) → ε, δ, accountant → validation verdict. Stored in SQLite
(``$DPSYN_HOME/lineage.db`` by default, ``DPSYN_LINEAGE_URL`` or a
``sqlite:///PATH`` URL otherwise); every release is written in one
transaction. :func:`lineage_tags` gives the MLflow tags that mirror a release
(tasks/audit.py writes them; dpsyn never imports MLflow).
"""

from __future__ import annotations

from dpsyn.lineage.ledger import LEDGER_ENV, AuditFailedError, Ledger, LedgerConflictError, ledger_path
from dpsyn.lineage.models import (
    CodeTrace,
    DatasetRef,
    FileTrace,
    Lineage,
    ModelRef,
    PrivacyRef,
    Release,
    TrainingBatch,
    ValidationRef,
    WatermarkSettings,
    training_batch,
)
from dpsyn.lineage.trace import read_any, record_release, trace_code, trace_file, verify_file

__all__ = [
    "LEDGER_ENV",
    "AuditFailedError",
    "CodeTrace",
    "DatasetRef",
    "FileTrace",
    "Ledger",
    "LedgerConflictError",
    "Lineage",
    "ModelRef",
    "PrivacyRef",
    "Release",
    "TrainingBatch",
    "ValidationRef",
    "WatermarkSettings",
    "ledger_path",
    "lineage_tags",
    "read_any",
    "record_release",
    "trace_code",
    "trace_file",
    "training_batch",
    "verify_file",
]

TAG_PREFIX = "dpsyn.lineage."


def lineage_tags(release: Release, *, ledger: str | None = None) -> dict[str, str]:
    """The MLflow tags that mirror a release's lineage on its training run (ids, hashes, ε; no values)."""
    r = release
    tags = {
        "code": r.code,
        "key_id": r.key_id,
        "dataset_id": r.dataset.dataset_id,
        "dataset_sha256": r.dataset.sha256,
        "training_batch": r.batch.batch_id,
        "batch_source": r.batch.source,
        "batch_rows": str(r.batch.rows),
        "batch_window_start": r.batch.window_start.isoformat() if r.batch.window_start else "",
        "batch_window_end": r.batch.window_end.isoformat() if r.batch.window_end else "",
        "epsilon": f"{r.privacy.epsilon:.6f}",
        "delta": f"{r.privacy.delta:g}",
        "accountant": r.privacy.accountant,
        "model_name": r.model.name or "",
        "model_version": r.model.version or "",
        "gate_passed": "" if r.validation.passed is None else str(r.validation.passed),
        "ledger": str(ledger_path(ledger)),
    }
    return {TAG_PREFIX + k: v for k, v in tags.items() if v != ""}
