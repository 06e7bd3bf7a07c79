"""The validation gate: fidelity checks whose real-data side is itself DP.

Per column, a distance between the real and the synthetic distribution:

* numeric and datetime: the two-sample Kolmogorov-Smirnov statistic (the
  statistic, not its p-value: at these sizes any p-value rejects);
* categorical: total variation distance over the public domain.

Missing values count as one more value (after all numbers for KS, one more
category for TVD), so every statistic is over all n real rows.

The statistics read private rows, so they are released with the Gaussian
mechanism and charged to the run's accountant: adding or removing one real
row moves each statistic by at most 1/(n−1), so the vector of k statistics
has L2 sensitivity √k/(n−1), and each gets N(0, (σ√k/(n−1))²) noise. The
gate compares the *noisy* statistics with the thresholds; only noisy values
are ever stored or logged (docs/privacy.md).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from scipy.stats import norm as _norm

from dpsyn.errors import GateFailedError, InputError
from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant
from dpsyn.schema import ColumnKind, TableSchema
from dpsyn.validation.stats import RealStatistics, ks_from_counts, real_statistics

__all__ = ["CheckResult", "ColumnHistogram", "RealStatistics", "ValidationConfig", "ValidationReport",
           "fidelity_statistics", "gate_rules", "real_statistics_for", "validate", "validate_files"]

logger = logging.getLogger(__name__)

VALIDATION_LABEL = "validation.fidelity"


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


class CheckResult(BaseModel):
    name: str
    column: str
    statistic: str
    value: float  # noisy (DP) value
    threshold: float
    limit: float = 0.0  # threshold + noise margin: the value the noisy statistic is compared with
    noise_std: float = 0.0  # std of the DP noise on this statistic (on the real side for rules)
    passed: bool


class ColumnHistogram(BaseModel):
    """One column over its public encoding: the real side as released (noisy shares), the synthetic side exact."""

    column: str
    labels: list[str]  # public: the schema's categories or bins
    real: list[float]  # DP: noisy shares of the real rows (may be < 0 or not sum to 1)
    synthetic: list[float]
    noise_std: float


class ValidationReport(BaseModel):
    """Every check of the gate, with its verdict. Holds DP statistics only, never values."""

    checks: list[CheckResult] = Field(default_factory=list)
    histograms: list[ColumnHistogram] = Field(default_factory=list)
    audit: dict | None = None  # the in-run one-run audit's result (AuditResult), if enabled
    noise_std: float = 0.0  # noise std of a one-way statistic (pairs: see each check's noise_std)
    utility: dict | None = None  # noisy AUCs of TSTR and the DP TRTR model on the holdout
    n_real: int = 0
    n_synthetic: int = 0
    noise_margin: float = 0.0  # z of the one-way, rule and utility checks' limits
    pair_noise_margin: float = 0.0  # z of the pair checks' limits (family-wise over the pairs by default)

    def is_valid(self) -> bool:
        return all(c.passed for c in self.checks)

    def failures(self) -> list[CheckResult]:
        return [c for c in self.checks if not c.passed]

    def raise_if_failed(self) -> None:
        bad = self.failures()
        if bad:
            names = [f"{c.name} ({c.value:.3f} > {c.limit:.3f})" for c in bad]
            raise GateFailedError(
                f"validation gate failed {len(bad)} of {len(self.checks)} checks: {', '.join(names)}; nothing was published",
                failures=[c.name for c in bad],
            )

    def add_audit(self, result, *, claimed_epsilon: float) -> CheckResult:
        """Add the one-run audit as a check: it fails when the empirical ε lower bound exceeds the claim."""
        self.audit = result.model_dump()
        check = CheckResult(name="audit:epsilon_lower_bound", column="", statistic="epsilon_lower_bound",
                            value=float(result.epsilon_lower_bound), threshold=float(claimed_epsilon),
                            limit=float(claimed_epsilon), passed=result.epsilon_lower_bound <= claimed_epsilon)
        self.checks.append(check)
        return check

    def to_html(self, *, title: str = "dpsyn validation report", context: dict | None = None) -> str:
        """A self-contained HTML page: verdict, failed checks, per-column plots (dpsyn/validation/html.py)."""
        from dpsyn.validation.html import render_html

        return render_html(self, title=title, context=context)

    def metrics(self) -> dict[str, float]:
        m = {f"{c.statistic}.{c.column}": c.value for c in self.checks}
        if self.utility:
            m["utility_auc_tstr"] = self.utility["auc_tstr"]
            m["utility_auc_trtr"] = self.utility["auc_trtr"]
        m["gate_passed"] = float(self.is_valid())
        m["gate_failed_checks"] = float(len(self.failures()))
        return m


def _ks(real: np.ndarray, synth: np.ndarray) -> float:
    """Two-sample KS statistic sup_t |F_r(t) - F_s(t)|."""
    real, synth = np.sort(real), np.sort(synth)
    grid = np.concatenate([real, synth])
    fr = np.searchsorted(real, grid, side="right") / max(len(real), 1)
    fs = np.searchsorted(synth, grid, side="right") / max(len(synth), 1)
    return float(np.max(np.abs(fr - fs))) if len(grid) else 0.0


def _tvd(real: pd.Series, synth: pd.Series, categories: list[str]) -> float:
    cats = list(categories) + ["\x00<missing>"]
    pr = real.astype("string").fillna(cats[-1]).value_counts(normalize=True).reindex(cats, fill_value=0.0)
    ps = synth.astype("string").fillna(cats[-1]).value_counts(normalize=True).reindex(cats, fill_value=0.0)
    return float(0.5 * np.abs(pr.to_numpy() - ps.to_numpy()).sum())


def _numeric(s: pd.Series, col) -> np.ndarray:
    lo, hi = col.numeric_bounds()
    if col.kind == ColumnKind.datetime:
        x = ((pd.to_datetime(s, errors="coerce") - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)).to_numpy(
            dtype=np.float64, na_value=np.nan
        )
    else:
        x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    x = np.clip(x, lo, hi)  # public bounds, as the synthesizer sees them
    return np.where(np.isnan(x), hi + 1.0, x)  # missing sorts after every number


def pair_statistics(real: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema, *,
                    max_cells: int) -> list[tuple[str, str, float]]:
    """("a/b", "tvd2", exact value): TVD of each small column pair's joint distribution over the public encoding.

    Like a one-way TVD, adding or removing a real row moves it by at most 1/(n−1).
    """
    from dpsyn.encoding import DiscreteEncoder

    if max_cells <= 0:
        return []
    names = [c.name for c in schema.synthesizable_columns() if c.name in real.columns and c.name in synth.columns]
    enc = DiscreteEncoder(schema, columns=names)
    a, b = enc.encode(real[enc.names]), enc.encode(synth[enc.names])
    out = []
    for i in range(len(enc.sizes)):
        for j in range(i + 1, len(enc.sizes)):
            cells = enc.sizes[i] * enc.sizes[j]
            if cells > max_cells:
                continue
            ia = a[:, i] * enc.sizes[j] + a[:, j]
            ib = b[:, i] * enc.sizes[j] + b[:, j]
            pa = np.bincount(ia, minlength=cells) / max(len(a), 1)
            pb = np.bincount(ib, minlength=cells) / max(len(b), 1)
            out.append((f"{enc.names[i]}/{enc.names[j]}", "tvd2", float(0.5 * np.abs(pa - pb).sum())))
    return out


def fidelity_statistics(real: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema) -> list[tuple[str, str, float]]:
    """(column, statistic, exact value) for each modelled column. Exact values are private: noise them."""
    out = []
    for col in schema.synthesizable_columns():
        if col.name not in real.columns or col.name not in synth.columns:
            continue
        if col.kind == ColumnKind.categorical:
            out.append((col.name, "tvd", _tvd(real[col.name], synth[col.name], col.domain or [])))
        else:
            out.append((col.name, "ks", _ks(_numeric(real[col.name], col), _numeric(synth[col.name], col))))
    return out


def column_histograms(real: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema):
    """(encoded column, real shares, synthetic shares) per modelled column over the public encoding.

    The real shares are private (noise them): adding or removing one real row moves the share vector by at
    most √2/(n−1) in L2.
    """
    from dpsyn.encoding import DiscreteEncoder

    names = [c.name for c in schema.synthesizable_columns() if c.name in real.columns and c.name in synth.columns]
    enc = DiscreteEncoder(schema, columns=names)
    a, b = enc.encode(real[enc.names]), enc.encode(synth[enc.names])
    return [(c, np.bincount(a[:, j], minlength=c.size) / max(len(a), 1),
             np.bincount(b[:, j], minlength=c.size) / max(len(b), 1)) for j, c in enumerate(enc.columns)]


def _cells(schema: TableSchema) -> dict[str, int]:
    """Cells of each column's public encoding (categorical: domain + missing), for the sampling allowance."""
    from dpsyn.encoding import DiscreteEncoder

    enc = DiscreteEncoder(schema)
    out = dict(zip(enc.names, enc.sizes, strict=True))
    for c in schema.synthesizable_columns():
        if c.kind == ColumnKind.categorical:
            out[c.name] = len(c.domain or []) + 1
    return out


def gate_rules(config: ValidationConfig, schema: TableSchema):
    """The rules the gate applies (None if none)."""
    from dpsyn.validation.rules import _SHIPPED, load_rules

    if config.rules is None or config.rules == "none":
        return None
    if config.rules == "auto":
        if not (_SHIPPED / f"{schema.name}.yaml").exists():
            return None
        return load_rules(schema.name)
    return load_rules(config.rules)


def _utility_statistics(real, synth, holdout, schema, config, accountant, noise, counts) -> dict | None:
    """Exact U shares of TSTR and the DP reference on the holdout, and its positive share (private: noised later).

    Whether the check runs is decided from public facts and the released counts, never from ``len(holdout)``."""
    if not config.utility or holdout is None or schema.target is None or "holdout" not in counts.values \
            or counts.lower_bound("holdout") < 2:
        return None
    from dpsyn.validation.utility import (
        REFERENCE_LABEL,
        mann_whitney_u,
        plan_reference,
        positive_label,
        train_reference,
        tstr_scores_on,
    )

    n_train = counts.estimate("train")
    planned = {m.label: m for m in accountant.planned}
    sigma_ref = planned[REFERENCE_LABEL].noise_multiplier if REFERENCE_LABEL in planned else \
        plan_reference(accountant, config.reference_share, n_train)
    positive = positive_label(schema, config.utility_positive)
    scorer = train_reference(real, schema, accountant=accountant, noise=noise, sigma=sigma_ref, public_rows=n_train)
    y = (holdout[schema.target].astype("string") == positive).to_numpy(dtype=bool, na_value=False)
    h = max(len(holdout), 1)
    s_tstr = tstr_scores_on(synth, holdout, schema, positive=positive)
    s_trtr = scorer(holdout)
    return {"positive": positive,
            "values": [mann_whitney_u(s_tstr, y) / h**2, mann_whitney_u(s_trtr, y) / h**2, float(y.sum()) / h]}


def real_statistics_for(real: pd.DataFrame, schema: TableSchema, config: ValidationConfig) -> RealStatistics:
    """The exact counts the gate reads from ``real`` (private): :func:`dpsyn.validation.stats.real_statistics`
    with the gate's pair limit and rules. Counts of disjoint partitions merge into those of the whole table."""
    return real_statistics(real, schema, pair_max_cells=config.pair_max_cells, rules=gate_rules(config, schema))


def _modelled(stats: RealStatistics, synth: pd.DataFrame, schema: TableSchema) -> list:
    return [c for c in schema.synthesizable_columns() if c.name in stats.hist and c.name in synth.columns]


def _fidelity_from_counts(stats: RealStatistics, synth: pd.DataFrame,
                          schema: TableSchema) -> list[tuple[str, str, float]]:
    """As :func:`fidelity_statistics`, with the real side given by its counts (same values, bit for bit)."""
    out = []
    n = max(stats.n, 1)
    for col in _modelled(stats, synth, schema):
        if col.kind == ColumnKind.categorical:
            cats = list(col.domain or []) + ["\x00<missing>"]
            pr = stats.counts[col.name] / n
            ps = synth[col.name].astype("string").fillna(cats[-1]).value_counts(normalize=True).reindex(
                cats, fill_value=0.0).to_numpy()
            out.append((col.name, "tvd", float(0.5 * np.abs(pr - ps).sum())))
        else:
            v, c = stats.values[col.name]
            out.append((col.name, "ks", ks_from_counts(v, c, _numeric(synth[col.name], col))))
    return out


def _pairs_from_counts(stats: RealStatistics, synth: pd.DataFrame, schema: TableSchema, *,
                       max_cells: int) -> list[tuple[str, str, float]]:
    """As :func:`pair_statistics`, with the real side given by its counts."""
    from dpsyn.encoding import DiscreteEncoder

    if max_cells <= 0:
        return []
    enc = DiscreteEncoder(schema, columns=[c.name for c in _modelled(stats, synth, schema)])
    b = enc.encode(synth[enc.names])
    out = []
    for i in range(len(enc.sizes)):
        for j in range(i + 1, len(enc.sizes)):
            cells = enc.sizes[i] * enc.sizes[j]
            if cells > max_cells:
                continue
            key = f"{enc.names[i]}/{enc.names[j]}"
            pa = stats.pairs[key] / max(stats.n, 1)
            pb = np.bincount(b[:, i] * enc.sizes[j] + b[:, j], minlength=cells) / max(len(b), 1)
            out.append((key, "tvd2", float(0.5 * np.abs(pa - pb).sum())))
    return out


def _histograms_from_counts(stats: RealStatistics, synth: pd.DataFrame, schema: TableSchema):
    """As :func:`column_histograms`, with the real side given by its counts."""
    from dpsyn.encoding import DiscreteEncoder

    enc = DiscreteEncoder(schema, columns=[c.name for c in _modelled(stats, synth, schema)])
    b = enc.encode(synth[enc.names])
    return [(c, stats.hist[c.name] / max(stats.n, 1), np.bincount(b[:, j], minlength=c.size) / max(len(b), 1))
            for j, c in enumerate(enc.columns)]


def plan_validation(accountant: PrivacyAccountant, config: ValidationConfig, *,
                    n_train: int | None = None) -> float:
    """Reserve the gate's budget before synthesis: its release and, given ``n_train`` (rows the reference
    model trains on: the utility check is on), the DP-SGD reference model. Returns the release's σ."""
    sigma = accountant.sigma_for_share(config.budget_share)
    accountant.plan(VALIDATION_LABEL, noise_multiplier=sigma)
    if n_train:
        from dpsyn.validation.utility import plan_reference

        plan_reference(accountant, config.reference_share, n_train)
    return sigma


def validate(
    real: pd.DataFrame | None,
    synth: pd.DataFrame,
    schema: TableSchema,
    config: ValidationConfig | None = None,
    *,
    accountant: PrivacyAccountant,
    noise: NoiseSource,
    holdout: pd.DataFrame | None = None,
    real_stats: RealStatistics | None = None,
    counts: NoisyCounts,
) -> ValidationReport:
    """Run the gate; charges the accountant for reading ``real`` (and ``holdout``, rows the synthesizer never saw,
    which enable the utility check).

    ``counts`` is the run's released noisy row counts (groups ``train``, and ``holdout`` with a holdout), with
    lower bounds: every sensitivity and every size the report shows comes from them, never from the exact counts.

    Every real-side statistic is computed from exact counts (:func:`real_statistics_for`). ``real_stats``
    gives those counts computed beforehand, e.g. merged from a partitioned read; ``real`` is then read only
    by the utility check (it may be None when there is no holdout). The noise is added once, to the
    statistics of the merged counts, so a partitioned gate releases exactly what an unpartitioned one would.
    """
    config = config or ValidationConfig()
    planned = {m.label: m for m in accountant.planned}
    sigma = planned[VALIDATION_LABEL].noise_multiplier if VALIDATION_LABEL in planned else None
    if sigma is None:
        sigma = plan_validation(accountant, config)
    rules = gate_rules(config, schema)
    if real_stats is None:
        if real is None:
            raise ValueError("validate needs the real rows or their statistics")
        real_stats = real_statistics_for(real, schema, config)
    n = counts.estimate("train")  # public (DP): sizes shown and size-dependent settings
    n_low = counts.lower_bound("train")  # ≤ n_true − 1 except with the δ tail reserved for it
    if n_low < 1:
        raise InputError(
            "the table is too small for the validation gate at this ε: its noisy row count cannot bound the "
            "gate's sensitivity; use more rows or a larger ε")
    max_cells = min(config.pair_max_cells, int(n / config.pair_min_rows_per_cell))
    stats = _fidelity_from_counts(real_stats, synth, schema) + _pairs_from_counts(real_stats, synth, schema,
                                                                                  max_cells=max_cells)
    rule_real, rule_synth, conditional = {}, {}, set()
    if rules is not None:
        from dpsyn.validation.rules import conditional_checks, rule_counts

        conditional = conditional_checks(rules)
        rule_synth_counts = rule_counts(synth, rules, schema)
        if set(real_stats.rules) != set(rule_synth_counts):
            raise ValueError("the real statistics were computed with other rules than the gate's")
        for check, (v, m) in real_stats.rules.items():
            rule_real[check] = v / max(real_stats.n, 1)  # released (noised below): violation rate
            if check in conditional:
                rule_real[check + "#applies"] = m / max(real_stats.n, 1)  # released: share the rule applies to
        rule_counts_synth = rule_synth_counts
        for check, (v, m) in rule_counts_synth.items():
            rule_synth[check] = (v / m if m else 0.0) if check in conditional else v / max(len(synth), 1)
    util = _utility_statistics(real, synth, holdout, schema, config, accountant, noise, counts)
    # One Gaussian release of the weighted vector (w_i · stat_i): each statistic moves by ≤ 1/(n−1), so the
    # L2 sensitivity is √(Σ w_i²)/(n−1) and statistic i gets noise std σ·√(Σ w²)/(n−1)/w_i. Pairs share
    # `pair_weight` times the one-way statistics' total squared weight, so many pairs cannot drown the rest.
    n_pairs = sum(1 for _, st, _ in stats if st == "tvd2")
    n_single = max(len(stats) - n_pairs, 1)
    w_pair = math.sqrt(config.pair_weight * n_single / n_pairs) if n_pairs else 1.0
    # each column's histogram (shares over its public cells) moves by ≤ √2/(n−1) in L2: weight² counts twice
    hists = _histograms_from_counts(real_stats, synth, schema) if config.hist_weight > 0 else []
    h_cells = sum(len(r) for _, r, _ in hists)
    w = np.array([w_pair if st == "tvd2" else 1.0 for _, st, _ in stats] + [config.rule_weight] * len(rule_real)
                 + [config.hist_weight] * h_cells)
    sum_w2 = float(np.sum(w[: len(w) - h_cells] ** 2)) + 2 * config.hist_weight**2 * len(hists)
    # each statistic moves by ≤ 1/(n − 1) ≤ 1/n_low: the bound uses the noisy count's lower bound, never n
    delta_t = math.sqrt(sum_w2 or 1.0) / n_low
    # holdout statistics move by ≤ 1/|H| ≤ 1/h_low each; T and H are disjoint (secret coins): a row changes one
    delta_h = math.sqrt(len(util["values"])) / counts.lower_bound("holdout") if util else 0.0
    base = sigma * max(delta_t, delta_h)
    stds = np.concatenate([base / w, np.full(len(util["values"]) if util else 0, base)])
    exact = np.array([v for _, _, v in stats] + list(rule_real.values())
                     + [x for _, r, _ in hists for x in r] + (util["values"] if util else []))
    noisy_all = exact + noise.normal_numpy(len(exact), 1.0) * stds
    k_r = len(stats) + len(rule_real)
    k_t = k_r + h_cells
    noisy, noisy_rules = noisy_all[: len(stats)], noisy_all[len(stats):k_r]
    std_stats, std_rules = stds[: len(stats)], stds[len(stats):k_r]
    std = base
    accountant.record(VALIDATION_LABEL, noise_multiplier=sigma, sample_rate=1.0, steps=1)
    # margins: per check for the few one-way, rule and utility checks; family-wise (Bonferroni) over the many
    # noisy pair checks, whose count grows with the square of the width
    n_pair_checks = sum(1 for _, st, _ in stats if st == "tvd2")
    z = config.noise_margin if config.noise_margin is not None else float(_norm.ppf(1 - config.false_alarm))
    z_pair = config.noise_margin if config.noise_margin is not None else \
        float(_norm.ppf(1 - config.false_alarm / max(n_pair_checks, 1)))
    report = ValidationReport(noise_std=std, n_real=n, n_synthetic=len(synth), noise_margin=z,
                              pair_noise_margin=z_pair)
    i = k_r
    for col, r, sy in hists:
        report.histograms.append(ColumnHistogram(
            column=col.name, labels=list(col.labels), real=[float(x) for x in noisy_all[i:i + len(r)]],
            synthetic=[float(x) for x in sy], noise_std=float(stds[i])))
        i += len(r)
    cells = _cells(schema)
    for (column, stat, _), value, sd in zip(stats, noisy, std_stats, strict=True):
        default = {"tvd": config.tvd_threshold, "tvd2": config.pair_tvd_threshold}.get(stat, config.ks_threshold)
        if stat == "tvd2":  # a loosened column loosens its pairs too, unless the pair has its own threshold
            default = max([default, *(config.thresholds[c] for c in column.split("/") if c in config.thresholds)])
        thr = config.thresholds.get(column, default)
        if config.sampling_allowance and stat in ("tvd", "tvd2"):
            k = math.prod(cells[c] for c in column.split("/"))
            thr += math.sqrt(k * (1 / max(n, 1) + 1 / max(len(synth), 1)) / (2 * math.pi))
        limit = thr + (z_pair if stat == "tvd2" else z) * float(sd)
        v = float(value)
        report.checks.append(
            CheckResult(name=f"{stat}:{column}", column=column, statistic=stat, value=v, threshold=thr, limit=limit,
                        noise_std=float(sd), passed=v <= limit)
        )
    tol = config.rule_tolerance if config.rule_tolerance is not None else (rules.tolerance if rules else 0.0)
    released = dict(zip(rule_real, zip(noisy_rules, std_rules, strict=True), strict=True))
    for check in rule_synth:
        real_rate, sd = released[check]
        real_rate, sd = float(real_rate), float(sd)
        applies = released.get(check + "#applies")
        if applies is not None and applies[0] > 3 * applies[1]:
            # judged on the rows the condition selects: noisy violations / noisy applicable rows
            share = float(applies[0])
            real_rate, sd = min(max(real_rate, 0.0) / share, 1.0), sd * math.sqrt(2) / share
            stat = "rule_conditional_violation_rate"
        else:  # too few applicable real rows to estimate a conditional rate: compare shares of all rows
            stat = "rule_violation_rate"
            if check in conditional:
                v, m = rule_counts_synth[check]
                rule_synth[check] = v / max(len(synth), 1)
        thr = max(real_rate, 0.0) + tol  # the real rate is known only with noise
        limit = thr + z * sd
        v = rule_synth[check]
        report.checks.append(
            CheckResult(name=check, column=check.removeprefix("rule:"), statistic=stat, value=v,
                        threshold=thr, limit=limit, noise_std=sd, passed=v <= limit)
        )
    if util:
        from dpsyn.validation.utility import auc_drop_std, auc_from_shares

        u_tstr, u_trtr, p_share = (float(x) for x in noisy_all[k_t:])
        auc_tstr, auc_trtr = auc_from_shares(u_tstr, p_share), auc_from_shares(u_trtr, p_share)
        sd = auc_drop_std(base, p_share)
        drop = auc_trtr - auc_tstr
        limit = config.max_auc_drop + z * sd
        report.utility = {"auc_tstr": auc_tstr, "auc_trtr": auc_trtr, "holdout_rows": counts.estimate("holdout"),
                          "positive": util["positive"]}
        report.checks.append(CheckResult(name="utility:auc_drop", column=schema.target, statistic="auc_drop",
                                         value=drop, threshold=config.max_auc_drop, limit=limit, noise_std=sd,
                                         passed=drop <= limit))
    logger.info("validation: %d/%d checks passed (noise std %.4f)", len(report.checks) - len(report.failures()),
                len(report.checks), std)
    return report


def validate_files(
    real: str | Path,
    synthetic: str | Path,
    schema: str | TableSchema,
    config: ValidationConfig | None = None,
    *,
    epsilon: float,
    population: str,
    delta: float | None = None,
    accountant: str = "prv",
    secure_rng: bool = True,
    ledger_url: str | None = None,
    run_id: str | None = None,
    count_share: float = 0.1,
) -> tuple[ValidationReport, dict]:
    """Run the gate on two files: the real one read and masked as its schema declares, the synthetic one
    as published (``_wm`` and text marks ignored).

    The real file is a read of ``population``: ``epsilon`` (and δ: explicit, or the public rule of
    :func:`dpsyn.privacy.default_delta` on the schema's population size) is reserved in its lifetime budget
    ledger before the file is opened and committed after (in full if the gate stops on the data). The real side
    is two Gaussian releases on one accountant: the noisy row count (``count_share`` of ε alone) and the gate's
    statistics (the rest). Returns the report and the accountant's summary.
    """
    import uuid

    from dpsyn.io import coerce_to_schema, read_table
    from dpsyn.lineage import read_any
    from dpsyn.masking import mask_table
    from dpsyn.privacy import default_delta, plan_counts, release_counts
    from dpsyn.privacy.budget import reservation
    from dpsyn.schema import load_schema
    from dpsyn.watermark import WM_COLUMN, strip_text_codes

    schema = schema if isinstance(schema, TableSchema) else load_schema(schema)
    config = config or ValidationConfig()
    delta = delta or default_delta(schema.population_size)
    syn = strip_text_codes(read_any(synthetic).drop(columns=[WM_COLUMN], errors="ignore"))
    present = schema.model_copy(update={"columns": [c for c in schema.columns if c.name in syn.columns]})
    syn = coerce_to_schema(syn, present, source="synthetic file", check_domains=False)
    acct = PrivacyAccountant(epsilon=epsilon, delta=delta, accountant=accountant)
    plan = plan_counts(acct, count_share)
    # the rest of the budget goes to the gate's one release
    acct.plan(VALIDATION_LABEL, noise_multiplier=acct.calibrate(sample_rate=1.0, steps=1, label=VALIDATION_LABEL))
    noise = NoiseSource(secure=secure_rng)
    with reservation(ledger_url, population, run_id or f"validate:{uuid.uuid4().hex}", epsilon=epsilon,
                     delta=delta, purpose="validate", note=f"real {Path(real).name}") as budget:
        budget.mark_read()
        real_df, _ = mask_table(read_table(real, schema), schema)
        counts = release_counts({"train": len(real_df)}, plan, accountant=acct, noise=noise)
        rep = validate(real_df, syn, schema, config, accountant=acct, noise=noise, counts=counts)
        acct.check()
        budget.settle(acct.summary())
    return rep, acct.summary()
