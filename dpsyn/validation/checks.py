"""The gate's checks before noise: which statistics one release holds, with their weights and thresholds.

Every statistic here moves by at most ``sens``/(n−1) when one real row is added or removed (n the real side's
rows; 1/(|H|−1) for the holdout's), docs/privacy.md "The validation gate":

* per column, KS (numeric, datetime) or TVD (categorical): 1/(n−1);
* the *worst excess* of a family, max_j (stat_j − threshold_j): a maximum of functions that each move by at most
  1/(n−1) moves by at most 1/(n−1), so a family's verdict costs one statistic, not one per column; the gate's
  verdict rests on one such statistic over every check (``gate:worst``);
* a share of real rows in a set of cells fixed by the synthetic table (tail, constant): 1/n;
* a soft rule's violation rate and the share it applies to: 1/n each.

The verdict's statistic carries most of the weight; the families' worst excesses and the per-column checks
share a fixed pool (diagnosis: which family, which column, judged too once precise enough), so the precision
of the verdict does not fall with the table's width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dpsyn.schema import ColumnKind, TableSchema
from dpsyn.validation.config import ValidationConfig

__all__ = ["Stat", "constant_checks", "excess_statistic", "hard_rule_results", "one_way_checks", "tail_checks",
           "target_signal"]


@dataclass
class Stat:
    """One noisy statistic of the release and how it is judged: value ≤ threshold + z · noise std passes."""

    name: str
    column: str
    statistic: str
    exact: float  # private until noised
    threshold: float
    ref: float  # the effect the check must resolve: informative when z · std ≤ max_noise_ratio · ref
    weight: float
    primary: bool = False
    check: bool = True  # False: released for the report only (e.g. a rule's applicable share)


def allowance(cells: int, n: float, m: int) -> float:
    """Typical TVD of two samples of sizes n and m from one distribution over ``cells`` cells (public)."""
    return math.sqrt(cells * (1 / max(n, 1) + 1 / max(m, 1)) / (2 * math.pi))


def one_way_checks(stats: list[tuple[str, str, float]], cells: dict[str, int], schema: TableSchema,
                   config: ValidationConfig, n: float, m: int) -> tuple[list[Stat], list[Stat], list[Stat]]:
    """(target checks, per-column checks, per-pair checks) with their thresholds; weights are set by the caller."""
    target, single, pairs = [], [], []
    for column, stat, value in stats:
        if stat == "tvd2":
            base = config.target_pair_threshold if schema.target in column.split("/") else config.pair_tvd_threshold
            default = max([base, *(config.thresholds[c] for c in column.split("/") if c in config.thresholds)])
        elif column == schema.target:
            default = config.target_tvd_threshold
        else:
            default = {"tvd": config.tvd_threshold}.get(stat, config.ks_threshold)
        thr = ref = config.thresholds.get(column, default)
        if config.sampling_allowance and stat in ("tvd", "tvd2"):
            thr += allowance(math.prod(cells[c] for c in column.split("/")), n, m)
        s = Stat(name=f"{stat}:{column}", column=column, statistic=stat, exact=value, threshold=thr, ref=ref,
                 weight=0.0)
        if stat == "tvd2":
            pairs.append(s)
        elif column == schema.target:
            s.name = f"target:{stat}"
            target.append(s)
        else:
            single.append(s)
    return target, single, pairs


def excess_statistic(name: str, family: list[Stat], ref: float | None = None, *, primary: bool = False) -> Stat | None:
    """The family's worst excess over its thresholds, max_j (stat_j − threshold_j): one statistic, sensitivity
    1/(n−1) like each member; it fails when any member exceeds its threshold by more than the noise margin.
    Which member is worst is not released (it is a function of the private rows)."""
    if not family:
        return None
    worst = max(s.exact - s.threshold for s in family)
    return Stat(name=name, column="", statistic="worst_excess", exact=float(worst), threshold=0.0,
                ref=ref if ref is not None else min(s.ref for s in family), weight=0.0, primary=primary)


def _numeric_columns(schema: TableSchema) -> set[str]:
    return {c.name for c in schema.synthesizable_columns() if c.kind != ColumnKind.categorical}


def _unchecked(config: ValidationConfig) -> set[str]:
    """Columns whose per-column threshold is 1 or more: the user asked for no check on them."""
    return {c for c, t in config.thresholds.items() if t >= 1.0}


def tail_checks(hists, real_stats, synth: pd.DataFrame, schema: TableSchema, config: ValidationConfig) -> list[Stat]:
    """Per numeric column, the largest of three shares of real rows, each in a set the synthetic table fixes
    (so each moves by ≤ 1/n, and so does their maximum): in the bins the synthetic table leaves empty, above the
    synthetic maximum, below the synthetic minimum. An output whose values stop short of a real tail fails."""
    from dpsyn.validation.fidelity import _numeric

    numeric = _numeric_columns(schema) - _unchecked(config)
    out = []
    for col, real, syn in hists:
        if col.name not in numeric:
            continue
        empty = float(np.sum(real[np.asarray(syn) == 0]))
        v, c = real_stats.values[col.name]
        x = _numeric(synth[col.name], schema.column(col.name))
        lo, hi = col.bounds if col.bounds else (-np.inf, np.inf)
        present = x[x <= hi]  # missing sorts after every number: not a value
        n = max(int(c.sum()), 1)
        values = v <= hi
        above = float(c[values & (v > present.max())].sum()) / n if len(present) else 0.0
        below = float(c[values & (v < present.min())].sum()) / n if len(present) else 0.0
        out.append(Stat(name=f"tail:{col.name}", column=col.name, statistic="real_share_outside_synthetic",
                        exact=max(empty, above, below), threshold=config.tail_threshold, ref=config.tail_threshold,
                        weight=0.0))
    return out


def constant_checks(hists, config: ValidationConfig) -> list[Stat]:
    """Per synthetic column whose top cell holds ≥ ``constant_share`` of rows (public: the synthetic table decides
    which), the share of real rows outside that cell (1/n)."""
    out = []
    for col, real, syn in hists:
        syn = np.asarray(syn)
        if col.name in _unchecked(config) or not len(syn):
            continue
        top = int(np.argmax(syn))
        if syn[top] >= config.constant_share:
            out.append(Stat(name=f"constant:{col.name}", column=col.name, statistic="outside_share",
                            exact=float(1.0 - real[top]), threshold=config.constant_threshold,
                            ref=config.constant_threshold, weight=0.0))
    return out


def hard_rule_results(synth: pd.DataFrame, rules, schema: TableSchema) -> list[tuple[str, float, float]]:
    """(check, synthetic violation share, tolerance) per hard rule: the synthetic table alone, no ε."""
    from dpsyn.validation.rules import rule_counts

    hard = rules.part(hard=True) if rules is not None else None
    if hard is None:
        return []
    counts = rule_counts(synth, hard, schema)
    return [(check, v / max(len(synth), 1), hard.hard_tolerance) for check, (v, _) in counts.items()]


def target_signal(synth: pd.DataFrame, schema: TableSchema, config: ValidationConfig) -> float | None:
    """Permutation p-value of "the synthetic target is independent of the other columns", on the synthetic table
    alone (no ε): the statistic is the mean over columns of TVD(joint with the target, product of the marginals)
    over the public encoding; the target is permuted ``target_signal_permutations`` times with a fixed seed (the
    table is public, so the test is deterministic). None when there is nothing to test."""
    from dpsyn.encoding import DiscreteEncoder

    t = schema.target
    if config.target_signal_alpha is None or t is None or t not in synth.columns or len(synth) < 2:
        return None
    names = [c.name for c in schema.synthesizable_columns() if c.name in synth.columns]
    if len(names) < 2:
        return None
    rng = np.random.default_rng(0)
    df = synth if len(synth) <= config.target_signal_rows else synth.iloc[
        np.sort(rng.choice(len(synth), config.target_signal_rows, replace=False))]
    enc = DiscreteEncoder(schema, columns=names)
    x = enc.encode(df[enc.names]).astype(np.int64)
    j = enc.names.index(t)
    kt, n = enc.sizes[j], len(df)
    y = x[:, j]
    feats = [i for i in range(len(enc.names)) if i != j]
    offsets = np.cumsum([0] + [enc.sizes[i] * kt for i in feats])
    base = np.stack([x[:, i] * kt + offsets[k] for k, i in enumerate(feats)], axis=1)  # cell of (f, target) - y
    size = int(offsets[-1])
    py = np.bincount(y, minlength=kt) / n
    indep = np.concatenate([np.outer(np.bincount(x[:, i], minlength=enc.sizes[i]) / n, py).ravel() for i in feats])

    def stat(labels: np.ndarray) -> float:
        joint = np.bincount((base + labels[:, None]).ravel(), minlength=size) / n
        return float(0.5 * np.abs(joint - indep).sum() / len(feats))

    observed = stat(y)
    k = config.target_signal_permutations
    at_least = sum(stat(y[rng.permutation(n)]) >= observed - 1e-12 for _ in range(k))
    return (1 + at_least) / (k + 1)
