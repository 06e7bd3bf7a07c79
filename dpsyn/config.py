"""Every run configuration (one per flow), shared by the CLI, the Prefect flows and prefect.yaml parameters.

A configuration holds paths and settings only, never data: it is stored by
Prefect as the flow run's parameters and by MLflow as the run's params.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dpsyn.drift import DriftConfig
from dpsyn.masking import MaskConfig
from dpsyn.pii import ScrubConfig
from dpsyn.privacy import PrivacyConfig
from dpsyn.validation import DatasetGateConfig, ValidationConfig
from dpsyn.watermark import WatermarkConfig
from dpsyn.watermark.statistical import DEFAULT_ALPHA

__all__ = [
    "AuditConfig", "BudgetConfig", "DatasetRunConfig", "DriftConfig", "DriftMonitorConfig", "FairnessAuditConfig",
    "MaskConfig",
    "PrivacyConfig", "ScaleConfig", "ScrubConfig", "SynthesizeConfig", "ValidationConfig", "WatermarkConfig",
]


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


class BudgetConfig(BaseModel):
    """The dataset's lifetime privacy budget (dpsyn/privacy/budget): every run reserves its ε before reading data."""

    model_config = ConfigDict(extra="forbid")

    population: str | None = Field(
        default=None, description="The data owner's name for the population (the people) whose budget runs draw on; "
        "default: the schema's `population`, else its name (uncapped runs only). Runs on any table of the same "
        "people must share it; required with lifetime_epsilon.")
    lifetime_epsilon: float | None = Field(
        default=None, gt=0, description="Lifetime cap on the sum of the runs' ε; None: no cap (spend still recorded).")
    ledger_url: str | None = Field(
        default=None, description="sqlite:///PATH or postgresql://... of the budget ledger; default $DPSYN_BUDGET_URL or "
        "$DPSYN_HOME/budget.db.")


class DatasetRunConfig(BaseModel):
    """Everything one ``synthesize-dataset`` run (related tables, dpsyn.relational.run_dataset) needs."""

    model_config = ConfigDict(extra="forbid")

    dataset: str = Field(description="A dataset schema YAML path, or the name of a shipped one (e.g. synthea).")
    data: Path = Field(description="The folder holding the dataset's files. Never modified.")
    out: Path = Field(description="Output folder: one file per table, published atomically if the gate passes.")
    overwrite: bool = Field(default=False, description="Replace a non-empty output folder.")
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    synthesizer_config: dict[str, Any] = Field(default_factory=dict, description="RelationalConfig settings.")
    scrub: ScrubConfig = Field(default_factory=ScrubConfig, description="PII scrubbing of every table's text "
                               "columns that the model reads (dpsyn.relational.prepare).")
    mask: MaskConfig = Field(default_factory=MaskConfig, description="Masking of every table by tier; "
                             "k-anonymity is refused for a dataset.")
    gate: DatasetGateConfig = Field(default_factory=DatasetGateConfig)
    allow_uninformative: bool = Field(
        default=False, description="Publish a dataset too small for the gate to judge at this ε (the manifest says "
        "so); a failing gate still publishes nothing.")
    experiment: str = Field(default="dpsyn-datasets", description="MLflow experiment name.")
    budget: BudgetConfig = Field(default_factory=BudgetConfig, description="Lifetime budget (its population is the "
                                 "dataset schema's).")
    lineage_url: str | None = Field(default=None, description="Lineage ledger URL; default $DPSYN_LINEAGE_URL or "
                                    "$DPSYN_HOME/lineage.db.")

    def run_name(self) -> str:
        """The flow run's and the MLflow run's name: the dataset and ε (public configuration)."""
        return f"dataset-{Path(self.dataset).name.removesuffix('.yaml')}-eps{self.privacy.epsilon:g}"


class SynthesizeConfig(BaseModel):
    """Everything one ``synthesize`` run needs."""

    model_config = ConfigDict(extra="forbid")

    data: Path = Field(description="The sensitive input table (CSV or Parquet). Never modified.")
    table_schema: str = Field(description="A schema YAML path, or the name of a shipped schema.")
    out: Path = Field(description="Output folder; published atomically if the gate passes.")
    overwrite: bool = Field(default=False, description="Replace a non-empty output folder.")
    synthesizer: str = Field(
        default="pgm", description="A registered synthesizer name; the default is the rule of "
        "dpsyn.synth.choose_synthesizer (docs/synthesis.md).")
    synthesizer_config: dict[str, Any] = Field(default_factory=dict)
    privacy: PrivacyConfig = Field(default_factory=PrivacyConfig)
    scrub: ScrubConfig = Field(default_factory=ScrubConfig)
    mask: MaskConfig = Field(default_factory=MaskConfig, description="Masking; k-anonymity is off by default.")
    accept_non_dp_masking: bool = Field(
        default=False, description="Run with mask.k (k-anonymity, a data-dependent recoding with no DP bound) anyway: "
        "the manifest and MLflow then state that the run has no DP guarantee for the input rows.")
    validation: ValidationConfig = Field(default_factory=ValidationConfig)
    n_samples: int | None = Field(default=None, ge=1, description="Synthetic rows; default: as many as real rows.")
    sample_seed: int | None = Field(default=None, description="Seed for sampling from the fitted model.")
    within_bin: Literal["uniform", "shaped"] = Field(
        default="shaped", description="Where a synthetic number lands inside its public bin: 'shaped' (default: a "
        "density that follows the bins' trend, so a wide tail bin stays near its denser edge; post-processing of the "
        "sampled codes, docs/synthesis.md) or 'uniform'.")
    experiment: str = Field(default="dpsyn", description="MLflow experiment name.")
    watermark: WatermarkConfig = Field(default_factory=WatermarkConfig)
    lineage_url: str | None = Field(
        default=None, description="sqlite:///PATH or postgresql://... of the lineage ledger; default $DPSYN_LINEAGE_URL or $DPSYN_HOME/lineage.db."
    )
    batch_window_start: datetime | None = Field(default=None, description="Start of the time window the input covers.")
    batch_window_end: datetime | None = Field(default=None, description="End of the time window the input covers.")
    register_model: bool = Field(default=True, description="Register the fitted model in the MLflow model registry.")
    model_name: str | None = Field(
        default=None, description="Registered model name; default dpsyn-<schema name> (one per dataset)."
    )
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    versioned_output: bool = Field(
        default=False, description="Publish into OUT/v<model version> (OUT/<run id> if not registered) instead of "
        "OUT itself: each model version's data keeps its own location (the drift monitor sets this).")
    scale: ScaleConfig = Field(
        default_factory=ScaleConfig,
        description="Partitions of the input (scrub, mask and the gate's real-side counts run per partition) and "
        "the Dask cluster they run on.")


class DriftMonitorConfig(BaseModel):
    """One ``monitor_drift`` run: compare the newest batch with the champion's training batch, retrain on drift."""

    model_config = ConfigDict(extra="forbid")

    data: Path = Field(description="The newest real batch (CSV or Parquet). Never modified.")
    synthesize: SynthesizeConfig = Field(
        description="Settings of a retraining run; its `data` is replaced by the new batch and it publishes into "
        "versioned folders under its `out`.")
    reference: Path | None = Field(
        default=None, description="The training batch to compare with; default: the one the registered model's "
        "`champion` version was trained on (recorded on its MLflow run). Without a champion the monitor trains "
        "the first model.")
    drift: DriftConfig = Field(default_factory=DriftConfig)
    retrain: bool = Field(default=True, description="Run `synthesize` on the new batch when drift is found.")
    experiment: str = Field(default="dpsyn-drift", description="MLflow experiment of the drift checks.")


class FairnessAuditConfig(BaseModel):
    """One fairness audit: data, group, model, training method, budget, rounds."""

    model_config = ConfigDict(extra="forbid")

    data: Path = Field(description="The sensitive table (CSV or Parquet). Never modified.")
    table_schema: str = Field(description="A schema YAML path, or the name of a shipped schema.")
    group: str = Field(description="Categorical (or binned numeric) column whose values are the groups.")
    test: Path | None = Field(default=None, description="Held-out real rows for utility; default: a seeded split.")
    model: Literal["task", "dpdsyn"] = Field(default="task", description="task: the DP task model; dpdsyn: the synthesizer.")
    method: Literal["dpsgd", "dpsgd-s"] = Field(default="dpsgd", description="dpsgd-s: group-adaptive clipping.")
    compare: bool = Field(default=False, description="Flow and CLI: audit the other method too, side by side.")
    epsilon: float = Field(default=10.0, gt=0)
    delta: float | None = Field(default=None, gt=0, lt=1, description="Default: 1/(10 n) of the training rows (persons).")
    rounds: int = Field(default=20, ge=2, le=10000, description="R: 2R models are trained.")
    rows: int | None = Field(default=2000, ge=20, description="Training rows drawn for the audit (None: all); "
                             "persons, with all their rows, when the schema declares a privacy unit.")
    audit_rows: int | None = Field(default=None, ge=2, description="Rows (persons, under a privacy unit) whose "
                                   "membership is randomised (None: all).")
    holdout_share: float = Field(default=0.2, gt=0, lt=1)
    positive: str | None = Field(default=None, description="Target value scored as positive (default: the last).")
    min_group_rows: int = Field(default=10, ge=1, description="Smaller groups are reported but left out of Δ.")
    seed: int = 0
    accountant: Literal["prv", "rdp"] = Field(default="prv", description="Opacus accountant of every audited model.")
    secure_rng: bool = Field(default=False, description="CSPRNG noise (slower); the audit's models are never released.")
    # the task model (a DP logistic regression over the public one-hot encoding, as in dpdsyn)
    threads: int = Field(default=1, ge=1, description="torch threads (small models run fastest on one).")
    epochs: int = Field(default=20, ge=1)
    batch_size: int = Field(default=128, ge=8, description="Expected rows per step (persons, under a privacy unit).")
    lr: float = Field(default=0.05, gt=0)
    max_grad_norm: float = Field(default=1.0, gt=0)
    group_clip: dict[str, Any] = Field(default_factory=dict, description="GroupClipConfig settings other than column.")
    synthesizer_config: dict[str, Any] = Field(default_factory=dict, description="dpdsyn settings (model dpdsyn).")
    experiment: str = Field(default="dpsyn-fairness", description="MLflow experiment (flow only).")
    population: str | None = Field(
        default=None, description="The population the rows belong to (default: the schema's `population`, else its "
        "name): the flow records the audit's non-DP read in its budget ledger.")
    ledger_url: str | None = Field(default=None, description="Budget ledger (default $DPSYN_BUDGET_URL).")

    @field_validator("group_clip")
    @classmethod
    def _valid_group_clip(cls, v: dict[str, Any]) -> dict[str, Any]:
        from pydantic import ValidationError

        from dpsyn.synth.group_clip import GroupClipConfig

        try:  # unknown keys and bad values fail here, before any model is trained
            GroupClipConfig(column="_", **v)
        except ValidationError as e:
            raise ValueError("; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors())) from None
        return v


class AuditConfig(BaseModel):
    """The ``audit`` flow's one parameter: which files to check, against which ledger."""

    model_config = ConfigDict(extra="forbid")

    paths: list[Path] = Field(min_length=1, description="Synthetic files (CSV or Parquet) to verify.")
    table_schema: str | None = Field(default=None, description="Schema name or YAML path for the statistical test.")
    ledger_url: str | None = Field(default=None, description="sqlite:///PATH or postgresql://... of the lineage ledger.")
    alpha: float = Field(default=DEFAULT_ALPHA, gt=0, lt=1, description="Significance level of the statistical test.")
    key_block: str | None = Field(default=None, description="A Prefect Secret block holding an extra key (hex).")
    fail_if_not_ours: bool = Field(default=False, description="Fail the flow run when a file carries no mark of ours.")
