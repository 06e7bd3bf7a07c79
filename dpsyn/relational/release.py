"""A dataset release's watermark and lineage, per table.

Every table of a release gets its own per-record code, ``HMAC(key, batch_id, run_id.<table>, timestamp)``, in a
``_wm`` column with each row's tag (and after an invisible separator in its text cells), as a single-table
release does (:mod:`dpsyn.watermark.codes`). The lineage ledger gets one release per table: the table's file
hash and code, its component ``<run_id>.<table>`` (synthesizer ``relational``, schema ``<dataset>.<table>``),
the dataset run's id as the orchestrator run, one training batch for the whole dataset (a random id, the noisy
person count) and the run's ε and δ, so ``dpsyn audit trace`` takes any table file back to the run, the batch and
its guarantee. Nothing here reads a private value.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpsyn.relational.schema import DatasetSchema
from dpsyn.schema import ColumnKind

__all__ = ["component_run_id", "lineage_releases", "watermark_tables"]


def component_run_id(run_id: str, table: str) -> str:
    """The run id a table's code and lineage carry: the dataset run's id and the table's name."""
    return f"{run_id}.{table}"


def watermark_tables(synthetic: dict[str, pd.DataFrame], dataset: DatasetSchema, *, key, run_id: str,
                     batch_id: str, timestamp: str) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """Each table with its own per-record code and row tags (new frames) and the codes (table → code)."""
    from dpsyn.watermark import apply_watermark, record_code

    schemas = {dataset.root.name: dataset.root_schema} | {c.name: c.schema_ for c in dataset.children}
    marked, codes = {}, {}
    for name, df in synthetic.items():
        code = record_code(key, batch_id=batch_id, run_id=component_run_id(run_id, name), timestamp=timestamp)
        text = [c.name for c in schemas[name].columns if c.kind == ColumnKind.text and c.name in df.columns]
        marked[name] = apply_watermark(df, code, key=key, text_columns=text)
        codes[name] = code
    return marked, codes


def lineage_releases(manifest: dict, stage: Path, *, key_id: str, timestamp: str, batch_id: str,
                     persons_estimate: int, report_path: str | None, checks: list[str], failed: list[str]) -> list:
    """The lineage ledger's records of a dataset release staged in ``stage`` (one per table)."""
    from dpsyn.io import file_sha256
    from dpsyn.lineage import (
        DatasetRef,
        ModelRef,
        PrivacyRef,
        Release,
        TrainingBatch,
        ValidationRef,
    )

    p = manifest["privacy"]
    batch = TrainingBatch(batch_id=batch_id, source=f"dataset {manifest['dataset']}", rows=persons_estimate)
    out = []
    for name, t in manifest["tables"].items():
        out.append(Release(
            code=t["watermark_code"], key_id=key_id, timestamp=timestamp,
            dataset=DatasetRef(sha256=file_sha256(stage / t["file"]), path=t["file"], rows=t["rows"]),
            model=ModelRef(run_id=component_run_id(manifest["run_id"], name), synthesizer=manifest["synthesizer"],
                           table_schema=f"{manifest['dataset']}.{name}",
                           schema_fingerprint=manifest["dataset_fingerprint"],
                           orchestrator_run_id=manifest["run_id"]),
            batch=batch,
            privacy=PrivacyRef(epsilon=float(p["epsilon_spent"]), delta=float(p["delta"]), accountant=p["accountant"]),
            validation=ValidationRef(passed=manifest["gate"]["verdict"] == "passed", checks=checks, failed=failed,
                                     path=report_path)))
    return out
