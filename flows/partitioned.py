"""The partitioned part of a run: scrub, mask and count the real rows one partition at a time, on Dask.

``prepare`` plans the input's partitions and runs the subflow
``prepare-partitions`` on prefect-dask's ``DaskTaskRunner`` (a temporary
LocalCluster, or the scheduler at ``scale.dask_address``) when the input has
more than one partition (``scale.dask`` forces it on or off); without Dask the
same tasks run in the calling flow, one partition after another. Either way the
work folder ends up with the masked table, its holdout and the merged exact
real-side counts (tasks/scale.py), as an unpartitioned run would.
"""

from __future__ import annotations

from prefect import flow, unmapped

from dpsyn.config import SynthesizeConfig
from dpsyn.scale import Partition, ScaleConfig
from tasks import scale as scale_tasks


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
def prepare_partitions(config: SynthesizeConfig, work: str, parts: list[Partition], statistics: str,
                       parallel: bool = True) -> dict:
    """Scrub → mask → exact counts, per partition (``statistics``: "gate" or "drift"), then merge."""
    if parallel:
        scrubbed = scale_tasks.scrub_partition.map(unmapped(config), unmapped(work), parts)
        masked = scale_tasks.mask_partition.map(unmapped(config), unmapped(work), parts, scrubbed)
        counted = scale_tasks.statistics_partition.map(unmapped(config), unmapped(work), parts, masked,
                                                       unmapped(statistics))
        return scale_tasks.merge(config, work, scrubbed.result(), masked.result(), counted.result())
    scrubbed, masked, counted = [], [], []
    for part in parts:  # one partition in memory at a time
        scrubbed.append(scale_tasks.scrub_partition(config, work, part))
        masked.append(scale_tasks.mask_partition(config, work, part, scrubbed[-1]))
        counted.append(scale_tasks.statistics_partition(config, work, part, masked[-1], statistics))
    return scale_tasks.merge(config, work, scrubbed, masked, counted)


def prepare(config: SynthesizeConfig, work: str, *, statistics: str = "gate") -> dict:
    """Plan the partitions of ``config.data`` and prepare them in ``work`` (on Dask when the config says so).

    Returns the training batch's public record (random id, file name, schema name); its exact counts and the
    scrub and mask reports stay in ``work`` (tasks/scale.py ``merge``).
    """
    parts = scale_tasks.plan(config)
    runner = dask_runner(config.scale, len(parts))
    if runner is None:
        return prepare_partitions.fn(config, work, parts, statistics, parallel=False)
    return prepare_partitions.with_options(task_runner=runner)(config, work, parts, statistics)
