"""Run configurations, shared by the CLI, the Prefect flows and prefect.yaml parameters.

A configuration holds paths and settings only, never data: it is stored by
Prefect as the flow run's parameters and by MLflow as the run's params.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dpsyn.drift import DriftConfig
from dpsyn.masking import MaskConfig
from dpsyn.pii import ScrubConfig
from dpsyn.privacy import PrivacyConfig
from dpsyn.scale.config import ScaleConfig
from dpsyn.validation import ValidationConfig
from dpsyn.watermark import WatermarkConfig

__all__ = [
    "BudgetConfig", "DriftConfig", "DriftMonitorConfig", "MaskConfig", "PrivacyConfig", "ScaleConfig", "ScrubConfig",
    "SynthesizeConfig", "ValidationConfig", "WatermarkConfig",
]


class BudgetConfig(BaseModel):
    """The dataset's lifetime privacy budget (dpsyn/budget): every run reserves its ε before reading data."""

    model_config = ConfigDict(extra="forbid")

    population: str | None = Field(
        default=None, description="The data owner's name for the population (the people) whose budget runs draw on; "
        "default: the schema's `population`, else its name (uncapped runs only). Runs on any table of the same "
        "people must share it; required with lifetime_epsilon.")
    lifetime_epsilon: float | None = Field(
        default=None, gt=0, description="Lifetime cap on the sum of the runs' ε; None: no cap (spend still recorded).")
    ledger_url: str | None = Field(
        default=None, description="sqlite:///PATH of the budget ledger; default $DPSYN_BUDGET_URL or "
        "$DPSYN_HOME/budget.db.")


class SynthesizeConfig(BaseModel):
    """Everything one ``synthesize`` run needs."""

    model_config = ConfigDict(extra="forbid")

    data: Path = Field(description="The sensitive input table (CSV or Parquet). Never modified.")
    table_schema: str = Field(description="A schema YAML path, or the name of a shipped schema.")
    out: Path = Field(description="Output folder; published atomically if the gate passes.")
    overwrite: bool = Field(default=False, description="Replace a non-empty output folder.")
    synthesizer: str = Field(default="dpgen", description="A registered synthesizer name.")
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
    experiment: str = Field(default="dpsyn", description="MLflow experiment name.")
    watermark: WatermarkConfig = Field(default_factory=WatermarkConfig)
    lineage_url: str | None = Field(
        default=None, description="sqlite:///PATH of the lineage ledger; default $DPSYN_LINEAGE_URL or $DPSYN_HOME/lineage.db."
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
