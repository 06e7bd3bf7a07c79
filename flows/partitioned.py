"""The partitioned part of a run: scrub, mask and count the real rows one partition at a time, on Dask.

``prepare`` plans the input's partitions and runs the subflow ``prepare-partitions`` on prefect-dask's
``DaskTaskRunner`` (a temporary LocalCluster, or the scheduler at ``scale.dask_address``) when the input has more
than one partition (``scale.dask`` forces it on or off); without Dask the same tasks run in the calling flow, one
partition after another. Tasks exchange partition indices; rows and counts stay in the run's work folder.
"""

from __future__ import annotations

from prefect import flow, unmapped

from dpsyn.config import ScaleConfig, SynthesizeConfig
from dpsyn.pipeline import RunContext
from tasks import prepare as prepare_tasks


def dask_runner(scale: ScaleConfig, n_partitions: int):
    """prefect-dask's ``DaskTaskRunner`` for this run, or None when the partitions run in the calling flow."""
    use = scale.dask if scale.dask is not None else n_partitions > 1
    if not use:
        return None
    from prefect_dask import DaskTaskRunner

    if scale.dask_address:
        return DaskTaskRunner(address=scale.dask_address)
    return DaskTaskRunner(cluster_kwargs=scale.cluster_kwargs())


@flow(name="prepare-partitions", log_prints=False, persist_result=False)
def prepare_partitions(config: SynthesizeConfig, ctx: RunContext, count: int, statistics: str,
                       parallel: bool = True) -> dict:
    """Scrub → mask → exact counts, per partition (``statistics``: "gate" or "drift"), then merge."""
    if parallel:
        indices = list(range(count))
        scrubbed = prepare_tasks.scrub_partition.map(unmapped(config), unmapped(ctx), indices)
        masked = prepare_tasks.mask_partition.map(unmapped(config), unmapped(ctx), scrubbed)
        counted = prepare_tasks.statistics_partition.map(unmapped(config), unmapped(ctx), masked,
                                                         unmapped(statistics))
        counted.wait()
        return prepare_tasks.merge(config, ctx, count, wait_for=[counted])
    for i in range(count):  # one partition in memory at a time
        prepare_tasks.statistics_partition(config, ctx, prepare_tasks.mask_partition(
            config, ctx, prepare_tasks.scrub_partition(config, ctx, i)), statistics)
    return prepare_tasks.merge(config, ctx, count)


def prepare(config: SynthesizeConfig, ctx: RunContext, *, statistics: str = "gate") -> dict:
    """Plan the partitions of ``config.data`` and prepare them in the run's work folder (on Dask when the config
    says so). Returns the training batch's public record (random id, file name, schema name)."""
    count = prepare_tasks.plan(config, ctx)
    runner = dask_runner(config.scale, count)
    if runner is None:
        return prepare_partitions.fn(config, ctx, count, statistics, parallel=False)
    return prepare_partitions.with_options(task_runner=runner)(config, ctx, count, statistics)
