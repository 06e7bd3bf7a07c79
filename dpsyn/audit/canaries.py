"""One-run privacy audit (Steinke, Nasr & Jagielski, "Privacy Auditing with One (1) Training Run", 2023).

An empirical *lower* bound on ε, to catch an implementation whose real
privacy is far from its claim (a missing clip, noise never added, a leak
through preprocessing):

1. draw ``m`` canary records uniformly over the schema's public encoding
   (records no real table is likely to hold, so their influence stands out);
2. include each canary in the training rows independently with probability 1/2
   (the auditor's secret coin flips) and fit the synthesizer once;
3. score every canary by how much the fitted model or its output favours it
   (higher: "looks included") and guess IN for the ``k_in`` highest scores and
   OUT for the ``k_out`` lowest; count the correct guesses ``v`` out of
   ``r = k_in + k_out``;
4. an (ε, δ)-DP algorithm cannot be guessed much better than randomized response
   with accuracy e^ε/(1+e^ε): the p-value of ``v`` correct guesses under
   (ε, δ)-DP is ``P[Binomial(r, e^ε/(1+e^ε)) ≥ v] + 2mδ·α`` (their Theorem 3.1 with
   δ; α = max_i P[v−i ≤ Binomial < v]/i), and the audit reports the largest ε
   rejected at confidence 1 − ``beta``.

``k_in`` and ``k_out`` are fixed before looking at the scores (here m/10 each by
default): choosing them after the fact would need a multiple-testing correction.
A lower bound above the claimed ε proves the claim false; one at or below it
proves nothing more than "not caught".
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pydantic import BaseModel
from scipy import stats

from dpsyn.schema import TableSchema

__all__ = [
    "AuditResult", "audit_model", "canary_dcr_scores", "epsilon_lower_bound", "insert_canaries", "make_canaries",
    "p_value", "run_audit",
]


def p_value(m: int, r: int, v: int, eps: float, delta: float) -> float:
    """P[≥ v correct of r guesses] for an (ε, δ)-DP algorithm with m canaries (Steinke et al. 2023, Thm 3.1)."""
    if not 0 <= v <= r <= m:
        raise ValueError("need 0 ≤ v ≤ r ≤ m")
    q = 1.0 / (1.0 + math.exp(-eps))
    beta = float(stats.binom.sf(v - 1, r, q))
    if delta == 0 or v == 0:
        return min(beta, 1.0)
    pmf = stats.binom.pmf(np.arange(v - 1, -1, -1), r, q)  # P[B = v−1], P[B = v−2], ..., P[B = 0]
    alpha = float(np.max(np.cumsum(pmf) / np.arange(1, v + 1)))
    return min(beta + 2 * m * delta * alpha, 1.0)


def epsilon_lower_bound(m: int, r: int, v: int, *, delta: float, beta: float = 0.05) -> float:
    """The largest ε such that (ε, δ)-DP is rejected at confidence 1 − ``beta`` (0 if none is)."""
    if p_value(m, r, v, 0.0, delta) >= beta:
        return 0.0
    lo, hi = 0.0, 1.0
    while p_value(m, r, v, hi, delta) < beta:
        lo, hi = hi, hi * 2
        if hi > 1e3:
            return lo
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if p_value(m, r, v, mid, delta) < beta else (lo, mid)
    return lo


def make_canaries(schema: TableSchema, m: int, *, rng: np.random.Generator) -> pd.DataFrame:
    """``m`` records drawn uniformly over the schema's public encoding (decoded to values)."""
    from dpsyn.encoding import DiscreteEncoder

    enc = DiscreteEncoder(schema)
    codes = np.stack([rng.integers(0, k, m) for k in enc.sizes], axis=1)
    return enc.decode(codes, rng=rng)


def canary_dcr_scores(canaries: pd.DataFrame, synthetic: pd.DataFrame, schema: TableSchema,
                      *, chunk: int = 256) -> np.ndarray:
    """Black-box score: minus the Hamming distance (over the public encoding) to the closest synthetic record."""
    from dpsyn.audit.risk import hamming_dcr
    from dpsyn.encoding import DiscreteEncoder

    enc = DiscreteEncoder(schema)
    return -hamming_dcr(enc.encode(canaries[enc.names]), enc.encode(synthetic[enc.names]), chunk=chunk).astype(float)


class AuditResult(BaseModel):
    m: int
    included: int
    k_in: int
    k_out: int
    correct: int
    epsilon_lower_bound: float
    delta: float
    beta: float
    score: str


def run_audit(scores: np.ndarray, included: np.ndarray, *, delta: float, k_in: int | None = None,
              k_out: int | None = None, beta: float = 0.05, score: str = "",
              rng: np.random.Generator | None = None) -> AuditResult:
    """Guess IN for the top ``k_in`` scores and OUT for the bottom ``k_out``; convert to an ε lower bound.

    Ties are broken at random (``rng``), so a constant score gives chance-level guesses.
    """
    m = len(scores)
    k_in = m // 10 if k_in is None else k_in
    k_out = m // 10 if k_out is None else k_out
    if k_in + k_out > m:
        raise ValueError("k_in + k_out must be at most the number of canaries")
    rng = rng or np.random.default_rng()
    order = np.lexsort((rng.random(m), -np.asarray(scores, dtype=float)))  # descending score, random ties
    guess_in, guess_out = order[:k_in], order[m - k_out :] if k_out else order[:0]
    v = int(included[guess_in].sum() + (~included[guess_out]).sum())
    eps = epsilon_lower_bound(m, k_in + k_out, v, delta=delta, beta=beta)
    return AuditResult(m=m, included=int(included.sum()), k_in=k_in, k_out=k_out, correct=v,
                       epsilon_lower_bound=eps, delta=delta, beta=beta, score=score)


def insert_canaries(train: pd.DataFrame, schema: TableSchema, m: int, *, noise) -> tuple[pd.DataFrame, pd.DataFrame,
                                                                                          np.ndarray]:
    """For an audit inside a run: ``m`` canaries drawn from ``noise`` (the run's secret source), each joined to
    ``train`` with probability 1/2. Returns (training rows with the included canaries, shuffled; all canaries;
    the inclusion mask). The canaries are made-up records, so the real rows' guarantee is unchanged."""
    rng = np.random.default_rng(noise.seed())
    canaries = make_canaries(schema, m, rng=rng)
    included = rng.random(m) < 0.5
    cols = [c for c in train.columns if c in canaries.columns]
    extra = canaries.loc[included, cols]
    for c in train.columns:  # columns the encoding does not model (ids, text) stay missing
        if c not in extra.columns:
            extra[c] = pd.NA
    training = pd.concat([train, extra[list(train.columns)].astype(train.dtypes.to_dict(), errors="ignore")],
                         ignore_index=True)
    return training.iloc[rng.permutation(len(training))].reset_index(drop=True), canaries, included


def audit_model(model, canaries: pd.DataFrame, included: np.ndarray, synthetic: pd.DataFrame, schema: TableSchema,
                *, delta: float, beta: float = 0.05) -> AuditResult:
    """Score the canaries white-box (the model's log-likelihood) when the model offers it, else black-box (DCR
    to the synthetic table), and convert the guesses to an ε lower bound. Post-processing of DP outputs."""
    if hasattr(model, "log_likelihood"):
        scores, name = model.log_likelihood(canaries), "log-likelihood (white-box)"
    else:
        scores, name = canary_dcr_scores(canaries, synthetic, schema), "dcr (black-box)"
    return run_audit(scores, included, delta=delta, beta=beta, score=name, rng=np.random.default_rng(0))
