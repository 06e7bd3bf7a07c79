"""Merge what the partitions of a table produced: files, reports and the content hash.

Reports merge by adding counts; their column decisions must agree across
partitions (a column scrubbed one way in one partition and another way in the
next would give a table that is neither), else :class:`~dpsyn.errors.PIIResidualError`
or :class:`~dpsyn.errors.SchemaError` stops the run, fail closed. The masked
partitions are concatenated into one Parquet file with one row group per
partition, streaming (one partition in memory at a time).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dpsyn.errors import PIIResidualError, SchemaError

__all__ = ["batch_id_of", "merge_mask_reports", "merge_parquet", "merge_scrub_reports", "row_hashes"]


def row_hashes(df: pd.DataFrame) -> np.ndarray:
    """Per-row hashes of a frame (``pandas.util.hash_pandas_object``, index excluded), as uint64."""
    return np.ascontiguousarray(pd.util.hash_pandas_object(df, index=False).to_numpy(dtype=np.uint64))


def batch_id_of(columns: Sequence[str], dtypes: Sequence[str], hashes: Sequence[np.ndarray]) -> str:
    """Content hash of the concatenation of partitions with these columns and dtypes and these row hashes
    (in partition order): equal to :func:`dpsyn.io.frame_sha256` of the whole frame."""
    h = hashlib.sha256()
    h.update("\x1f".join(map(str, columns)).encode())
    h.update("\x1f".join(map(str, dtypes)).encode())
    for part in hashes:
        h.update(np.ascontiguousarray(part, dtype=np.uint64).tobytes())
    return h.hexdigest()


def merge_parquet(parts: Sequence[str | Path], dest: str | Path) -> int:
    """Concatenate Parquet files (same columns) into ``dest``, one row group per file; returns the row count.

    Reads one part at a time. Column types follow the first part; a part whose types cannot be cast to them
    raises :class:`SchemaError` (names only).
    """
    import pyarrow.parquet as pq

    from dpsyn.io import write_parquet_stream

    def tables():
        schema = None
        for part in parts:
            table = pq.read_table(part)
            if schema is None:
                schema = table.schema
            elif table.schema != schema:
                if table.schema.names != schema.names:
                    raise SchemaError("partitions of the table have different columns after scrubbing and masking")
                table = table.cast(schema)
            yield table

    if not parts:
        raise ValueError("no partitions to merge")
    return write_parquet_stream(tables(), dest)


def merge_scrub_reports(reports: Sequence[dict]) -> dict:
    """One scrub report (:class:`dpsyn.pii.ScrubReport` as a dict) from the partitions' reports.

    Rows and entity counts add up; sampled counts add up and the detected fraction is the largest seen.
    The partitions must agree on what happened to each column.
    """
    if not reports:
        raise ValueError("no scrub reports to merge")
    first = reports[0]
    for r in reports[1:]:
        for key in ("mode", "model", "dropped_columns", "transformed_columns", "scrubbed_columns",
                    "kept_pii_columns"):
            if r[key] != first[key]:
                raise PIIResidualError(
                    f"PII scrubbing treated the table's partitions differently ({key.replace('_', ' ')}); "
                    "declare the columns' PII class in the schema or give them a column operator, so every "
                    "partition is scrubbed the same way")
        for col, info in r["columns"].items():
            base = first["columns"][col]
            if (info["entity"], info["operator"]) != (base["entity"], base["operator"]):
                raise PIIResidualError(
                    f"PII scrubbing treated column '{col}' differently across partitions; declare its PII class "
                    "in the schema or give it a column operator")
    counts: dict[str, dict[str, int]] = {}
    for r in reports:
        for col, by_entity in r["counts"].items():
            into = counts.setdefault(col, {})
            for entity, n in by_entity.items():
                into[entity] = into.get(entity, 0) + int(n)
    columns = {}
    for col, info in first["columns"].items():
        merged = dict(info)
        merged["sampled"] = sum(int(r["columns"][col].get("sampled", 0)) for r in reports)
        merged["fraction"] = max(float(r["columns"][col].get("fraction", 0.0)) for r in reports)
        detected = [r["columns"][col].get("detected") for r in reports if r["columns"][col].get("detected")]
        merged["detected"] = detected[0] if detected else None
        columns[col] = merged
    return {**first, "rows": sum(int(r["rows"]) for r in reports),
            "counts": {c: dict(sorted(v.items())) for c, v in counts.items()}, "columns": columns}


def merge_mask_reports(reports: Sequence[dict]) -> dict:
    """One mask report (:class:`dpsyn.masking.MaskReport` as a dict) from the partitions' reports.

    Without k-anonymity (a whole-table operation, never partitioned) the column decisions are the schema's,
    the same in every partition; counts of unreadable values add up.
    """
    if not reports:
        raise ValueError("no mask reports to merge")
    first = reports[0]
    for r in reports[1:]:
        for key in ("dropped_columns", "generalized_columns", "kept_columns"):
            if r[key] != first[key]:
                raise SchemaError("masking treated the table's partitions differently")
        if r.get("k_anonymity") or first.get("k_anonymity"):
            raise SchemaError("k-anonymity is a whole-table operation and cannot be merged from partitions")
    unreadable: dict[str, int] = {}
    nonconforming: dict[str, str] = {}
    for r in reports:
        for col, n in r.get("unreadable_values", {}).items():
            unreadable[col] = unreadable.get(col, 0) + int(n)
        nonconforming.update(r.get("nonconforming_columns", {}))
    return {**first, "unreadable_values": unreadable, "nonconforming_columns": nonconforming}
