"""Partitioned stages for large tables: read, scrub, mask and count one partition at a time.

A table is cut into partitions of about ``ScaleConfig.partition_rows`` rows
(:func:`plan_partitions`): Parquet along its row groups, CSV along whole records
(byte ranges found by one streaming pass). Each partition is read on its own
(:func:`read_partition`), so a stage's memory is bounded by the partition, not by
the table; the raw rows are still never written to disk. The flows run the
partitions' stages through Prefect's Dask task runner (flows/partitioned.py) and
merge what the partitions return (:mod:`dpsyn.scale.merge`): reports by adding
counts, masked partitions into one Parquet file with one row group per partition,
the training batch's content hash by hashing the partitions' row hashes in order
(equal to :func:`dpsyn.io.frame_sha256` of the whole masked table), and the gate's
real-side counts by adding them (:mod:`dpsyn.validation.stats`): the DP noise is
added once, to the merged statistics.

"""

from __future__ import annotations

from importlib import import_module

from dpsyn.scale.config import Partition, ScaleConfig

_LAZY = {
    "batch_id_of": "merge", "merge_mask_reports": "merge", "merge_parquet": "merge", "merge_scrub_reports": "merge",
    "row_hashes": "merge", "partition_seed": "partition", "plan_partitions": "partition",
    "read_partition": "partition", "MaskedPartition": "stages", "mask_partition": "stages",
    "scrub_partition": "stages",
}
__all__ = ["Partition", "ScaleConfig", *sorted(_LAZY)]


def __getattr__(name: str):  # the config stays cheap to import; the stages load pandas, Presidio, torch
    if name in _LAZY:
        return getattr(import_module(f"dpsyn.scale.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'dpsyn.scale' has no attribute {name!r}")
