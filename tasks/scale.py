"""Per-partition tasks of the ``synthesize`` and ``monitor_drift`` flows (run on Dask by flows/partitioned.py).

Each task wraps one dpsyn call. Partitions' frames go through the run's private
work folder (``parts/``), never through Prefect: task results are counts, file
names and hashes. Every task here touches rows, so none caches, persists its
result or retries.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from dpsyn.config import SynthesizeConfig
from dpsyn.progress import report
from dpsyn.scale import Partition
from tasks.stages import BATCH, HOLDOUT, MASKED, OPERATOR, REAL_STATISTICS

PRIVATE = dict(cache_policy=NO_CACHE, persist_result=False, retries=0)
PARTS = "parts"
STATISTICS = REAL_STATISTICS  # exact real-side counts of the masked training rows (private)


_ticks: Counter = Counter()
_ticks_lock = threading.Lock()


def _tick(work: str, stage: str, total: int) -> None:
    """Progress of a partitioned stage: partitions finish in any order, so count them (this process only)."""
    with _ticks_lock:
        _ticks[(work, stage)] += 1
        done = _ticks[(work, stage)]
    report(f"partitions: {stage}", min(done, total), total)


def _part(work: str, kind: str, index: int, suffix: str = "parquet") -> Path:
    folder = Path(work) / PARTS
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder / f"{kind}-{index:05d}.{suffix}"


def partition_rows(config: SynthesizeConfig) -> int:
    """Rows per partition for this run: k-anonymity needs the whole table in one partition."""
    return 0 if config.mask.k is not None else config.scale.partition_rows


@task(name="plan-partitions", **PRIVATE)
def plan(config: SynthesizeConfig) -> list[Partition]:
    """Cut the input into partitions (byte ranges or row groups; no values)."""
    from dpsyn.scale import plan_partitions
    from dpsyn.schema import load_schema

    return plan_partitions(config.data, load_schema(config.table_schema), partition_rows(config))


@task(name="scrub-partition", **PRIVATE)
def scrub_partition(config: SynthesizeConfig, work: str, part: Partition) -> dict:
    """Read one partition as the schema declares and scrub PII; only the scrubbed rows touch disk."""
    from dpsyn.scale import scrub_partition as scrub
    from dpsyn.schema import load_schema

    clean, rep = scrub(config.data, load_schema(config.table_schema), part, config.scrub)
    clean.to_parquet(_part(work, "scrubbed", part.index), index=False)
    _tick(work, "scrub PII", part.count)
    return rep.to_dict()


@task(name="mask-partition", **PRIVATE)
def mask_partition(config: SynthesizeConfig, work: str, part: Partition, scrubbed: dict) -> dict:
    """Mask one scrubbed partition and split off its holdout rows (secret coins)."""
    from dpsyn.privacy import NoiseSource
    from dpsyn.scale import mask_partition as mask
    from dpsyn.scale import partition_seed
    from dpsyn.schema import load_schema

    schema = load_schema(config.table_schema)
    v = config.validation
    share = v.holdout_share if v.utility and v.holdout_share > 0 and schema.target is not None else 0.0
    coins = NoiseSource(secure=config.privacy.secure_rng, seed=partition_seed(config.privacy.noise_seed, part.index))
    src = _part(work, "scrubbed", part.index)
    out = mask(pd.read_parquet(src), schema, config.mask, holdout_share=share, noise=coins)
    out.train.to_parquet(_part(work, "masked", part.index), index=False)
    if out.holdout is not None:
        out.holdout.to_parquet(_part(work, "holdout", part.index), index=False)
    np.save(_part(work, "hashes", part.index, "npy"), out.hashes)
    src.unlink()
    _tick(work, "mask by tier", part.count)
    return {"index": part.index, "rows": len(out.hashes), "train_rows": len(out.train),
            "holdout_rows": 0 if out.holdout is None else len(out.holdout), "columns": list(out.train.columns),
            "dtypes": out.dtypes, "mask_report": out.report.model_dump()}


@task(name="real-statistics-partition", **PRIVATE)
def statistics_partition(config: SynthesizeConfig, work: str, part: Partition, masked: dict, kind: str) -> str:
    """Exact counts of one masked partition's training rows (``kind`` "gate": the validation gate's;
    "drift": the drift check's), written to the work folder; returns the file name. Private: never logged."""
    from dpsyn.schema import load_schema

    schema = load_schema(config.table_schema)
    df = pd.read_parquet(_part(work, "masked", part.index))
    if kind == "gate":
        from dpsyn.validation import real_statistics_for

        stats = real_statistics_for(df, schema, config.validation)
    elif kind == "drift":
        from dpsyn.drift import drift_statistics

        stats = drift_statistics(df, schema)
    else:
        raise ValueError(f"unknown statistics kind {kind!r}; valid: gate, drift")
    return stats.save(_part(work, "statistics", part.index, "npz")).name


@task(name="merge-partitions", **PRIVATE)
def merge(config: SynthesizeConfig, work: str, scrubbed: list[dict], masked: list[dict],
          statistics: list[str]) -> dict:
    """One masked table (``masked.parquet``, one row group per partition), its holdout and the merged real-side
    counts, in the work folder. The exact row counts and the content hash of the training batch stay there too
    (``batch.json``), and the scrub and mask reports (exact counts) go to ``operator/`` for the data owner: none
    of it is returned, logged or published. Returns the batch's public record: a random id, the input's file
    name and the schema's name."""
    import uuid

    from dpsyn.scale import batch_id_of, merge_mask_reports, merge_parquet, merge_scrub_reports
    from dpsyn.schema import load_schema
    from dpsyn.validation.stats import RealStatistics

    schema = load_schema(config.table_schema)
    masked = sorted(masked, key=lambda m: m["index"])
    indices = [m["index"] for m in masked]
    if any(m["columns"] != masked[0]["columns"] or m["dtypes"] != masked[0]["dtypes"] for m in masked):
        from dpsyn.errors import SchemaError

        raise SchemaError("partitions of the table have different columns or types after masking")
    scrub_rep = merge_scrub_reports(scrubbed)
    mask_rep = merge_mask_reports([m["mask_report"] for m in masked])
    merge_parquet([_part(work, "masked", i) for i in indices], Path(work) / MASKED)
    holdout_rows = sum(m["holdout_rows"] for m in masked)
    if any((_part(work, "holdout", i)).exists() for i in indices):
        merge_parquet([_part(work, "holdout", i) for i in indices], Path(work) / HOLDOUT)
    content = batch_id_of(masked[0]["columns"], masked[0]["dtypes"],
                          [np.load(_part(work, "hashes", i, "npy")) for i in indices])
    RealStatistics.merge_all([RealStatistics.load(Path(work) / PARTS / f) for f in statistics]).save(
        Path(work) / STATISTICS)
    for f in (Path(work) / PARTS).iterdir():
        f.unlink()
    with _ticks_lock:
        for key in [k for k in _ticks if k[0] == work]:
            del _ticks[key]
    report("stage: scrub PII", 1, 1)
    report("stage: mask by tier", 1, 1)
    rows = sum(m["rows"] for m in masked)
    public = {"batch_id": uuid.uuid4().hex, "source": Path(config.data).name, "schema_name": schema.name}
    private = {**public, "content_sha256": content, "rows": rows, "train_rows": rows - holdout_rows,
               "holdout_rows": holdout_rows, "partitions": len(masked)}
    (Path(work) / BATCH).write_text(json.dumps(private))
    operator = Path(work) / OPERATOR
    operator.mkdir(mode=0o700, exist_ok=True)
    (operator / "scrub_report.json").write_text(json.dumps(scrub_rep, indent=2))
    (operator / "mask_report.json").write_text(json.dumps(mask_rep, indent=2))
    (operator / "training_batch.json").write_text(json.dumps(private, indent=2))
    get_run_logger().info("input scrubbed and masked; the scrub and mask reports are kept for the data owner")
    return public
