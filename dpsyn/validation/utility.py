"""The gate's utility check: train on synthetic, test on a held-out real split, against a DP train-on-real model.

A holdout ``H`` of the real rows is split off before synthesis (the synthesizer
never sees it). Two scorers are evaluated on ``H``:

* TSTR: a gradient-boosting classifier trained on the synthetic table
  (post-processing of a DP output);
* TRTR: a logistic regression trained on the real training rows with DP-SGD
  (its own budget share, planned before synthesis), so its scores are DP with
  respect to the training rows.

ROC AUC on ``H`` is not released directly: its sensitivity depends on the
private class counts. Instead the gate releases, for each scorer,
``U/|H|²`` (U = Mann-Whitney count of positive-negative pairs ranked right,
ties ½), and once ``P/|H|`` (share of positives). Adding or removing one
holdout row changes U by at most ``|H|`` and P by at most 1, so each of these
moves by at most ``1/|H|``; they join the gate's one Gaussian release with
that sensitivity. AUC = (U/|H|²) / (p(1−p)) is then computed from the noisy
values (post-processing), and the check is on the AUC drop TRTR − TSTR.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.schema import TableSchema

__all__ = ["REFERENCE_LABEL", "mann_whitney_u", "plan_reference", "positive_label", "split_holdout",
           "train_reference", "tstr_scores_on"]

REFERENCE_LABEL = "validation.reference"
REF_BATCH, REF_EPOCHS, REF_LR, REF_CLIP = 512, 5, 0.05, 1.0
REF_STEPS_PER_EPOCH = 200  # large tables: the expected batch grows instead of the step count


def reference_batch(n_train: int) -> int:
    """Expected batch of the reference model: 512, or n/200 from 102,400 training rows on (public: n), so a
    large table costs at most 200 steps per epoch (each step's Poisson sampling reads every row)."""
    return max(REF_BATCH, n_train // REF_STEPS_PER_EPOCH)


def positive_label(schema: TableSchema, positive: str | None = None) -> str:
    """The target value treated as positive: ``positive`` or the last value of the target's domain."""
    col = schema.column(schema.target)
    if positive is not None:
        return positive
    return str((col.domain or [])[-1])


def split_holdout(df: pd.DataFrame, share: float, *, noise: NoiseSource,
                  person: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training rows, holdout rows): each row goes to the holdout with probability ``share`` (secret coins); with
    ``person`` (the column of dense person codes of a person-level run), each *person* does, with all their rows,
    so no person is on both sides of the utility check."""
    if person is not None and person in df.columns and len(df):
        codes = np.asarray(df[person], dtype=np.int64)
        coins = (noise.uniform(int(codes.max()) + 1) < share)[codes]
    else:
        coins = noise.uniform(len(df)) < share
    return df.loc[~coins].reset_index(drop=True), df.loc[coins].reset_index(drop=True)


def mann_whitney_u(scores: np.ndarray, y: np.ndarray) -> float:
    """Number of (positive, negative) pairs with the positive scored higher; ties count ½."""
    from scipy.stats import rankdata

    y = np.asarray(y, dtype=bool)
    p = int(y.sum())
    if p == 0 or p == len(y):
        return 0.0
    ranks = rankdata(scores)
    return float(ranks[y].sum() - p * (p + 1) / 2)


def plan_reference(accountant: PrivacyAccountant, share: float, n_train: int) -> float:
    """Plan the TRTR model's DP-SGD (alone: ``share`` of ε); return its noise multiplier."""
    from dpsyn.synth.dpsgd import steps_and_rate

    q, steps = steps_and_rate(n_train, batch_size=reference_batch(n_train), epochs=REF_EPOCHS)
    sigma = accountant.sigma_for_share(share, sample_rate=q, steps=steps)
    accountant.plan(REFERENCE_LABEL, noise_multiplier=sigma, sample_rate=q, steps=steps)
    return sigma


def train_reference(real: pd.DataFrame, schema: TableSchema, *, accountant: PrivacyAccountant,
                    noise: NoiseSource, sigma: float, public_rows: int):
    """DP-SGD logistic regression of the target on the training rows; returns a scorer (frame → P(positive)).

    ``public_rows``: the released noisy count of ``real``'s rows (σ was planned for it)."""
    import torch

    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.synth.classifier import classifier_log_probs, train_classifier

    enc = DiscreteEncoder(schema)
    names = enc.names
    t = names.index(schema.target)
    feats = [i for i in range(len(names)) if i != t]
    sizes = [enc.sizes[i] for i in feats]
    codes = enc.encode(real[names])

    torch.manual_seed(noise.seed())
    net = train_classifier(np.concatenate([codes[:, feats], codes[:, [t]]], axis=1), sizes, enc.sizes[t],
                           accountant=accountant, noise=noise, noise_multiplier=sigma,
                           batch_size=reference_batch(public_rows), epochs=REF_EPOCHS, max_grad_norm=REF_CLIP,
                           lr=REF_LR, label=REFERENCE_LABEL, public_rows=public_rows)
    pos = list(enc.columns[t].labels).index(positive_label(schema))

    def score(df: pd.DataFrame) -> np.ndarray:
        return np.exp(classifier_log_probs(net, enc.encode(df[names])[:, feats], sizes)[:, pos])

    return score


def tstr_scores_on(synth: pd.DataFrame, holdout: pd.DataFrame, schema: TableSchema, *,
                   positive: str, random_state: int = 0) -> np.ndarray:
    """Scores on ``holdout`` of a gradient-boosting classifier trained on ``synth`` (0.5 if one class only)."""
    from dpsyn.validation.metrics import _xy, gbm_predict

    cols = [c.name for c in schema.synthesizable_columns() if c.name != schema.target]
    xs, ys = _xy(synth, schema, cols)
    xh, _ = _xy(holdout, schema, cols)
    yb = (ys == positive).to_numpy().astype(int)
    if yb.min() == yb.max():
        return np.full(len(holdout), 0.5)
    return gbm_predict(xs, yb, xh, random_state=random_state)


def auc_from_shares(u_share: float, p_share: float) -> float:
    """AUC = (U/|H|²) / (p(1−p)), clipped to [0, 1]; 0.5 when p(1−p) is not positive."""
    d = p_share * (1.0 - p_share)
    return float(min(max(u_share / d, 0.0), 1.0)) if d > 0 else 0.5


def auc_drop_std(sd_u: float, p_share: float) -> float:
    """Approximate std of the AUC drop from the noise on the two U shares (delta method, p held fixed)."""
    d = max(p_share * (1.0 - p_share), 1e-6)
    return math.sqrt(2.0) * sd_u / d
