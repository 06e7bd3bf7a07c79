"""Configuration of partitioned runs (cheap to import: pydantic only)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["Partition", "ScaleConfig"]


class ScaleConfig(BaseModel):
    """How a run splits its input and where the partitions' tasks run."""

    model_config = ConfigDict(extra="forbid")

    partition_rows: int = Field(
        default=100_000, ge=0,
        description="Rows per partition (Parquet: whole row groups up to about this many rows); 0: the whole "
        "table is one partition. Peak memory of the scrub, mask and gate-statistics stages grows with this.")
    dask: bool | None = Field(
        default=None,
        description="Run the partitions' tasks on Dask (prefect-dask's DaskTaskRunner). None: only when the input "
        "has more than one partition; false: never (Prefect's default thread-pool runner).")
    dask_address: str | None = Field(
        default=None,
        description="Address of a running Dask scheduler (e.g. tcp://scheduler:8786); None: a temporary "
        "LocalCluster for the run.")
    n_workers: int = Field(default=1, ge=1, le=256, description="Workers of the temporary LocalCluster.")
    threads_per_worker: int = Field(default=1, ge=1, le=64, description="Threads per LocalCluster worker.")
    processes: bool = Field(
        default=False,
        description="LocalCluster workers as processes. Each worker process then talks to the Prefect API itself: "
        "set PREFECT_API_URL to a running Prefect server, or every worker starts a temporary one (slow). "
        "CPU parallelism of PII scrubbing comes from its own worker processes (ScrubConfig.n_process) either way.")
    memory_limit: str | None = Field(
        default=None, description="Memory limit per LocalCluster worker (Dask syntax, e.g. '2GiB'); None: Dask's default.")

    def cluster_kwargs(self) -> dict:
        """Keyword arguments of the temporary ``distributed.LocalCluster``."""
        # the scheduler's HTTP server (health, dashboard) on a free port of this host only
        kw = {"n_workers": self.n_workers, "threads_per_worker": self.threads_per_worker,
              "processes": self.processes, "dashboard_address": "127.0.0.1:0"}
        if self.memory_limit is not None:
            kw["memory_limit"] = self.memory_limit
        return kw


class Partition(BaseModel):
    """Where one partition lies in the input file: byte ranges or row groups, never values."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=0)
    count: int = Field(ge=1, description="Partitions of the table.")
    format: str  # "csv", "parquet" or "whole"
    rows: int = Field(default=0, ge=0, description="Data records in this partition (Parquet: exact; CSV: records).")
    start: int = 0  # csv: byte range of the partition's records
    end: int = 0
    first_line: int = 1  # csv: line number of the first record
    header_end: int = 0  # csv: bytes of the header part (leading comment lines and the header line)
    header_lines: int = 0
    row_groups: list[int] = Field(default_factory=list)  # parquet
