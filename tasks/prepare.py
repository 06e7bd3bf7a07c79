"""Per-partition tasks of the ``synthesize`` and ``monitor_drift`` flows (mapped on Dask by flows/partitioned.py).

Each task is one call into :mod:`dpsyn.pipeline.prepare`. Partitions' frames and summaries go through the run's
private work folder, never through Prefect: tasks take and return a partition's index. Every task here touches
rows, so none caches, persists its result or retries.
"""

from __future__ import annotations

from dpsyn.config import SynthesizeConfig
from dpsyn.pipeline import RunContext, prepare
from tasks.options import private_task


@private_task("plan-partitions")
def plan(config: SynthesizeConfig, ctx: RunContext) -> int:
    """Cut the input into partitions; the number of partitions."""
    return prepare.plan(config, ctx)


@private_task("scrub-partition")
def scrub_partition(config: SynthesizeConfig, ctx: RunContext, index: int) -> int:
    return prepare.scrub_partition(config, ctx, index)


@private_task("mask-partition")
def mask_partition(config: SynthesizeConfig, ctx: RunContext, index: int) -> int:
    return prepare.mask_partition(config, ctx, index)


@private_task("real-statistics-partition")
def statistics_partition(config: SynthesizeConfig, ctx: RunContext, index: int, kind: str) -> int:
    return prepare.statistics_partition(config, ctx, index, kind=kind)


@private_task("merge-partitions")
def merge(config: SynthesizeConfig, ctx: RunContext, count: int) -> dict:
    """One masked table, its holdout and the merged counts; the batch's public record."""
    return prepare.merge(config, ctx, count)
