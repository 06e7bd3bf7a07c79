"""The records of the lineage ledger (pydantic): what one synthetic release came from.

Everything here is an identifier, a hash, a count, a setting or a DP
statistic: never a data value, never a key (only key ids).
"""

from __future__ import annotations

import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CodeTrace",
    "DatasetRef",
    "FileTrace",
    "Lineage",
    "ModelRef",
    "PrivacyRef",
    "Release",
    "TrainingBatch",
    "ValidationRef",
    "WatermarkSettings",
    "training_batch",
]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrainingBatch(_Record):
    """The snapshot of real data a model was trained on.

    Its id is random (a deterministic function of the rows, such as their hash, would let anyone test a guess
    of the rows against it); ``rows`` is the run's noisy row count (DP). The keyed digests (HMACs under the
    pipeline's key of the input file's and of the masked rows' SHA-256) let the data owner verify that a file is
    the batch (``dpsyn audit batch``); without the key they reveal nothing.
    """

    batch_id: str = Field(min_length=1, description="random id of the batch (uuid4 hex)")
    source: str = Field(description="the input's file name (no folder)")
    rows: int = Field(ge=0, description="the run's noisy count of the batch's rows (DP), not the exact count")
    window_start: datetime | None = None  # the time window the rows cover, when known
    window_end: datetime | None = None
    input_digest: str | None = None  # HMAC(key, sha256 of the input file)
    content_digest: str | None = None  # HMAC(key, content hash of the scrubbed and masked rows)
    digest_key_id: str | None = None


def training_batch(df: pd.DataFrame, *, source: str, rows: int, key=None, window_start: datetime | None = None,
                   window_end: datetime | None = None) -> TrainingBatch:
    """The training batch record of a scrubbed and masked frame: a random id, ``rows`` (a noisy count: never
    ``len(df)``), and with ``key`` (a :class:`~dpsyn.watermark.WatermarkKey`) the keyed digest of its rows."""
    from dpsyn.io import frame_sha256

    digest = None
    if key is not None:
        from dpsyn.watermark import batch_digest

        digest = batch_digest(key, frame_sha256(df), kind="content")
    return TrainingBatch(batch_id=uuid.uuid4().hex, source=Path(source).name, rows=rows, window_start=window_start,
                         window_end=window_end, content_digest=digest,
                         digest_key_id=None if key is None else key.key_id)


class ModelRef(_Record):
    run_id: str = Field(min_length=1, description="the MLflow run that trained the model")
    synthesizer: str | None = None
    table_schema: str | None = None  # shipped schema name or schema file path
    schema_fingerprint: str | None = None
    name: str | None = None  # MLflow registered model name, when registered
    version: str | None = None
    orchestrator_run_id: str | None = Field(
        default=None, description="the dpsyn run's id: the Prefect flow run's under Prefect, else a random uuid")


class PrivacyRef(_Record):
    epsilon: float = Field(ge=0, description="ε spent by the run")
    delta: float = Field(ge=0, le=1)
    accountant: str


class ValidationRef(_Record):
    passed: bool | None = None
    checks: list[str] = Field(default_factory=list)
    failed: list[str] = Field(default_factory=list)
    path: str | None = None  # where the full report was published


class WatermarkSettings(_Record):
    """How the statistical watermark was embedded (None strength: not embedded)."""

    strength: float | None = None
    grid: int | None = None
    categorical: bool | None = None


class DatasetRef(_Record):
    dataset_id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    sha256: str = Field(min_length=64, max_length=64)
    path: str | None = None
    rows: int | None = Field(default=None, ge=0)


class Release(_Record):
    """One published synthetic dataset and everything it came from."""

    code: str = Field(pattern=r"^[0-9a-f]{16,64}$")
    key_id: str = Field(min_length=1)
    timestamp: str = Field(min_length=1)  # the timestamp that went into the code
    dataset: DatasetRef
    model: ModelRef
    batch: TrainingBatch
    privacy: PrivacyRef
    validation: ValidationRef = Field(default_factory=ValidationRef)
    watermark: WatermarkSettings = Field(default_factory=WatermarkSettings)

    @classmethod
    def from_manifest(
        cls,
        manifest: dict[str, Any],
        *,
        dataset_sha256: str,
        path: str | Path | None = None,
        rows: int | None = None,
        validation: dict | None = None,
        validation_path: str | Path | None = None,
        window_start: datetime | None = None,
        window_end: datetime | None = None,
        model_name: str | None = None,
        model_version: str | None = None,
        dataset_id: str | None = None,
        batch_digests: dict[str, str] | None = None,
    ) -> Release:
        """A release from the manifest the ``synthesize`` flow publishes (dpsyn.pipeline.manifest).

        ``validation`` is the validation report's dict (``ValidationReport.model_dump()``);
        only its verdict and check names are kept.
        """
        wm = manifest["watermark"]
        batch = manifest["training_batch"]
        stat = wm.get("statistical") or {}
        checks = (validation or {}).get("checks", [])
        return cls(
            code=wm["code"],
            key_id=wm["key_id"],
            timestamp=wm["timestamp"],
            dataset=DatasetRef(
                **({"dataset_id": dataset_id} if dataset_id else {}), sha256=dataset_sha256,
                path=str(path) if path is not None else None, rows=rows,
            ),
            model=ModelRef(
                run_id=manifest["mlflow_run_id"], synthesizer=manifest.get("synthesizer"),
                table_schema=manifest.get("schema"), schema_fingerprint=manifest.get("schema_fingerprint"),
                name=model_name, version=model_version, orchestrator_run_id=manifest.get("run_id"),
            ),
            batch=TrainingBatch(
                batch_id=batch["batch_id"], source=batch.get("source", ""), rows=batch["rows_estimate"],
                window_start=window_start or batch.get("window_start"), window_end=window_end or batch.get("window_end"),
                **(batch_digests or {}),
            ),
            privacy=PrivacyRef(epsilon=manifest["epsilon_spent"], delta=manifest["delta"],
                               accountant=manifest["accountant"]),
            validation=ValidationRef(
                passed=manifest.get("gate_passed", None if validation is None else all(c["passed"] for c in checks)),
                checks=[c["name"] for c in checks], failed=[c["name"] for c in checks if not c["passed"]],
                path=str(validation_path) if validation_path is not None else None,
            ),
            watermark=WatermarkSettings(strength=stat.get("strength"), grid=stat.get("grid"),
                                        categorical=stat.get("categorical")),
        )


class Lineage(_Record):
    """What a code traces to (a :class:`Release` as stored, plus when it was recorded)."""

    release: Release
    recorded_at: str


CodeStatus = Literal["verified", "content_mismatch", "recorded", "mismatch", "not_ours", "malformed"]
#: What a file's check proves, strongest first; only the first three are a positive answer (exit 0).
Verdict = Literal["known_release", "records_verified", "statistical", "copied", "unverified", "not_ours"]
VERDICTS = {
    "known_release": "the file is byte-identical to a recorded release (its SHA-256)",
    "records_verified": "every row that carries a code of ours carries the tag that code gives its content",
    "statistical": "the statistical watermark of one of our keys is detected (p below alpha); no code to check",
    "copied": "code present but content not verified (copied?): rows carry a code of ours with a tag their "
              "values do not give",
    "unverified": "a recorded code is present but cannot be checked here (key not available, or ledger altered)",
    "not_ours": "no code, digest or statistical mark of ours",
}


class CodeTrace(_Record):
    """One per-record code and what it traces to.

    ``verified``: in the ledger, recomputing the HMAC with the key of its
    key id gives the code, and every row carrying it carries the row tag of its
    own content; ``content_mismatch``: the code verifies but some rows' tags do
    not (``rows_verified`` of ``rows`` do): the code was copied onto other rows,
    or the rows were edited; ``recorded``: in the ledger, but that key is not
    available here to re-check it; ``mismatch``: in the ledger, but the HMAC
    does not match (the ledger was altered); ``not_ours``: a well-formed code
    that no release of ours carries (a forgery or another issuer);
    ``malformed``: not a code at all.
    """

    code: str
    status: CodeStatus
    rows: int = 0  # rows of the file that carry it
    rows_verified: int | None = None  # of those, rows whose tag matches their content (None: not checked)
    where: Literal["_wm", "text", "argument"] = "argument"
    lineage: Lineage | None = None


class FileTrace(_Record):
    """The lineage of a file (or of one of its rows), and how it was established."""

    path: str
    sha256: str
    rows: int
    row: int | None = None
    method: Literal["record_code", "text_mark", "statistical", "none"]
    file_matches_release: str | None = None  # dataset id whose recorded sha256 equals the file's
    codes: list[CodeTrace] = Field(default_factory=list)
    statistical: dict | None = None  # a DetectionResult dump, when the statistical test ran
    schema_used: str | None = None
    candidates: list[Lineage] = Field(default_factory=list)  # releases under the matched key (statistical)
    verdict: Verdict = "not_ours"
    message: str = ""

    @property
    def traced(self) -> bool:
        """A positive answer: a known release, verified records, or the statistical mark (exit 0)."""
        return self.verdict in ("known_release", "records_verified", "statistical")

    def decide(self) -> Verdict:
        """The verdict from the evidence, strongest first; a copied code outweighs a statistical mark."""
        statuses = {c.status for c in self.codes}
        if self.file_matches_release:
            return "known_release"
        if "content_mismatch" in statuses:
            return "copied"
        if "verified" in statuses:
            return "records_verified"
        if self.statistical and self.statistical.get("detected"):
            return "statistical"
        if statuses & {"recorded", "mismatch"}:
            return "unverified"
        return "not_ours"
