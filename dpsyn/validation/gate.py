"""The validation gate: fidelity checks whose real-data side is itself DP.

Per column, a distance between the real and the synthetic distribution:

* numeric and datetime: the two-sample Kolmogorov-Smirnov statistic (the
  statistic, not its p-value: at these sizes any p-value rejects);
* categorical: total variation distance over the public domain.

Missing values count as one more value (after all numbers for KS, one more
category for TVD), so every statistic is over all n real rows.

The statistics read private rows, so they are released with the Gaussian
mechanism and charged to the run's accountant: adding or removing one real
row moves each statistic by at most 1/(n−1) ≤ 1/L (L the noisy count's lower bound), so the vector of k
statistics has L2 sensitivity √k/L, and each gets N(0, (σ√k/L)²) noise. The
gate compares the *noisy* statistics with the thresholds; only noisy values
are ever stored or logged (docs/privacy.md).
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm as _norm

from dpsyn.errors import InputError
from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant
from dpsyn.schema import TableSchema
from dpsyn.validation.config import ValidationConfig
from dpsyn.validation.fidelity import (
    _cells,
    _fidelity_from_counts,
    _histograms_from_counts,
    _pairs_from_counts,
)
from dpsyn.validation.report import CheckResult, ColumnHistogram, ValidationReport
from dpsyn.validation.stats import RealStatistics, real_statistics

__all__ = ["VALIDATION_LABEL", "gate_rules", "plan_validation", "real_statistics_for", "validate", "validate_files"]

logger = logging.getLogger(__name__)

VALIDATION_LABEL = "validation.fidelity"


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
