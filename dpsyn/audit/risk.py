"""Privacy-risk diagnostics of synthetic data: shadow-model membership inference, attribute inference, DCR.

DP bounds what *any* attack can do; these measure what concrete attacks *do*,
reported as true-positive rate at low false-positive rate (an attack that
finds a few members with certainty matters even when its AUC is 0.5;
Carlini et al., "Membership Inference Attacks From First Principles", 2022).

* :func:`shadow_mia` — the shadow-model attack on a synthesizer (Stadler,
  Oprisanu & Troncoso, "Synthetic Data – Anonymisation Groundhog Day", 2022):
  the attacker fits the synthesizer on reference data with and without each
  target record, learns from those *shadow* outputs which features of a
  synthetic table betray a member (distance to the closest synthetic record,
  near-copies, counts against what the synthetic marginals predict), then
  scores the target runs it did not learn from. Half the targets are the
  reference data's rarest records, where attacks do best.
* :func:`attribute_inference` — an attacker who knows a person's other
  columns trains a model on the synthetic table to predict a sensitive column;
  the risk is how much better that works on training members than on
  people who were not in the training data (the population-level inference
  any useful table allows is not a leak of membership).
* :func:`dcr_diagnostic` — distance to closest record, training vs holdout:
  a diagnostic only (it can look fine for a leaky generator and bad for a
  private one on small domains).

These functions read real rows without noise. They are tools for the data
owner's own review (benchmarks/risk.py, ``dpsyn audit risk``) and their results
are not part of a release; nothing here is logged by a run.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from pydantic import BaseModel

from dpsyn.schema import ColumnKind, TableSchema, Tier

__all__ = [
    "AttributeRisk", "DCRResult", "MIAResult", "attribute_inference", "dcr_diagnostic", "hamming_dcr",
    "sensitive_columns", "shadow_mia", "tpr_at_fpr",
]

FPRS = (0.001, 0.01, 0.1)


def tpr_at_fpr(scores: np.ndarray, labels: np.ndarray, fprs: tuple[float, ...] = FPRS) -> dict[str, float]:
    """TPR of the best threshold whose FPR is at most each target (higher score: "member")."""
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(np.asarray(labels, dtype=int), np.asarray(scores, dtype=float))
    return {f"{f:g}": float(tpr[fpr <= f].max()) if np.any(fpr <= f) else 0.0 for f in fprs}


def _auc(scores, labels) -> float:
    from sklearn.metrics import roc_auc_score

    labels = np.asarray(labels, dtype=int)
    return float(roc_auc_score(labels, scores)) if 0 < labels.sum() < len(labels) else float("nan")


def hamming_dcr(a: np.ndarray, b: np.ndarray, *, chunk: int = 256) -> np.ndarray:
    """For each row of codes ``a``, the Hamming distance to its closest row of ``b`` (public encoding)."""
    out = np.empty(len(a), dtype=np.int64)
    for i in range(0, len(a), chunk):
        block = a[i : i + chunk]
        d = np.full(len(block), a.shape[1], dtype=np.int64)
        for j in range(0, len(b), 4096):
            d = np.minimum(d, (block[:, None, :] != b[None, j : j + 4096, :]).sum(axis=2).min(axis=1))
        out[i : i + chunk] = d
    return out


def sensitive_columns(schema: TableSchema) -> list[str]:
    """Declared sensitive attributes: the modelled categorical columns of tier L2 (high)."""
    return [c.name for c in schema.synthesizable_columns() if c.tier == Tier.L2 and c.kind == ColumnKind.categorical]


# -- membership inference -------------------------------------------------------------------


class MIAResult(BaseModel):
    auc: float
    tpr_at_fpr: dict[str, float]
    outliers_auc: float
    outliers_tpr_at_fpr: dict[str, float]
    targets: int
    shadows: int
    eval_runs: int
    train_rows: int


def _mia_features(targets: np.ndarray, synth: np.ndarray, sizes: list[int]) -> np.ndarray:
    """Per target: closest distance, share of exact and distance-1 copies, and the log of that share over what
    the synthetic one-way marginals alone predict (a record the generator memorised shows up as an excess)."""
    n = max(len(synth), 1)
    d = np.empty((len(targets), 1), dtype=np.int64)
    exact = np.zeros(len(targets))
    near = np.zeros(len(targets))
    for i in range(0, len(targets), 128):
        dist = (targets[i : i + 128, None, :] != synth[None, :, :]).sum(axis=2)
        d[i : i + 128, 0] = dist.min(axis=1)
        exact[i : i + 128] = (dist == 0).sum(axis=1) / n
        near[i : i + 128] = (dist <= 1).sum(axis=1) / n
    logp = np.zeros(len(targets))
    for j, k in enumerate(sizes):
        p = (np.bincount(synth[:, j], minlength=k) + 0.5) / (n + 0.5 * k)
        logp += np.log(p[targets[:, j]])
    return np.column_stack([-d[:, 0], np.log(exact + 1 / n), np.log(near + 1 / n), np.log(near + 1 / n) - logp,
                            logp])


def shadow_mia(
    fit_sample: Callable[[pd.DataFrame, int], pd.DataFrame],
    population: pd.DataFrame,
    schema: TableSchema,
    *,
    n_targets: int = 100,
    shadows: int = 4,
    eval_runs: int = 2,
    train_rows: int = 2000,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> MIAResult:
    """Shadow-model membership inference against a synthesizer.

    ``fit_sample(train, seed)`` fits the synthesizer on ``train`` and returns a synthetic table of its size.
    Each of ``shadows + eval_runs`` runs trains on ``train_rows`` rows of ``population`` (targets excluded)
    plus each target with probability 1/2; the attack model learns from the shadow runs and is scored on the
    evaluation runs (targets × runs members and non-members).
    """
    from sklearn.ensemble import HistGradientBoostingClassifier

    from dpsyn.encoding import DiscreteEncoder

    rng = np.random.default_rng(seed)
    enc = DiscreteEncoder(schema)
    pop = population.reset_index(drop=True)
    codes = enc.encode(pop[enc.names])
    # half the targets at random, half the rarest records (by the population's one-way frequencies)
    logf = sum(np.log(np.bincount(codes[:, j], minlength=k)[codes[:, j]] / len(codes))
               for j, k in enumerate(enc.sizes))
    rare = np.argsort(logf)[: n_targets // 2]
    rest = np.setdiff1d(np.arange(len(pop)), rare)
    common = rng.choice(rest, n_targets - len(rare), replace=False)
    target_idx = np.concatenate([rare, common])
    is_outlier = np.arange(n_targets) < len(rare)
    others = np.setdiff1d(np.arange(len(pop)), target_idx)
    if len(others) < train_rows:
        raise ValueError(f"population has {len(others)} non-target rows; {train_rows} needed per run")
    t_codes = codes[target_idx]
    feats, member, run_of = [], [], []
    total = shadows + eval_runs
    for run in range(total):
        inc = rng.random(n_targets) < 0.5
        base = rng.choice(others, train_rows - int(inc.sum()), replace=False)
        train = pop.iloc[np.concatenate([base, target_idx[inc]])].sample(frac=1.0, random_state=int(rng.integers(2**31)))
        synth = fit_sample(train.reset_index(drop=True), int(rng.integers(2**31)))
        feats.append(_mia_features(t_codes, enc.encode(synth[enc.names]), enc.sizes))
        member.append(inc)
        run_of.append(np.full(n_targets, run))
        if progress:
            progress(run + 1, total)
    x, y, r = np.concatenate(feats), np.concatenate(member), np.concatenate(run_of)
    train_mask = r < shadows
    clf = HistGradientBoostingClassifier(max_iter=100, random_state=0).fit(x[train_mask], y[train_mask])
    s = clf.predict_proba(x[~train_mask])[:, 1]
    ye = y[~train_mask]
    out_mask = np.tile(is_outlier, eval_runs)
    return MIAResult(auc=_auc(s, ye), tpr_at_fpr=tpr_at_fpr(s, ye), outliers_auc=_auc(s[out_mask], ye[out_mask]),
                     outliers_tpr_at_fpr=tpr_at_fpr(s[out_mask], ye[out_mask]), targets=n_targets, shadows=shadows,
                     eval_runs=eval_runs, train_rows=train_rows)


# -- attribute inference --------------------------------------------------------------------


class AttributeRisk(BaseModel):
    column: str
    accuracy_members: float  # the attacker's accuracy on training rows
    accuracy_non_members: float  # ... on rows the synthesizer never saw (same population)
    accuracy_majority: float  # guessing the synthetic table's most frequent value
    member_advantage: float  # accuracy_members − accuracy_non_members
    auc: float  # members vs non-members, scored by the probability given to the true value
    tpr_at_fpr: dict[str, float]
    rows: int  # members scored (as many non-members)


def _true_value_prob(clf, x: np.ndarray, rest: list[int], j: int) -> tuple[np.ndarray, np.ndarray]:
    """The probability the attack model gives each row's true value of column j, and whether its guess is right."""
    classes = list(clf.classes_)
    proba = clf.predict_proba(x[:, rest])
    idx = np.array([classes.index(v) if v in classes else -1 for v in x[:, j]])
    p_true = np.where(idx >= 0, proba[np.arange(len(x)), np.maximum(idx, 0)], 0.0)
    return p_true, np.asarray(classes)[proba.argmax(axis=1)] == x[:, j]


def _encoded_sets(train, holdout, synth, schema, seed):
    """The encoder, an rng, and equal-size encoded samples of members and non-members, plus the synthetic codes."""
    from dpsyn.encoding import DiscreteEncoder

    enc = DiscreteEncoder(schema)
    rng = np.random.default_rng(seed)
    m = min(len(train), len(holdout))
    a = enc.encode(train[enc.names])[rng.choice(len(train), m, replace=False)]
    h = enc.encode(holdout[enc.names])[rng.choice(len(holdout), m, replace=False)]
    return enc, rng, a, h, enc.encode(synth[enc.names])


def attribute_inference(train: pd.DataFrame, holdout: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema,
                        sensitive: list[str] | None = None, *, seed: int = 0) -> list[AttributeRisk]:
    """For each sensitive column: a classifier trained on ``synth`` (all other modelled columns as inputs)
    infers it for members (``train``) and non-members (``holdout``)."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    enc, rng, a, h, s = _encoded_sets(train, holdout, synth, schema, seed)
    m = len(a)
    out = []
    for col in sensitive if sensitive is not None else sensitive_columns(schema):
        j = enc.names.index(col)
        rest = [i for i in range(len(enc.names)) if i != j]
        k = enc.sizes[j]
        clf = HistGradientBoostingClassifier(max_iter=100, categorical_features=list(range(len(rest))),
                                             random_state=0)
        clf.fit(s[:, rest], s[:, j])
        p_a, ok_a = _true_value_prob(clf, a, rest, j)
        p_h, ok_h = _true_value_prob(clf, h, rest, j)
        majority = np.bincount(s[:, j], minlength=k).argmax()
        both = np.concatenate([a[:, j], h[:, j]])
        scores, labels = np.concatenate([p_a, p_h]), np.concatenate([np.ones(m), np.zeros(m)])
        out.append(AttributeRisk(
            column=col, accuracy_members=float(ok_a.mean()), accuracy_non_members=float(ok_h.mean()),
            accuracy_majority=float((both == majority).mean()), member_advantage=float(ok_a.mean() - ok_h.mean()),
            auc=_auc(scores, labels), tpr_at_fpr=tpr_at_fpr(scores, labels), rows=m))
    return out


# -- distance to closest record ---------------------------------------------------------------


class DCRResult(BaseModel):
    share_closer_to_train: float  # ≈ 0.5 when synthetic rows are no closer to members than to non-members
    exact_copies_of_train: float  # share of synthetic rows equal (public encoding) to some training row
    exact_copies_of_holdout: float
    median_dcr_train: float
    median_dcr_holdout: float
    rows: int


def dcr_diagnostic(train: pd.DataFrame, holdout: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema, *,
                   max_rows: int = 2000, seed: int = 0) -> DCRResult:
    """Hamming distance (public encoding) from synthetic rows to the closest training and holdout row, with
    equal-size reference sets; a diagnostic, not a privacy guarantee."""
    enc, rng, a, h, s = _encoded_sets(train, holdout, synth, schema, seed)
    s = s[rng.choice(len(s), min(max_rows, len(s)), replace=False)]
    d_a, d_h = hamming_dcr(s, a), hamming_dcr(s, h)
    return DCRResult(share_closer_to_train=float(np.mean(d_a < d_h) + 0.5 * np.mean(d_a == d_h)),
                     exact_copies_of_train=float(np.mean(d_a == 0)), exact_copies_of_holdout=float(np.mean(d_h == 0)),
                     median_dcr_train=float(np.median(d_a)), median_dcr_holdout=float(np.median(d_h)), rows=len(s))
