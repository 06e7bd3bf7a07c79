"""The gate's settings (pydantic; cheap to import)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DatasetGateConfig", "ValidationConfig"]


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
    pair_max_cells: int = Field(
        default=400, ge=0, description="Check only pairs whose joint public domain has at most this many cells; 0: no pairs."
    )
    pair_min_rows_per_cell: float = Field(
        default=25, gt=0,
        description="...and at most n_real / this many cells: a pair table with fewer rows per cell cannot be "
        "estimated by anyone (2,000 rows: pairs up to 80 cells).",
    )
    hist_weight: float = Field(
        default=0.125, ge=0,
        description="Total squared weight of the columns' real histograms (public encoding) in the gate's one "
        "release: the report plots real (noisy) against synthetic per column; 0: no histograms, no plots.",
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
        description="Fail a check only if its noisy value exceeds threshold + z × noise std. Default: one z for the "
        "whole family of informative checks, z = Φ⁻¹(1 − false_alarm / k) over its k checks (Bonferroni), so a "
        "table that meets every threshold passes with probability ≥ 1 − false_alarm whatever its width. A number "
        "here sets z for every check.",
    )
    false_alarm: float = Field(
        default=0.05, gt=0, lt=1, description="Rate of gate failures caused by DP noise alone, over all checks.")
    target_pair_threshold: float = Field(
        default=0.07, gt=0, le=1,
        description="Max pair TVD (beyond the sampling allowance) of a pair with the target: the target's "
        "associations are what a task-oriented table is for (a target shuffled against the rest: 0.12-0.15 on "
        "Adult at 2,000 rows; pgm's output at ε = 1 on 3,200 Adult rows: at most 0.05).")
    target_tvd_threshold: float = Field(
        default=0.05, gt=0, le=1,
        description="Max TVD (or KS) of the target column: the column the synthetic table is for is held tighter "
        "than the others (a 7 %-positive target turned constant is a 0.07 TVD).")
    tail_threshold: float = Field(
        default=0.05, gt=0, le=1,
        description="Max share of real rows in the numeric bins the synthetic table leaves empty, per numeric "
        "column (the worst column is released): an empty tail fails even when KS is small.")
    constant_share: float = Field(
        default=0.99, gt=0.5, le=1,
        description="A synthetic column whose most common cell holds at least this share of rows is near-constant.")
    constant_threshold: float = Field(
        default=0.02, gt=0, le=1,
        description="Max share of real rows outside a near-constant synthetic column's cell (the worst column "
        "is released): a column the real rows spread over must not come out constant.")
    target_signal_alpha: float | None = Field(
        default=0.01, gt=0, lt=1,
        description="The synthetic target must be associated with the other columns: a permutation test on the "
        "synthetic table alone (no ε; the mean over columns of the TVD between their joint with the target and "
        "the product of the two marginals) must reject independence at this level. A target shuffled against "
        "the rest, or constant, fails it (one that the real side is too noisy to tell, e.g. diabetes130's at "
        "2,000 rows). None turns it off (a target that is truly unrelated to every column).")
    target_signal_permutations: int = Field(default=199, ge=19, description="Permutations of that test.")
    target_signal_rows: int = Field(
        default=20_000, ge=100, description="That test reads at most this many synthetic rows (a fixed subset).")
    max_noise_ratio: float = Field(
        default=1.0, gt=0,
        description="A check is informative when its noise margin (z × noise std) is at most this × its threshold; "
        "otherwise it is reported 'uninformative' and never counted as a pass.")
    verdict_resolution: float = Field(
        default=0.03, gt=0, le=1,
        description="The verdict rests on one statistic, the worst excess of any check over its threshold; it is "
        "informative when its noise margin is at most max_noise_ratio × this. Otherwise the verdict is "
        "'uninformative' and nothing is published (see allow_uninformative).")
    allow_uninformative: bool = Field(
        default=False,
        description="Publish when the gate is uninformative (too few rows for its ε): the manifest then says "
        "gate 'uninformative' instead of 'passed'.")
    primary_weight: float = Field(
        default=1.0, gt=0, description="Weight of the verdict statistic (gate:worst) in the gate's one release.")
    detail_weight: float = Field(
        default=0.25, ge=0,
        description="Total squared weight of the diagnosis (which family, which column): half to the target, the "
        "families' worst excesses and the soft rules, half to the per-column, per-pair, tail and constant checks; "
        "each judges too once informative (large tables).",
    )
    utility_margin: float = Field(
        default=0.05, gt=0, lt=0.5,
        description="The synthetic-trained model's AUC on held-out real rows must exceed 0.5 + this margin.")
    utility_min_positives: float = Field(
        default=30, gt=0,
        description="Fewer (noisy) minority-class rows in the holdout than this: the utility checks are "
        "uninformative (an AUC on a handful of positives says nothing).")
    audit: bool = Field(
        default=False,
        description="One-run privacy audit inside the run (dpsyn/audit/canaries.py): canaries join the training rows "
        "by secret coin flips; the gate fails if the empirical ε lower bound exceeds the claimed ε. Costs no "
        "budget (post-processing); the canaries slightly perturb the synthetic table.",
    )
    audit_canaries: int = Field(default=1000, ge=20, description="Canaries for the in-run audit.")


class DatasetGateConfig(BaseModel):
    """Public settings of the gate across tables."""

    model_config = ConfigDict(extra="forbid")
    share: float = Field(default=0.15, gt=0, lt=0.5, description="Share of the run's budget (of 1/σ²) for the gate.")
    max_rows_per_person: int = Field(
        default=10, ge=1, le=1000,
        description="Rows per person of a child table the gate compares (both sides bounded alike): a person "
        "moves a child table's statistics by at most this many rows.")
    validation: ValidationConfig = Field(
        default_factory=lambda: ValidationConfig(utility=False),
        description="The single-table gate's settings, applied to every component (no utility check: the "
        "components have no holdout). Its false_alarm is split over the components.")
