"""Group privacy fairness: the averaged leave-one-out audit (PA-ALOOA) and outcome-fairness metrics.

The same ε does not protect every group alike: rows of small or unusual
groups move a model more, so a membership-inference attack picks them out
more often. :func:`group_privacy_audit` measures that with the seed's game:

for each of R rounds, every audit row gets a secret coin h_i; one model is
trained on the fixed rows plus the audit rows with h_i = 1, a second on the
fixed rows plus those with h_i = 0. Every audit row is then a member of
exactly one of the two models, and its loss under each is recorded
(R member losses, R non-member losses per row).

The attack guesses "member" when a row's loss is at most a per-row threshold
β_i. Thresholds are fitted on shadow rounds: the rounds are split in two
halves, β_i is the ROC-optimal threshold (max TPR − FPR) on one half and the
advantage is measured on the other, then the halves swap and the two
measurements are averaged (cross-fitting: no round ever scores the
threshold it chose). Per-row advantage adv_i = TPR_i − FPR_i;
group privacy risk GPR_k = mean adv_i over the group; Δ = max GPR − min GPR.

With a privacy unit (``dpsyn.audit.fairness_audit``) the game's units are persons: a coin per person, a
person's rows all in or all out, the person's loss the sum over their rows, the group that of their first row.
The functions here are agnostic to what an index names; the report says which (``unit``).

The audit reads private rows without noise and trains 2R models on them: it
is an owner-side review tool, like :mod:`dpsyn.audit.risk`. Its outputs are
per-group aggregates (no row values), not DP releases (docs/privacy.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from pydantic import BaseModel

from dpsyn.errors import ConfigError
from dpsyn.progress import report

__all__ = [
    "GroupRisk",
    "GroupRiskReport",
    "demographic_parity_difference",
    "equalized_odds_difference",
    "delta_interval",
    "group_privacy_audit",
    "per_sample_advantage",
    "plot_group_risk",
]

# train_fn(member_rows, seed) -> loss_fn(rows) -> per-row losses (lower = better fit)
TrainFn = Callable[[np.ndarray, int], Callable[[np.ndarray], np.ndarray]]


class GroupRisk(BaseModel):
    group: str
    rows: int
    gpr: float
    se: float  # standard error of the mean advantage over the group's rows


class GroupRiskReport(BaseModel):
    """Per-group privacy risk of one audit."""

    column: str
    groups: list[GroupRisk]
    delta: float  # max GPR − min GPR over groups with at least ``min_rows`` audit rows
    delta_ci: tuple[float, float] = (0.0, 0.0)  # 95% bootstrap interval of Δ (audit rows resampled within groups)
    mean_advantage: float
    rounds: int
    models_trained: int
    audit_rows: int
    min_rows: int
    threshold: str = "roc, cross-fitted over two halves of the rounds"
    unit: str = "row"  # what one audit index is: a row, or a person (with all their rows) under a privacy unit

    def gpr(self) -> dict[str, float]:
        return {g.group: g.gpr for g in self.groups}

    def to_markdown(self) -> str:
        noun = "rows" if self.unit == "row" else "persons"
        lines = [f"Group privacy risk by `{self.column}` ({self.rounds} rounds, {self.models_trained} models, "
                 f"{self.audit_rows} audit {noun}): Δ = {self.delta:.3f} (95% bootstrap interval "
                 f"{self.delta_ci[0]:.3f}–{self.delta_ci[1]:.3f})", "",
                 f"| group | {noun} | GPR | ± se |", "|---|---|---|---|"]
        lines += [f"| {g.group} | {g.rows} | {g.gpr:.3f} | {g.se:.3f} |" for g in self.groups]
        return "\n".join(lines)


def _roc_threshold(l_in: np.ndarray, l_out: np.ndarray) -> np.ndarray:
    """Per row: the threshold maximising TPR − FPR of "member if loss ≤ β" on these rounds.

    Candidates are the midpoints between consecutive observed losses (and one beyond each end), so a
    separable row gets a threshold inside the gap rather than on an observed loss.
    """
    obs = np.sort(np.concatenate([l_in, l_out], axis=0), axis=0)  # (2r, m)
    cand = np.concatenate([obs[:1] - 1.0, (obs[:-1] + obs[1:]) / 2, obs[-1:] + 1.0], axis=0)
    tpr = (l_in[None, :, :] <= cand[:, None, :]).mean(axis=1)  # (2r + 1, m)
    fpr = (l_out[None, :, :] <= cand[:, None, :]).mean(axis=1)
    best = np.argmax(tpr - fpr, axis=0)
    return cand[best, np.arange(cand.shape[1])]


def per_sample_advantage(l_in: np.ndarray, l_out: np.ndarray) -> np.ndarray:
    """Cross-fitted TPR − FPR per row from (rounds, rows) member and non-member losses."""
    r = l_in.shape[0]
    if r < 2:
        raise ConfigError("the audit needs at least 2 rounds (thresholds are fitted on one half, scored on the other)")
    halves = (np.arange(r) < r // 2), (np.arange(r) >= r // 2)
    adv = np.zeros(l_in.shape[1])
    for fit, score in (halves, halves[::-1]):
        beta = _roc_threshold(l_in[fit], l_out[fit])
        adv += (l_in[score] <= beta).mean(axis=0) - (l_out[score] <= beta).mean(axis=0)
    return adv / 2


def group_privacy_audit(
    train_fn: TrainFn,
    *,
    fixed_rows: np.ndarray,
    audit_rows: np.ndarray,
    groups: np.ndarray,
    labels: list[str],
    column: str,
    rounds: int,
    seed: int = 0,
    min_rows: int = 10,
    unit: str = "row",
) -> tuple[GroupRiskReport, np.ndarray]:
    """Run the averaged leave-one-out game; return the report and the per-row advantages.

    Parameters
    ----------
    train_fn : callable
        ``train_fn(member_rows, seed)`` trains one model on the given row indices and returns
        ``loss_fn(rows) -> losses``.
    fixed_rows : array of int
        Rows in every model's training set.
    audit_rows : array of int
        Rows whose membership is randomised each round.
    groups : array of int
        Group code of each audit row (index into ``labels``).
    rounds : int
        R; 2R models are trained.
    min_rows : int
        Groups with fewer audit rows are reported but left out of Δ (their GPR is mostly noise).
    unit : str
        What an index names ("row", or "person" when ``train_fn`` maps person indices to their rows); reported.
    """
    if rounds < 2:
        raise ConfigError(f"rounds must be at least 2, got {rounds}")
    if len(groups) != len(audit_rows):
        raise ValueError("groups must give one code per audit row")
    rng = np.random.default_rng(seed)
    m = len(audit_rows)
    l_in, l_out = np.zeros((rounds, m)), np.zeros((rounds, m))
    for r in range(rounds):
        h = rng.random(m) < 0.5
        s1, s0 = (int(x) for x in rng.integers(0, 2**31 - 1, size=2))
        f1 = train_fn(np.concatenate([fixed_rows, audit_rows[h]]), s1)
        loss1 = np.asarray(f1(audit_rows), dtype=float)
        f0 = train_fn(np.concatenate([fixed_rows, audit_rows[~h]]), s0)
        loss0 = np.asarray(f0(audit_rows), dtype=float)
        l_in[r], l_out[r] = np.where(h, loss1, loss0), np.where(h, loss0, loss1)
        report("fairness audit: rounds", r + 1, rounds)
    adv = per_sample_advantage(l_in, l_out)
    risks = []
    for k, label in enumerate(labels):
        a = adv[groups == k]
        if len(a) == 0:
            continue
        se = float(a.std(ddof=1) / np.sqrt(len(a))) if len(a) > 1 else float("nan")
        risks.append(GroupRisk(group=str(label), rows=int(len(a)), gpr=float(a.mean()), se=se))
    big = [g.gpr for g in risks if g.rows >= min_rows]
    delta = float(max(big) - min(big)) if len(big) >= 2 else 0.0
    rep = GroupRiskReport(column=column, groups=risks, delta=delta, delta_ci=delta_interval(adv, groups, min_rows, seed=seed),
                          mean_advantage=float(adv.mean()),
                          rounds=rounds, models_trained=2 * rounds, audit_rows=m, min_rows=min_rows, unit=unit)
    return rep, adv


def delta_interval(adv: np.ndarray, groups: np.ndarray, min_rows: int, *, seed: int = 0, replicates: int = 1000,
                   level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of Δ: each replicate resamples every group's audit rows with replacement.

    It covers the row-sampling noise of the per-row advantages (what the per-group se measures), not the
    variation between audits with other model seeds; the benchmark reports that as the std over seeds.
    """
    parts = [adv[groups == k] for k in np.unique(groups)]
    parts = [a for a in parts if len(a) >= min_rows]
    if len(parts) < 2:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    means = np.stack([a[rng.integers(0, len(a), size=(replicates, len(a)))].mean(axis=1) for a in parts], axis=1)
    d = means.max(axis=1) - means.min(axis=1)
    lo, hi = np.quantile(d, [(1 - level) / 2, (1 + level) / 2])
    return (float(lo), float(hi))


def _rates(mask: np.ndarray, y_pred: np.ndarray, groups: np.ndarray) -> list[float]:
    out = []
    for k in np.unique(groups):
        sel = mask & (groups == k)
        if sel.any():
            out.append(float(y_pred[sel].mean()))
    return out


def demographic_parity_difference(y_pred: np.ndarray, groups: np.ndarray) -> float:
    """max_k P(ŷ = 1 | k) − min_k P(ŷ = 1 | k)."""
    r = _rates(np.ones(len(y_pred), bool), np.asarray(y_pred, float), np.asarray(groups))
    return float(max(r) - min(r)) if r else 0.0


def equalized_odds_difference(y_true: np.ndarray, y_pred: np.ndarray, groups: np.ndarray) -> float:
    """max of the TPR gap and the FPR gap across groups (fairlearn's definition)."""
    y_true, y_pred, groups = np.asarray(y_true), np.asarray(y_pred, float), np.asarray(groups)
    gaps = []
    for cls in (1, 0):
        r = _rates(y_true == cls, y_pred, groups)
        gaps.append(max(r) - min(r) if r else 0.0)
    return float(max(gaps))


def plot_group_risk(reports: dict[str, GroupRiskReport], path, *, title: str | None = None) -> None:
    """Bar chart of GPR per group (± 1 se), one bar series per method (e.g. DP-SGD vs DP-SGD-S), as PNG or SVG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(reports)
    groups = list(dict.fromkeys(g.group for r in reports.values() for g in r.groups))
    width = 0.8 / max(len(names), 1)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(groups) * max(len(names), 1) + 1.5), 3.4))
    for j, name in enumerate(names):
        by = {g.group: g for g in reports[name].groups}
        xs = [i + (j - (len(names) - 1) / 2) * width for i in range(len(groups))]
        ys = [by[g].gpr if g in by else 0.0 for g in groups]
        es = [by[g].se if g in by and np.isfinite(by[g].se) else 0.0 for g in groups]
        ax.bar(xs, ys, width=width, yerr=es, capsize=3, label=f"{name} (Δ = {reports[name].delta:.3f})")
    ax.set_xticks(range(len(groups)), [f"{g}\n(n={next((x.rows for r in reports.values() for x in r.groups if x.group == g), 0)})"
                                       for g in groups], fontsize=8)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.set_ylabel("group privacy risk (TPR − FPR)")
    col = next(iter(reports.values())).column if reports else ""
    ax.set_title(title or f"Membership-inference advantage by {col}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
