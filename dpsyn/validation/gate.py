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

from dpsyn.errors import InputError
from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant
from dpsyn.schema import TableSchema, load_schema
from dpsyn.validation.checks import (
    Stat,
    constant_checks,
    excess_statistic,
    hard_rule_results,
    one_way_checks,
    tail_checks,
    target_signal,
)
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
# a soft rule's check is informative when it resolves a violation rate this far above the real one (or its
# tolerance, if larger): a rule broken in 1 row of 1,000 more than in the real table is not what it must find
RULE_RESOLUTION = 0.05


def gate_rules(config: ValidationConfig, schema: TableSchema):
    """The rules the gate applies (None if none)."""
    from dpsyn.validation.rules import _SHIPPED, load_rules

    if config.rules is None or config.rules == "none":
        return None
    if config.rules == "auto":  # the schema's shipped rules, else those of the shipped schema it extends
        name, base = schema.name, schema.extends
        while not (_SHIPPED / f"{name}.yaml").exists():
            if base is None:
                return None
            name, base = base, load_schema(base).extends
        return load_rules(name)
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
    sigma_ref = accountant.planned_noise(REFERENCE_LABEL) or plan_reference(accountant, config.reference_share,
                                                                             n_train)
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
    with the gate's pair limit and soft rules (hard rules read no real row). Counts of disjoint partitions merge
    into those of the whole table."""
    rules = gate_rules(config, schema)
    return real_statistics(real, schema, pair_max_cells=config.pair_max_cells,
                           rules=rules.part(hard=False) if rules is not None else None)


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
    sigma = accountant.planned_noise(VALIDATION_LABEL)
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
    one_way = _fidelity_from_counts(real_stats, synth, schema)
    target, single, pairs = one_way_checks(
        one_way + _pairs_from_counts(real_stats, synth, schema, max_cells=max_cells), _cells(schema), schema,
        config, n, len(synth))
    hists = _histograms_from_counts(real_stats, synth, schema)
    tails, consts = tail_checks(hists, real_stats, synth, schema, config), constant_checks(hists, config)
    plain_rules, cond_rules = _soft_rule_stats(real_stats, synth, schema, rules, config)
    # the verdict: one statistic, the worst excess over every check's threshold (sensitivity 1/(n−1))
    verdict = excess_statistic("gate:worst", target + single + pairs + tails + consts + plain_rules,
                               ref=config.verdict_resolution, primary=True)
    families = [f for f in (excess_statistic(name, fam) for name, fam in (
        ("one_way:worst", single), ("pairs:worst", pairs), ("tail:worst", tails), ("constant:worst", consts)))
        if f is not None]
    # the diagnosis shares a fixed pool of squared weight: half to the target, the families and the rules, half
    # to the per-column, per-pair checks
    pools = [p for p in (target + families + plain_rules + cond_rules, single + pairs + tails + consts) if p]
    for pool in pools:
        for s in pool:
            s.weight = math.sqrt(config.detail_weight / len(pools) / len(pool)) if config.detail_weight > 0 else 0.0
    if verdict is None:  # nothing to compare: never a pass (and nothing is released)
        raise InputError("the synthetic table shares no modelled column with the schema: the validation gate has "
                         "nothing to check; check the file and the schema")
    verdict.weight = config.primary_weight
    primary = [verdict]
    stats_ = primary + [s for pool in pools for s in pool if s.weight > 0]
    if config.hist_weight <= 0:
        hists = []
    w_h = math.sqrt(config.hist_weight / len(hists)) if hists else 0.0
    util = _utility_statistics(real, synth, holdout, schema, config, accountant, noise, counts)
    # One Gaussian release of (w_i · stat_i) and the weighted histograms: each statistic moves by ≤ 1/(n−1) ≤
    # 1/n_low, each histogram (shares over its cells) by ≤ √2/n_low in L2, so the L2 sensitivity is
    # √(Σ w_i² + 2 Σ w_h²)/n_low; statistic i gets noise std σ·that/w_i.
    sum_w2 = sum(s.weight**2 for s in stats_) + 2 * w_h**2 * len(hists)
    delta_t = math.sqrt(sum_w2 or 1.0) / n_low
    # holdout statistics move by ≤ 1/|H| ≤ 1/h_low each; T and H are disjoint (secret coins): a row changes one
    delta_h = math.sqrt(len(util["values"])) / counts.lower_bound("holdout") if util else 0.0
    # each part noised for its own sensitivity: scaled by 1/Δ_T and 1/Δ_H (public), the release moves by ≤ 1 in L2
    # whichever part a neighbour changes, so the whole is one Gaussian mechanism with noise multiplier σ
    base, base_h = sigma * delta_t, sigma * delta_h
    h_cells = sum(len(r) for _, r, _ in hists)
    stds = np.concatenate([[base / s.weight for s in stats_], np.full(h_cells, base / w_h if w_h else 0.0),
                           np.full(len(util["values"]) if util else 0, base_h)])
    exact = np.array([s.exact for s in stats_] + [x for _, r, _ in hists for x in r]
                     + (util["values"] if util else []))
    noisy_all = exact + noise.normal_numpy(len(exact), 1.0) * stds
    accountant.record(VALIDATION_LABEL, noise_multiplier=sigma, sample_rate=1.0, steps=1)
    k = len(stats_)
    report = ValidationReport(noise_std=base / config.primary_weight, n_real=n, n_synthetic=len(synth))
    i = k
    for col, r, sy in hists:
        report.histograms.append(ColumnHistogram(
            column=col.name, labels=list(col.labels), real=[float(x) for x in noisy_all[i:i + len(r)]],
            synthetic=[float(x) for x in sy], noise_std=float(stds[i])))
        i += len(r)
    judged = [(s, float(v), float(sd)) for s, v, sd in zip(stats_, noisy_all[:k], stds[:k], strict=True)]
    judged = _rule_rates(judged, synth, rules, schema, config)
    if util:
        judged += _utility_checks(util, noisy_all[k + h_cells:], base_h, counts, schema, config, report)
    _judge(report, judged, config)
    for check, share, tol in hard_rule_results(synth, rules, schema):
        report.checks.append(CheckResult(name=check, column=check.removeprefix("rule:"), statistic="hard_rule",
                                         value=share, threshold=tol, limit=tol, noise_std=0.0, primary=True,
                                         status="passed" if share <= tol else "failed"))
    p_signal = target_signal(synth, schema, config)
    if p_signal is not None:
        report.checks.append(CheckResult(
            name="target:signal", column=schema.target, statistic="target_signal_p", value=p_signal,
            threshold=config.target_signal_alpha, limit=config.target_signal_alpha, noise_std=0.0, primary=True,
            status="passed" if p_signal <= config.target_signal_alpha else "failed"))
    report.verdict = _verdict(report, config)
    logger.info("validation: %s (%d checks: %d failed, %d uninformative; primary noise std %.4f)", report.verdict,
                len(report.checks), len(report.failures()), len(report.uninformative()), report.noise_std)
    return report


def _soft_rule_stats(real_stats, synth, schema, rules, config) -> tuple[list[Stat], list[Stat]]:
    """Soft rules: (plain rules as synthetic − real violation rate, sensitivity 1/n; if/then rules as their
    real violation share and the share they apply to, judged later on the rows the condition selects)."""
    soft = rules.part(hard=False) if rules is not None else None
    if soft is None:
        return [], []
    from dpsyn.validation.rules import conditional_checks, rule_counts

    conditional = conditional_checks(soft)
    if set(real_stats.rules) != {f"rule:{r.name}" for r in soft.rules}:
        raise ValueError("the real statistics were computed with other rules than the gate's")
    tol = config.rule_tolerance if config.rule_tolerance is not None else soft.tolerance
    synth_counts = rule_counts(synth, soft, schema)
    n = max(real_stats.n, 1)
    plain, cond = [], []
    for check, (v, m) in real_stats.rules.items():
        if check in conditional:
            cond.append(Stat(name=check, column=check.removeprefix("rule:"), statistic="rule_violation_rate",
                             exact=v / n, threshold=tol, ref=max(tol, RULE_RESOLUTION), weight=0.0, primary=False))
            cond.append(Stat(name=check + "#applies", column="", statistic="applies_share", exact=m / n,
                             threshold=0.0, ref=1.0, weight=0.0, check=False))
        else:
            sv = synth_counts[check][0] / max(len(synth), 1)
            plain.append(Stat(name=check, column=check.removeprefix("rule:"), statistic="rule_excess_rate",
                              exact=sv - v / n, threshold=tol, ref=max(tol, RULE_RESOLUTION), weight=0.0))
    return plain, cond


def _rule_rates(judged, synth, rules, schema, config):
    """Turn the released real rule rates into checks of the synthetic rates: synthetic ≤ real + tolerance."""
    soft = rules.part(hard=False) if rules is not None else None
    if soft is None:
        return judged
    from dpsyn.validation.rules import conditional_checks, rule_counts

    conditional = conditional_checks(soft)
    synth_counts = rule_counts(synth, soft, schema)
    applies = {s.name.removesuffix("#applies"): (v, sd) for s, v, sd in judged if not s.check}
    out = []
    for s, v, sd in judged:
        if not s.check:
            continue
        if s.statistic != "rule_violation_rate":  # plain soft rules are already excess rates (synthetic − real)
            out.append((s, v, sd))
            continue
        sv, sm = synth_counts[s.name]
        if s.name in conditional and applies[s.name][0] > 3 * applies[s.name][1]:
            share = applies[s.name][0]  # judged on the rows the condition selects: noisy violations / noisy rows
            real_rate, sd = min(max(v, 0.0) / share, 1.0), sd * math.sqrt(2) / share
            synth_rate, stat = (sv / sm if sm else 0.0), "rule_conditional_violation_rate"
        else:
            real_rate, synth_rate, stat = v, sv / max(len(synth), 1), "rule_violation_rate"
        thr = max(real_rate, 0.0) + s.threshold  # the real rate is known only with noise
        out.append((Stat(name=s.name, column=s.column, statistic=stat, exact=float("nan"), threshold=thr, ref=s.ref,
                         weight=s.weight), synth_rate, sd))
    return out


def _utility_checks(util, noisy, base, counts, schema, config, report):
    """TSTR AUC above chance, and its drop against the DP train-on-real model, from the released U shares."""
    from dpsyn.validation.utility import auc_drop_std, auc_from_shares

    u_tstr, u_trtr, p_share = (float(x) for x in noisy)
    h = counts.estimate("holdout")
    p = min(max(p_share, 1.0 / max(h, 1.0)), 1.0 - 1.0 / max(h, 1.0))
    auc_tstr, auc_trtr = auc_from_shares(u_tstr, p), auc_from_shares(u_trtr, p)
    sd = auc_drop_std(base, p)
    report.utility = {"auc_tstr": auc_tstr, "auc_trtr": auc_trtr, "holdout_rows": h, "positive": util["positive"]}
    few = min(p_share, 1.0 - p_share) * h < config.utility_min_positives
    ref_floor = Stat(name="utility:auc_above_chance", column=schema.target, statistic="chance_minus_auc",
                     exact=float("nan"), threshold=0.0, ref=config.utility_margin, weight=1.0)
    ref_drop = Stat(name="utility:auc_drop", column=schema.target, statistic="auc_drop", exact=float("nan"),
                    threshold=config.max_auc_drop, ref=config.max_auc_drop, weight=1.0)
    sd_inf = float("inf") if few else None
    return [(ref_floor, 0.5 + config.utility_margin - auc_tstr, sd_inf or sd / math.sqrt(2)),
            (ref_drop, auc_trtr - auc_tstr, sd_inf or sd)]


def _judge(report: ValidationReport, judged, config: ValidationConfig) -> None:
    """One z for the family of informative checks (Bonferroni), each check passed, failed or uninformative."""
    ratio = config.max_noise_ratio

    def z_for(k: int) -> float:
        return config.noise_margin if config.noise_margin is not None else \
            float(_ppf(1 - config.false_alarm / max(k, 1)))

    # rank by noise relative to the effect to resolve (public), the verdict's statistic first; the informative set
    # is the longest prefix whose members are each resolvable at the Bonferroni z of that many checks
    rel = [sd / s.ref if s.ref > 0 else float("inf") for s, _, sd in judged]
    order = sorted(range(len(judged)), key=lambda i: (not judged[i][0].primary, rel[i]))  # the verdict's first
    m, worst = 0, 0.0
    while m < len(order) and z_for(m + 1) * max(worst, rel[order[m]]) <= ratio:
        worst = max(worst, rel[order[m]])
        m += 1
    informative = [False] * len(judged)
    for i in order[:m]:
        informative[i] = True
    z = z_for(m)
    report.noise_margin = report.pair_noise_margin = z
    for (s, v, sd), inf in zip(judged, informative, strict=True):
        limit = s.threshold + z * sd if math.isfinite(sd) else float("inf")
        status = ("failed" if v > limit else "passed") if inf else "uninformative"
        report.checks.append(CheckResult(
            name=s.name, column=s.column, statistic=s.statistic, value=v, threshold=s.threshold,
            limit=limit if math.isfinite(limit) else 1e9, noise_std=sd if math.isfinite(sd) else 1e9,
            primary=s.primary, status=status))


def _verdict(report: ValidationReport, config: ValidationConfig) -> str:
    """failed: a check failed; uninformative: the verdict statistic (gate:worst) is too noisy to resolve
    ``verdict_resolution``; passed otherwise."""
    if report.failures():
        return "failed"
    if any(c.name == "gate:worst" and c.status == "uninformative" for c in report.checks):
        return "uninformative"
    return "passed"


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
    from dpsyn.watermark import WM_COLUMN, strip_text_codes

    schema = schema if isinstance(schema, TableSchema) else load_schema(schema)
    config = config or ValidationConfig()
    delta = delta or default_delta(schema.population_size)
    syn = strip_text_codes(read_any(synthetic).drop(columns=[WM_COLUMN], errors="ignore"))
    missing = [c.name for c in schema.synthesizable_columns() if c.name not in syn.columns]
    if missing:  # before any ε is reserved: a gate over part of the schema could pass on what it does not see
        raise InputError(f"the synthetic file lacks {len(missing)} of the schema's {len(schema.synthesizable_columns())} "
                         f"modelled columns ({', '.join(missing[:5])}{', …' if len(missing) > 5 else ''}): the gate "
                         "checks every modelled column; nothing was spent")
    present = schema.model_copy(update={"columns": [c for c in schema.columns if c.name in syn.columns]})
    syn = coerce_to_schema(syn, present, source="synthetic file", check_domains=False)
    acct = PrivacyAccountant(epsilon=epsilon, delta=delta, accountant=accountant, **schema.unit_kwargs())
    plan = plan_counts(acct, count_share)
    # the rest of the budget goes to the gate's one release
    acct.plan(VALIDATION_LABEL, noise_multiplier=acct.calibrate(sample_rate=1.0, steps=1, label=VALIDATION_LABEL))
    noise = NoiseSource(secure=secure_rng)
    with reservation(ledger_url, population, run_id or f"validate:{uuid.uuid4().hex}", epsilon=epsilon,
                     delta=delta, purpose="validate", note=f"real {Path(real).name}",
                     unit=schema.unit_kwargs().get("unit")) as budget:
        budget.mark_read()
        raw = read_table(real, schema)
        if schema.privacy_unit is not None:  # at most the bound of rows per person, before any statistic
            from dpsyn.privacy.unit import bound_table

            u = schema.privacy_unit
            raw, _ = bound_table(raw, u.column, u.max_rows_per_person, noise, table=f"real file {Path(real).name}")
        real_df, _ = mask_table(raw, schema)
        counts = release_counts({"train": len(real_df)}, plan, accountant=acct, noise=noise)
        rep = validate(real_df, syn, schema, config, accountant=acct, noise=noise, counts=counts)
        acct.check()
        budget.settle(acct.summary())
    return rep, acct.summary()


def _ppf(p: float) -> float:
    """The standard normal quantile (scipy.special's ufunc at call time: no scipy.stats to load)."""
    from scipy.special import ndtri

    return float(ndtri(p))
