"""Prepare a run's input one partition at a time: plan, scrub, mask (and split off the holdout), count, merge.

The input is cut into partitions of about ``scale.partition_rows`` rows (:func:`plan`: Parquet along row
groups, CSV along whole records); each partition is read, scrubbed, masked and counted on its own, so a stage's
memory is bounded by the partition, and the raw rows never touch disk. Every per-partition stage takes the
partition's index and exchanges files through the run's work folder (``parts/``): what it returns is the index,
never counts. :func:`merge` then writes what an unpartitioned run would: one masked table (a row group per
partition), its holdout, the merged exact real-side counts (noise is added once, to the merged statistics), the
training batch's record (a random id; its exact counts and content hash stay in the folder) and the operator
reports. The orchestration (Dask or one partition after another) is the caller's.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pandas as pd

from dpsyn.config import SynthesizeConfig
from dpsyn.pipeline.context import RunContext
from dpsyn.pipeline.partition import Partition, partition_seed, plan_partitions, read_partition
from dpsyn.pipeline.workdir import WorkDir
from dpsyn.privacy import NoiseSource, derive_seed
from dpsyn.privacy.unit import PERSON_CODE
from dpsyn.progress import report
from dpsyn.schema import load_schema

__all__ = ["DATETIME_DTYPE", "mask_frame", "mask_partition", "merge", "plan", "prepare", "scrub_partition",
           "statistics_partition"]

DATETIME_DTYPE = "datetime64[us]"
PLAN = "partitions.json"  # the partition plan (byte ranges, row groups, record counts: private)


def partition_rows(config: SynthesizeConfig) -> int:
    """Rows per partition for this run: k-anonymity, and a declared privacy unit (a person's rows are bounded
    together), need the whole table in one partition."""
    if config.mask.k is not None or load_schema(config.table_schema).privacy_unit is not None:
        return 0
    return config.scale.partition_rows


def plan(config: SynthesizeConfig, ctx: RunContext) -> int:
    """Cut the input into partitions (byte ranges or row groups; no values); the plan stays in the work folder.
    Returns the number of partitions."""
    parts = plan_partitions(config.data, load_schema(config.table_schema), partition_rows(config))
    ctx.workdir.write_json(PLAN, [p.model_dump() for p in parts])
    return len(parts)


def _partition(ctx: RunContext, index: int) -> Partition:
    return Partition(**ctx.workdir.read_json(PLAN)[index])


def _progress(work: WorkDir, kind: str, stage: str, total: int) -> None:
    """Partitions finish in any order, possibly in other processes: count the summaries written so far."""
    done = len(list((work / WorkDir.PARTS).glob(f"{kind}-*.json")))
    report(f"partitions: {stage}", min(done, total), total)


def scrub_partition(config: SynthesizeConfig, ctx: RunContext, index: int) -> int:
    """Read partition ``index`` as the schema declares and scrub its PII; only the scrubbed rows touch disk."""
    import json

    from dpsyn.pii import scrub_table

    part = _partition(ctx, index)
    work = ctx.workdir
    schema = load_schema(config.table_schema)
    raw = read_partition(config.data, schema, part)
    codes = None
    if schema.privacy_unit is not None:  # before any read of a value: at most k rows per person
        raw, codes = _bound_persons(raw, schema, config)
    clean, rep = scrub_table(raw, schema, config.scrub)
    if codes is not None:  # the person of each row, as random codes (the raw ids are scrubbed like any id)
        clean[PERSON_CODE] = codes
    clean.to_parquet(work.part("scrubbed", index), index=False)
    work.part("scrub-report", index, "json").write_text(json.dumps(rep.to_dict()))
    _progress(work, "scrub-report", "scrub PII", part.count)
    return index


def _bound_persons(raw: pd.DataFrame, schema, config: SynthesizeConfig) -> tuple[pd.DataFrame, np.ndarray]:
    """The partition with at most the unit's bound of rows per person, and the kept rows' person codes."""
    from dpsyn.privacy.unit import bound_table

    unit = schema.privacy_unit
    coins = NoiseSource(secure=config.privacy.secure_rng, seed=derive_seed(config.privacy.noise_seed, "unit"))
    return bound_table(raw, unit.column, unit.max_rows_per_person, coins, table=f"input {Path(config.data).name}")


def mask_frame(scrubbed: pd.DataFrame, schema, config=None):
    """Mask a scrubbed frame by tier (:func:`dpsyn.masking.mask_table`), refuse non-conforming columns, and give
    every date column one resolution (pandas infers s, us or ns from each partition's strings)."""
    from dpsyn.masking import mask_table

    masked, rep = mask_table(scrubbed, schema, config)
    rep.raise_if_nonconforming(schema.name)
    for col in schema.columns:
        if col.name in masked.columns and pd.api.types.is_datetime64_any_dtype(masked[col.name]):
            masked[col.name] = masked[col.name].astype(DATETIME_DTYPE)
    return masked, rep


def mask_partition(config: SynthesizeConfig, ctx: RunContext, index: int) -> int:
    """Mask scrubbed partition ``index`` and send each row to the holdout by a secret coin flip (the utility
    check's rows, when the schema has a target)."""
    import json

    work = ctx.workdir
    part = _partition(ctx, index)
    schema = load_schema(config.table_schema)
    v = config.validation
    share = v.holdout_share if v.utility and v.holdout_share > 0 and schema.target is not None else 0.0
    src = work.part("scrubbed", index)
    scrubbed = pd.read_parquet(src)
    masked, rep = mask_frame(scrubbed, schema, config.mask)
    from dpsyn.pipeline.merge import row_hashes

    np.save(work.part("hashes", index, "npy"), row_hashes(masked))
    if PERSON_CODE in scrubbed.columns:  # masking keeps the rows' index labels
        masked[PERSON_CODE] = scrubbed[PERSON_CODE].loc[masked.index].to_numpy()
    summary = {"rows": len(masked), "columns": list(masked.columns), "dtypes": [str(t) for t in masked.dtypes],
               "mask_report": rep.model_dump(), "holdout_rows": 0}
    if share > 0:
        from dpsyn.validation.utility import split_holdout

        coins = NoiseSource(secure=config.privacy.secure_rng, seed=partition_seed(config.privacy.noise_seed, index))
        masked, holdout = split_holdout(masked, share, noise=coins, person=PERSON_CODE)  # by person, if any
        holdout.to_parquet(work.part("holdout", index), index=False)
        summary["holdout_rows"] = len(holdout)
    masked.to_parquet(work.part("masked", index), index=False)
    work.part("mask-summary", index, "json").write_text(json.dumps(summary))
    src.unlink()
    _progress(work, "mask-summary", "mask by tier", part.count)
    return index


def statistics_partition(config: SynthesizeConfig, ctx: RunContext, index: int, *, kind: str = "gate") -> int:
    """Exact counts of masked partition ``index``'s training rows (``kind`` "gate": the validation gate's; "drift":
    the drift check's), written to the work folder. Private: never logged or returned."""
    schema = load_schema(config.table_schema)
    df = pd.read_parquet(ctx.workdir.part("masked", index))
    if kind == "gate":
        from dpsyn.validation import real_statistics_for

        stats = real_statistics_for(df, schema, config.validation)
    elif kind == "drift":
        from dpsyn.drift import drift_statistics

        stats = drift_statistics(df, schema)
    else:
        raise ValueError(f"unknown statistics kind {kind!r}; valid: gate, drift")
    stats.save(ctx.workdir.part("statistics", index, "npz"))
    return index


def merge(config: SynthesizeConfig, ctx: RunContext, count: int) -> dict:
    """Merge the ``count`` prepared partitions (see the module docstring). Returns the training batch's public
    record: a random id, the input's file name and the schema's name."""
    import json

    from dpsyn.errors import SchemaError
    from dpsyn.pipeline.merge import batch_id_of, merge_mask_reports, merge_parquet, merge_scrub_reports
    from dpsyn.validation.stats import RealStatistics

    work = ctx.workdir
    schema = load_schema(config.table_schema)
    indices = list(range(count))
    masked = [json.loads(work.part("mask-summary", i, "json").read_text()) for i in indices]
    if any(m["columns"] != masked[0]["columns"] or m["dtypes"] != masked[0]["dtypes"] for m in masked):
        raise SchemaError("partitions of the table have different columns or types after masking")
    scrub_rep = merge_scrub_reports([json.loads(work.part("scrub-report", i, "json").read_text()) for i in indices])
    mask_rep = merge_mask_reports([m["mask_report"] for m in masked])
    merge_parquet([work.part("masked", i) for i in indices], work / WorkDir.MASKED)
    if any(work.part("holdout", i).exists() for i in indices):
        merge_parquet([work.part("holdout", i) for i in indices], work / WorkDir.HOLDOUT)
    content = batch_id_of(masked[0]["columns"], masked[0]["dtypes"],
                          [np.load(work.part("hashes", i, "npy")) for i in indices])
    statistics = [work.part("statistics", i, "npz") for i in indices]
    if all(p.exists() for p in statistics):
        RealStatistics.merge_all([RealStatistics.load(p) for p in statistics]).save(work / WorkDir.REAL_STATISTICS)
    for f in (work / WorkDir.PARTS).iterdir():
        f.unlink()
    report("stage: scrub PII", 1, 1)
    report("stage: mask by tier", 1, 1)
    rows = sum(m["rows"] for m in masked)
    holdout_rows = sum(m["holdout_rows"] for m in masked)
    public = {"batch_id": uuid.uuid4().hex, "source": Path(config.data).name, "schema_name": schema.name}
    private = {**public, "content_sha256": content, "rows": rows, "train_rows": rows - holdout_rows,
               "holdout_rows": holdout_rows, "partitions": count}
    work.write_json(WorkDir.BATCH, private)
    operator = work.operator_dir()
    (operator / "scrub_report.json").write_text(json.dumps(scrub_rep, indent=2))
    (operator / "mask_report.json").write_text(json.dumps(mask_rep, indent=2))
    (operator / "training_batch.json").write_text(json.dumps(private, indent=2))
    return public


def prepare(config: SynthesizeConfig, ctx: RunContext, *, statistics: str = "gate") -> dict:
    """Every partition in turn, in this process (the Prefect flow maps them on Dask instead), then :func:`merge`."""
    n = plan(config, ctx)
    for i in range(n):  # one partition in memory at a time
        scrub_partition(config, ctx, i)
        mask_partition(config, ctx, i)
        statistics_partition(config, ctx, i, kind=statistics)
    return merge(config, ctx, n)
