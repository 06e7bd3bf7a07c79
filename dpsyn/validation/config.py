"""The gate's settings (pydantic; cheap to import)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ValidationConfig"]


class ValidationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    ks_threshold: float = Field(default=0.15, gt=0, le=1, description="Max KS statistic per numeric column.")
    tvd_threshold: float = Field(default=0.15, gt=0, le=1, description="Max TVD per categorical column.")
    thresholds: dict[str, float] = Field(
        default_factory=dict, description="Per-column overrides (a column's also applies to its pairs; 'a/b': one pair)."
    )
    pair_tvd_threshold: float = Field(
        default=0.3, gt=0, le=1,
        description="Max TVD between real and synthetic joint distributions of a column pair (public encoding); "
        "catches broken associations: a column shuffled against the rest shows 0.3-0.5 against its strongest "
        "partner (Adult: relationship vs marital-status 0.51).",
    )
    pair_weight: float = Field(
        default=1.0, gt=0,
        description="Total squared weight of all pair statistics relative to the one-way ones in the gate's one "
        "Gaussian release (their noise is spread accordingly).",
    )
    sampling_allowance: bool = Field(
        default=True,
        description="Add to each TVD threshold the distance two samples of these sizes from one distribution "
        "typically have, √(k·(1/n_real + 1/n_synth)/(2π)) for k cells, so small tables are not failed for "
        "sampling error alone (public: k, n).",
    )
    utility: bool = Field(
        default=True,
        description="Train-on-synthetic / test-on-holdout AUC against a DP train-on-real model (schemas with a "
        "target, when the run keeps a holdout).",
    )
    holdout_share: float = Field(
        default=0.2, ge=0, lt=1, description="Share of real rows held out from synthesis for the utility check.")
    max_auc_drop: float = Field(default=0.05, ge=0, le=1, description="Largest allowed AUC(TRTR) − AUC(TSTR).")
    reference_share: float = Field(
        default=0.1, gt=0, lt=1, description="ε share (alone) of the DP-SGD train-on-real reference model.")
    utility_positive: str | None = Field(
        default=None, description="Positive target value for AUC; default: the last value of the target's domain.")
    rule_weight: float = Field(
        default=4.0, gt=0,
        description="Weight of each rule statistic in the one release (one-way statistics weigh 1): rules are "
        "judged on rare subpopulations (e.g. pregnancy encounters, <1% of rows) and need the precision.",
    )
    pair_max_cells: int = Field(
        default=400, ge=0, description="Check only pairs whose joint public domain has at most this many cells; 0: no pairs."
    )
    pair_min_rows_per_cell: float = Field(
        default=25, gt=0,
        description="...and at most n_real / this many cells: a pair table with fewer rows per cell cannot be "
        "estimated by anyone (2,000 rows: pairs up to 80 cells).",
    )
    hist_weight: float = Field(
        default=1.0, ge=0,
        description="Weight of each column's real histogram (public encoding) in the gate's one release: the "
        "report plots real (noisy) against synthetic per column; 0: no histograms, no plots of the real side.",
    )
    budget_share: float = Field(default=0.2, gt=0, lt=1, description="Share of the run's ε for the gate.")
    rules: str | None = Field(
        default="auto",
        description="Clinical-logic rules (YAML path or shipped name, see dpsyn/validation/rules.py); 'auto': the "
        "shipped rules named after the schema, if any; null: none.",
    )
    rule_tolerance: float | None = Field(
        default=None, ge=0, le=1, description="Override the rules file's tolerance on violation rates.")
    noise_margin: float | None = Field(
        default=None, ge=0,
        description="Fail a check only if its noisy value exceeds threshold + z × noise std. Default: z = Φ⁻¹(1 − "
        "false_alarm) (1.645) for one-way, rule and utility checks, and the family-wise z = Φ⁻¹(1 − false_alarm / "
        "k) over the k pair checks (k = 900: 4.0), whose number grows with the square of the width. A number here "
        "sets z for every check.",
    )
    false_alarm: float = Field(
        default=0.05, gt=0, lt=1,
        description="Rate of failures caused by DP noise alone: per one-way/rule/utility check, and for all pair "
        "checks together (see noise_margin).")
    audit: bool = Field(
        default=False,
        description="One-run privacy audit inside the run (dpsyn/audit/canaries.py): canaries join the training rows "
        "by secret coin flips; the gate fails if the empirical ε lower bound exceeds the claimed ε. Costs no "
        "budget (post-processing); the canaries slightly perturb the synthetic table.",
    )
    audit_canaries: int = Field(default=1000, ge=20, description="Canaries for the in-run audit.")
