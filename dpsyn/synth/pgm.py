"""``pgm``: a marginal-based backbone (MST-style selection, Private-PGM estimation) with a DP task model on top.

The mechanism reads like MST (McKenna, Miklau & Sheldon 2021, "Winning the NIST contest: a scalable and general
approach to differentially private synthetic data"), with every release a Gaussian mechanism so that the run's
accountant (PRV or RDP) composes it with everything else:

1. **measure** every column's one-way histogram (Gaussian, L2 sensitivity √Σw_j², w_j the column's weight);
2. **compress** each column's codes whose noisy count is below ``compress_threshold`` noise stds into one cell
   (post-processing);
3. **select**: release the vector of scores ‖M_ij(D) − n̂·p̂_i⊗p̂_j‖₁ of every pair of columns (p̂ the noisy one-way
   estimate) with Gaussian noise. Each score moves by at most 1 when a row is added or removed, so the vector of
   m scores has L2 sensitivity √m. MST's exponential-mechanism rounds become post-processing of this one release:
   the maximum spanning tree of the noisy scores (Kruskal), plus every further pair whose noisy score exceeds the
   L1 error its own measurement would add (AIM's penalty, McKenna et al. 2022), within a junction-tree size cap;
4. **measure** the selected pairs (Gaussian, L2 sensitivity √Σw_r²);
5. **estimate** a graphical model from all measurements with mbi 2.0's mirror descent (post-processing), and
   sample rows from it (:mod:`dpsyn.synth.pgm_model`; systematic within parent groups, as mbi does).

**Task-oriented on top** (``task``): the target's labels come from the DP task model
(:func:`dpsyn.synth.classifier.train_classifier`, DP-SGD) trained on ``task_share`` of ε, mixed in logit space
with the model's own p(y | x) (``label_mix``). Whether the task model runs is a rule on public facts
(:func:`use_task_model`). The measurements' noise is calibrated last, as one Gaussian taking what is left, and
split by fixed fractions of its μ² (``one_way_share``, ``select_share``, the rest to the pairs): k Gaussian
releases whose 1/σ_i² sum to 1/σ² compose exactly to one Gaussian of σ. docs/synthesis.md has the argument.
"""

from __future__ import annotations

import logging
import math
from typing import Literal

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from dpsyn.errors import ConfigError, NotFittedError, PrivacyBudgetExceededError
from dpsyn.privacy import PrivacyAccountant
from dpsyn.synth.base import Synthesizer
from dpsyn.synth.pgm_model import (
    Compression,
    GraphicalModel,
    all_pairs,
    estimate_model,
    expected_abs_noise,
    junction_tree_cells,
    pair_counts,
)

__all__ = ["PGM", "PGMConfig", "backbone_split", "domain_weight_exponent", "estimation_iters", "noise_stopping",
           "star_structure", "use_task_model"]

logger = logging.getLogger(__name__)

ONE_WAY_LABEL = "pgm.one_way"
SELECT_LABEL = "pgm.select"
PAIRS_LABEL = "pgm.pairs"
TASK_LABEL = "pgm.task"

#: The task model runs when ε·n̂ reaches this (public facts only; docs/synthesis.md gives the suite's evidence).
TASK_MIN_EPS_ROWS = 3000.0
#: ... and when ε·n̂ per input of the task model (the features' one-hot codes, from the schema) reaches this.
TASK_MIN_EPS_ROWS_PER_CODE = 100.0
#: The backbone measures at most this × (d − 1) pairs (PGMConfig.max_pairs_factor's default).
MAX_PAIRS_FACTOR = 3.0


class PGMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    one_way_share: float | None = Field(default=None, gt=0, lt=1, description="Fraction of the backbone's μ² for "
                                        "one-way marginals (μ = 1/σ of the one Gaussian the measurements compose "
                                        "to); None: by the public rule backbone_split.")
    select_share: float = Field(default=0.1, gt=0, lt=1, description="Fraction of μ² for the noisy pair scores.")
    compress_threshold: float | None = Field(default=None, ge=0, description="Codes whose noisy one-way count is "
                                             "below this many noise stds share one cell; None: by backbone_split.")
    max_cells: int = Field(default=300_000, ge=1000, description="Cap on the junction tree's cells.")
    max_pairs_factor: float = Field(default=MAX_PAIRS_FACTOR, ge=1.0, description="At most this × (d − 1) pairs are measured.")
    target_pairs: bool = Field(default=True, description="Without a task model, measure every feature × target "
                               "pair (naive Bayes' structure, the backbone's own p(y | x)) besides the selected.")
    structure: Literal["auto", "select", "star", "independent"] = Field(
        default="auto", description="Which pairs are measured: 'select' by the noisy scores (MST/AIM-style); "
        "'star' every feature × target pair only (naive Bayes' graph; no score release, its budget goes to the "
        "measurements); 'independent' none (the trivial baseline: every column independent; the pairs' budget "
        "measures the one-way marginals again); 'auto' by the public rule star_structure (the star on a tiny "
        "table with a target).")
    iters: int | None = Field(default=None, ge=10, le=100_000, description="Mirror-descent iterations (mbi); "
                              "None: by the public rule estimation_iters (fewer on a tiny table: early stopping "
                              "keeps the estimate near the uniform start where every cell is within the noise).")
    stopping: Literal["auto", "iters", "noise"] = Field(
        default="auto", description="'iters': mirror descent runs ``iters`` iterations; 'noise': after 100 it "
        "stops once its loss reaches the noise level (the discrepancy principle; ``iters`` the most it runs); "
        "'auto' by the public rule noise_stopping ('noise' on a small table that is not tiny).")
    task: Literal["auto", "on", "off"] = Field(default="auto", description="Labels from the DP task model: 'auto' "
                                               "by the public rule use_task_model (ε·n̂ and ε·n̂ per feature code).")
    task_share: float = Field(default=0.5, gt=0, lt=1, description="ε share the task model alone would cost.")
    task_epochs: int = Field(default=10, ge=1, le=1000)
    task_batch_size: int = Field(default=1024, ge=8)
    task_lr: float = Field(default=0.05, gt=0)
    task_hidden: int = Field(default=0, ge=0)
    task_max_grad_norm: float = Field(default=1.0, gt=0)
    task_ema_decay: float = Field(default=0.99, ge=0, lt=1)
    label_mix: float = Field(default=0.3, ge=0, le=1, description="Weight of the model's own p(y | x) in the "
                             "labels' logits when the task model runs (0: task model only).")
    person_weights: bool = Field(
        default=True, description="With a privacy unit in the schema: measure person-weighted counts (each person's "
        "rows weigh c = n̂ rows / n̂ persons in all: sensitivity c per person); False: row counts charged by the "
        "contribution bound k (the row distribution, at k times the noise).")
    field_weights: Literal["none", "tier"] = Field(
        default="none", description="'tier': a column's measurements get weight 0.5 (L2), 0.75 (L3) or 1 (L4): "
        "sensitive fields are measured with more noise, the rest with less, at the same ε.")
    domain_weights: float | None = Field(
        default=None, ge=0, le=1, description="Exponent a of the one-way release's column weights k_j**a (k_j: the "
        "column's public domain size; times its tier weight): a = 1/3 minimises the summed expected L1 error of the "
        "one-way marginals at a fixed sensitivity; 0: every column alike; None: by the public rule "
        "domain_weight_exponent (1/3, or 0 on a small table).")
    shape: Literal["auto", "off", "unimodal"] = Field(
        default="auto", description="'unimodal': an ordered column's noisy one-way counts (inner bins) are replaced "
        "by the closest unimodal density where they are consistent with one at the noise level (shape_ordered; "
        "post-processing); 'auto': unimodal on a small table (small_table), off otherwise.")
    threads: int | None = Field(default=None, ge=1, description="torch threads for the task model.")
    smoothing: int | None = Field(default=0, ge=0, le=10, description="Half-width of the binomial kernel "
                                  "that smooths an ordered (numeric, datetime) column's noisy one-way counts over "
                                  "neighbouring bins (post-processing); None: chosen per column by Stein's "
                                  "unbiased risk estimate from the noisy counts (smooth_ordered); 0 (default): "
                                  "off. Experimental: docs/synthesis.md has the probe that keeps it off.")


def use_task_model(*, epsilon: float, public_rows: int, has_target: bool, feature_codes: int,
                   columns: int, max_pairs_factor: float = MAX_PAIRS_FACTOR) -> bool:
    """The public rule: a DP-SGD task model is worth its budget once ε·n̂ ≥ :data:`TASK_MIN_EPS_ROWS` and
    ε·n̂ / ``feature_codes`` (its inputs: the features' one-hot width) ≥ :data:`TASK_MIN_EPS_ROWS_PER_CODE`; with
    fewer rows per weight DP-SGD's noise swamps the weights, and the backbone's own p(y | x) does better.

    Never when the backbone can measure every pair of the table's ``columns`` (d(d − 1)/2 ≤ ``max_pairs_factor``
    · (d − 1), d ≤ 6 at the default): its pairwise model then holds every feature × target pair, so its own
    p(y | x) already is a logistic regression on all features (with their interactions through the other pairs),
    and a task model of that same family would only halve the backbone's budget (nwtco, 6 columns, in
    docs/synthesis.md)."""
    eps_rows = epsilon * public_rows
    if columns * (columns - 1) / 2 <= max_pairs_factor * max(columns - 1, 1):
        return False
    return has_target and eps_rows >= TASK_MIN_EPS_ROWS and eps_rows >= TASK_MIN_EPS_ROWS_PER_CODE * feature_codes


#: Below this ε·n̂/d (a public quantity: rows per column, scaled by the budget) a table is *small*: every cell
#: count is near the noise, so the backbone keeps more budget for one-way marginals and compresses less.
SMALL_TABLE_EPS_ROWS_PER_COLUMN = 150.0


def small_table(*, epsilon: float, public_rows: int, columns: int) -> bool:
    return epsilon * public_rows / max(columns, 1) < SMALL_TABLE_EPS_ROWS_PER_COLUMN


#: Below this ε·n̂/d a table is *tiny*: the star alone is measured and the estimation stops early. Between it and
#: SMALL_TABLE_EPS_ROWS_PER_COLUMN the selection still runs: at 150 the star alone dropped Adult's (marital-status,
#: relationship) pair at 2,000 rows and ε = 1, and the gate then failed 18 of 20 runs (docs/synthesis.md).
TINY_TABLE_EPS_ROWS_PER_COLUMN = 50.0


def tiny_table(*, epsilon: float, public_rows: int, columns: int) -> bool:
    return epsilon * public_rows / max(columns, 1) < TINY_TABLE_EPS_ROWS_PER_COLUMN


def star_structure(*, epsilon: float, public_rows: int, columns: int) -> bool:
    """The public rule for ``structure: auto``: measure the star (every feature × target pair, no score release)
    on a tiny table, where the noisy scores select little but noise and their release costs budget (the suite's
    evidence is in docs/synthesis.md)."""
    return tiny_table(epsilon=epsilon, public_rows=public_rows, columns=columns)


#: Mirror-descent iterations by the public rule :func:`estimation_iters`.
ITERS_SMALL, ITERS = 100, 1000


def estimation_iters(*, epsilon: float, public_rows: int, columns: int) -> int:
    """100 on a tiny table, else 1000: mirror descent starts from the uniform model, and on a table whose cells
    are all near the noise stopping early shrinks the estimate towards it (the suite's evidence: docs/synthesis.md)."""
    return ITERS_SMALL if tiny_table(epsilon=epsilon, public_rows=public_rows, columns=columns) else ITERS


def noise_stopping(*, epsilon: float, public_rows: int, columns: int) -> bool:
    """The public rule for ``stopping: auto``: stop mirror descent at the noise level (the discrepancy principle,
    after at least 100 iterations) on a small table that is not tiny. A tiny table stops at 100 anyway, and a large
    one runs its 1,000: in between, a fixed 1,000 fits the noise on some tables (titanic at ε = 1) and a fixed 100
    leaves wide one-way marginals unconverged on others (diabetes130's diagnoses at 2,000 rows), while the loss
    against the measurements' own noise tells the two apart (docs/synthesis.md)."""
    return small_table(epsilon=epsilon, public_rows=public_rows, columns=columns) and not tiny_table(
        epsilon=epsilon, public_rows=public_rows, columns=columns)


#: The exponent of :func:`domain_weight_exponent` off a small table.
DOMAIN_WEIGHT_EXPONENT = 1 / 3


def domain_weight_exponent(*, epsilon: float, public_rows: int, columns: int) -> float:
    """The one-way release weighs column j by k_j**a (k_j its public domain size). With every cell's error about
    the noise std s_j = σΔ/w_j (Δ = √Σw²), the summed L1 error Σ_j k_j·s_j at a fixed Δ is smallest for
    w_j ∝ k_j**(1/3) (Lagrange). It is 1/3, except on a small table (:func:`small_table`), where it is 0: there the
    one-way release is half the budget and the star's pairs carry the labels' signal, and weighing a wide feature
    column up costs the narrow ones (the target among them) noise the suite showed in TSTR (docs/synthesis.md)."""
    return 0.0 if small_table(epsilon=epsilon, public_rows=public_rows, columns=columns) else DOMAIN_WEIGHT_EXPONENT


def backbone_split(*, epsilon: float, public_rows: int, columns: int) -> tuple[float, float]:
    """(one_way_share, compress_threshold) by the public rule: (0.5, 1) on a small table, else MST-like (0.2, 3)."""
    if small_table(epsilon=epsilon, public_rows=public_rows, columns=columns):
        return 0.5, 1.0
    return 0.2, 3.0


def _ordered_codes(col) -> int:
    """How many leading codes of an encoded column are ordered bins (0 for a categorical column)."""
    if col.kind.value == "categorical":
        return 0
    return col.size - (1 if col.nullable else 0)


def _kernel_smoother(m: int, width: int) -> np.ndarray:
    """The m × m matrix of the binomial kernel of half-width ``width``, rows renormalised at the ends."""
    from scipy.special import comb

    k = np.array([comb(2 * width, i) for i in range(2 * width + 1)], dtype=np.float64)
    s = np.zeros((m, m))
    for i in range(m):
        lo, hi = max(0, i - width), min(m, i + width + 1)
        s[i, lo:hi] = k[lo - i + width:hi - i + width]
    return s / s.sum(axis=1, keepdims=True)


#: The widths :func:`smooth_ordered` chooses among (0: no smoothing): at most 1, so a peak (a count of 0 children,
#: a birth-year tail that carries the label) is never spread over more than its neighbours.
SMOOTHING_WIDTHS = (0, 1)


def _bin_widths(col) -> np.ndarray | None:
    """The widths of an ordered column's bins (its public edges), None for a categorical column."""
    if col.kind.value == "categorical" or col.edges is None:
        return None
    w = np.diff(np.asarray(col.edges, dtype=np.float64))
    return np.where(w > 0, w, 1.0)


def smooth_ordered(noisy: np.ndarray, ordered: int, std: float, width: int | None = None,
                   bin_widths: np.ndarray | None = None) -> np.ndarray:
    """An ordered column's noisy counts smoothed over neighbouring bins (post-processing of the release).

    The density of the first ``ordered`` counts (count / bin width, ``bin_widths`` from the schema's public
    edges; equal widths without them) is multiplied by a binomial-kernel smoother S of half-width ``width`` and
    turned back into counts: A = W·S·W⁻¹ on the counts (a missing code after the bins is left alone), so bins of
    unequal width (margins to the bounds, geometric edges) are smoothed as a density, not as an index. With
    ``width=None`` the width minimising Stein's unbiased risk estimate ‖y − Ay‖² + 2σ²·tr(A) is chosen from
    :data:`SMOOTHING_WIDTHS` (σ = ``std``, the public noise std per cell; the estimate reads only the noisy
    counts). Where the noise hides a bin (a tail bin of a small table) smoothing lends it its neighbours' density;
    where the counts stand clear of the noise (a peak at 0, a large table) the estimate keeps the width 0.
    """
    if ordered < 3:
        return noisy
    y = np.asarray(noisy[:ordered], dtype=np.float64)
    bw = np.ones(ordered) if bin_widths is None else np.asarray(bin_widths[:ordered], dtype=np.float64)
    widths = SMOOTHING_WIDTHS if width is None else (width,)
    best, best_risk = y, math.inf
    for h in widths:
        sm = _kernel_smoother(ordered, h) if h else np.eye(ordered)
        a = bw[:, None] * sm / bw[None, :]
        fit = a @ y
        risk = float(np.sum((y - fit) ** 2) + 2 * std * std * np.trace(a))
        if risk < best_risk:
            best, best_risk = fit, risk
    out = np.array(noisy, dtype=np.float64)
    out[:ordered] = best
    return out


def unimodal_fit(y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The weighted least-squares fit of ``y`` that rises to one mode and then falls, clipped at 0: every split
    point tried, a non-decreasing fit before it and a non-increasing one after (Stout's unimodal regression)."""
    from scipy.optimize import isotonic_regression  # pool adjacent violators

    y, w = np.asarray(y, dtype=np.float64), np.asarray(w, dtype=np.float64)
    best, best_rss = y, math.inf
    for k in range(1, len(y) + 1):
        up = isotonic_regression(y[:k], weights=w[:k]).x
        down = isotonic_regression(y[k:], weights=w[k:], increasing=False).x if k < len(y) else np.zeros(0)
        fit = np.concatenate([up, down])
        rss = float(np.sum(w * (y - fit) ** 2))
        if rss < best_rss:
            best, best_rss = fit, rss
    return np.clip(best, 0, None)


#: :func:`shape_ordered` keeps the unimodal fit when its residual is within this many standard deviations of
#: the chi-square mean that a unimodal truth leaves under the noise.
SHAPE_SLACK = 2.0


def shape_ordered(noisy: np.ndarray, ordered: int, std: float, bin_widths: np.ndarray | None = None) -> np.ndarray:
    """An ordered column's noisy counts with their inner bins replaced by the closest unimodal density, when the
    counts are consistent with one at the noise level (post-processing of the release).

    The first and last bin are left as released: the encoder clips a value outside the public bounds into them,
    so they hold the tails beyond the bounds as well as their own share of the density (a catch-all such as the
    oldest birth years can be a spike). The inner bins' density (count / public bin width) is fitted by weighted
    least squares with one rise and one fall (weights: bin width², the inverse variance of a density estimate)
    and turned back into counts. The fit is kept when its residual ‖y − ŷ‖² is at most σ²·(m + SHAPE_SLACK·√(2m))
    (m inner bins, σ = ``std``: the chi-square mean and spread a unimodal truth leaves under the noise); otherwise
    the counts are returned unchanged, so counts that stand clear of the noise keep a second mode they show.
    Where the noise hides the shape (a small table's tail), a bin the noise pushed up lends its excess to its
    neighbours (its spike is not kept as a cell of its own mass) and the tail's bins share one pooled level (a
    pooled level below zero is clipped to 0: the rare cell's shares then split that cell's mass evenly, not by
    how negative each noise draw was). Reads the noisy counts and the public noise std only; a missing code
    after the bins is left alone."""
    m = ordered - 2
    if m < 3 or std <= 0:
        return noisy
    y = np.asarray(noisy[1:ordered - 1], dtype=np.float64)
    bw = np.ones(m) if bin_widths is None else np.asarray(bin_widths[1:ordered - 1], dtype=np.float64)
    fit = unimodal_fit(y / bw, bw * bw) * bw
    if float(np.sum((y - fit) ** 2)) > std * std * (m + SHAPE_SLACK * math.sqrt(2 * m)):
        return noisy
    out = np.array(noisy, dtype=np.float64)
    out[1:ordered - 1] = fit
    return out


def split_noise(accountant: PrivacyAccountant, shares: dict[str, float], *,
                person_level: bool = False) -> dict[str, float]:
    """Noise multipliers σ_i = σ/√f_i for the fractions ``shares`` of one Gaussian σ that takes the rest of the
    budget; all planned on ``accountant`` (σ is raised by 0.5 % steps if numerical composition needs it).
    ``person_level``: multipliers of person-level sensitivities (the accountant records them as given)."""
    sigma = accountant.calibrate(sample_rate=1.0, steps=1, label=PAIRS_LABEL, person_level=person_level)
    for _ in range(40):
        sig = {label: sigma / math.sqrt(f) for label, f in shares.items()}
        try:
            for label, s in sig.items():
                accountant.plan(label, noise_multiplier=s, person_level=person_level)
            return sig
        except PrivacyBudgetExceededError:
            accountant.planned = [p for p in accountant.planned if p.label not in shares]
            sigma *= 1.005
    raise PrivacyBudgetExceededError("could not split the backbone's budget")


def pooled_total(estimates: list[tuple[float, float]]) -> float:
    """The minimum-variance combination of unbiased estimates (value, variance) of the row count: the released
    count and every noisy histogram's sum (post-processing; a histogram's sum is a count with noise σ²·cells)."""
    exact = [v for v, var in estimates if var <= 0]
    if exact:
        return max(1.0, exact[0])
    w = np.array([1.0 / var for _, var in estimates])
    return max(1.0, float(np.dot(w, [v for v, _ in estimates]) / w.sum()))


def match_prior(log_probs: np.ndarray, prior: np.ndarray, *, iters: int = 50) -> np.ndarray:
    """Row-wise probabilities softmax(log_probs + b) with one bias b per class chosen so that their mean is
    ``prior`` (a prior-shift correction: the task model ranks, the backbone's noisy marginal sets the base rate)."""
    b = np.zeros(log_probs.shape[1])
    target = np.clip(prior, 1e-12, None)
    for _ in range(iters):
        z = log_probs + b
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        b += np.log(target) - np.log(np.clip(p.mean(axis=0), 1e-12, None))
    return p


def kruskal(d: int, pairs: list[tuple[int, int]], scores: np.ndarray) -> list[tuple[int, int]]:
    """Maximum spanning tree (forest) of the complete graph on d columns weighted by ``scores``."""
    parent = list(range(d))

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    tree = []
    for i in np.argsort(-scores, kind="stable"):
        a, b = pairs[i]
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
            tree.append(pairs[i])
    return tree


class PGM(Synthesizer):
    """Marginal-based DP synthesizer (MST-style, Gaussian selection, Private-PGM) with an optional DP task model."""

    name = "pgm"
    config_class = PGMConfig

    def _fit(self, codes: np.ndarray, *, accountant: PrivacyAccountant) -> None:
        cfg: PGMConfig = self.config
        schema = self.schema_
        sizes = self.encoder_.sizes
        d, n = len(sizes), self.public_rows_  # n: public (the released noisy count), never len(codes)
        w = self._weights()
        # Per person (a declared privacy unit): the counts are person-weighted (each person's rows weigh c in
        # all, base._person_weights), so every measurement has person-level sensitivity c and is recorded as
        # such; without a unit, rw is None and c = 1.
        rw = getattr(self, "row_weights_", None) if cfg.person_weights else None
        person, c = (rw is not None), (self.unit_scale_ if rw is not None else 1.0)
        # the public rules read ε·n̂ as signal over noise; at the person level every measurement's noise is c
        # times a row-level one's with person weights, k times without (and the task model's, DP-SGD charged by
        # group privacy, k times): they read ε/c or ε/k
        eps_rule = accountant.target_epsilon / (c if person else accountant.rows_per_unit)
        a = cfg.domain_weights if cfg.domain_weights is not None else domain_weight_exponent(
            epsilon=eps_rule, public_rows=n, columns=d)
        w1 = [wj * k ** a for wj, k in zip(w, sizes, strict=True)]  # the one-way release's weights
        task = cfg.task == "on" or (cfg.task == "auto" and use_task_model(
            epsilon=accountant.target_epsilon / accountant.rows_per_unit, public_rows=n, has_target=schema.target is not None,
            feature_codes=sum(sizes[:-1]), columns=d, max_pairs_factor=cfg.max_pairs_factor))
        if task and schema.target is None:
            raise ConfigError(f"pgm task 'on' needs a target column; schema '{schema.name}' declares none")

        # Budget: the task model first (alone: task_share of what is left), planned; then the measurements.
        if task:
            from dpsyn.synth.dpsgd import steps_and_rate  # at call time: loading a fitted pgm needs no torch

            units, n_t, batch_t = self.dpsgd_units(cfg.task_batch_size)  # persons, with a privacy unit
            by_person = units is not None
            q_t, steps_t = steps_and_rate(n_t, batch_size=batch_t, epochs=cfg.task_epochs)
            left = 1 - accountant.epsilon(include_planned=True) / accountant.target_epsilon
            sigma_t = accountant.sigma_for_share(max(cfg.task_share * left, 1e-6), sample_rate=q_t, steps=steps_t,
                                                 person_level=by_person)
            accountant.plan(TASK_LABEL, noise_multiplier=sigma_t, sample_rate=q_t, steps=steps_t,
                            person_level=by_person)
        rule_share, rule_threshold = backbone_split(epsilon=eps_rule, public_rows=n, columns=d)
        one_share = rule_share if cfg.one_way_share is None else cfg.one_way_share
        threshold = rule_threshold if cfg.compress_threshold is None else cfg.compress_threshold
        star = schema.target is not None and d > 1 and (cfg.structure == "star" or (
            cfg.structure == "auto" and star_structure(epsilon=eps_rule, public_rows=n, columns=d)))
        independent = cfg.structure == "independent"
        select_share = 0.0 if star or independent else cfg.select_share
        pair_share = 1 - one_share - select_share
        if pair_share <= 0:
            raise ConfigError("one_way_share + select_share must be < 1")
        shares = {ONE_WAY_LABEL: one_share, SELECT_LABEL: select_share, PAIRS_LABEL: pair_share}
        sig = split_noise(accountant, {k: v for k, v in shares.items() if v > 0}, person_level=person)

        # 1. measure every one-way marginal; 2. compress
        std1 = [c * sig[ONE_WAY_LABEL] * math.sqrt(sum(x * x for x in w1)) / wj for wj in w1]
        noisy1 = [np.bincount(codes[:, j], weights=rw, minlength=k) + self.noise_.normal_numpy(k, std1[j])
                  for j, k in enumerate(sizes)]
        accountant.record(ONE_WAY_LABEL, noise_multiplier=sig[ONE_WAY_LABEL], sample_rate=1.0, steps=1,
                          person_level=person)
        shape = cfg.shape if cfg.shape != "auto" else (
            "unimodal" if small_table(epsilon=eps_rule, public_rows=n, columns=d) else "off")
        released1 = noisy1
        if shape == "unimodal":
            noisy1 = [shape_ordered(c, _ordered_codes(col), sj, _bin_widths(col))
                      for c, sj, col in zip(noisy1, std1, self.encoder_.columns, strict=True)]
        if cfg.smoothing != 0:
            noisy1 = [smooth_ordered(c, _ordered_codes(col), sj, cfg.smoothing, _bin_widths(col))
                      for c, sj, col in zip(noisy1, std1, self.encoder_.columns, strict=True)]
        # compression reads the release (which cells stand clear of the noise); the estimation, the rare cells'
        # shares and the selection's independent model read the shaped or smoothed counts
        comp = Compression(released1 if shape == "unimodal" else noisy1, [threshold * s for s in std1], std1,
                           shares=noisy1)
        csizes = comp.sizes
        cc = comp.compress(codes)

        # 3. select: noisy pair scores against the independent model, then post-processing; or the star
        chosen = [] if independent else [(j, d - 1) for j in range(d - 1)] if star else self._select_pairs(
            cc, noisy1, comp, w, sig, accountant, forced=[(j, d - 1) for j in range(d - 1)] if (
                schema.target is not None and not task and cfg.target_pairs) else [], weights=rw, scale=c)

        # 4. measure the chosen pairs (when none is worth its noise: the one-way marginals again, same release)
        cliques = chosen or [(j,) for j in range(d)]
        wq = [min(w[c] for c in q) for q in cliques]
        delta_p = math.sqrt(sum(x * x for x in wq))
        meas = []
        for q, wgt in zip(cliques, wq, strict=True):
            std = c * sig[PAIRS_LABEL] * delta_p / wgt
            counts = pair_counts(cc, csizes, q, weights=rw)
            meas.append((q, counts + self.noise_.normal_numpy(len(counts), std), std))
        accountant.record(PAIRS_LABEL, noise_multiplier=sig[PAIRS_LABEL], sample_rate=1.0, steps=1,
                          person_level=person)

        # 5. estimate (post-processing)
        one_way = [(noisy1[j], std1[j], comp.maps[j]) for j in range(d)]
        total = pooled_total([(float(n), self.public_rows_std_ ** 2)]
                             + [(float(c.sum()), s * s * len(c)) for c, s in zip(released1, std1, strict=True)]
                             + [(float(m.sum()), s * s * len(m)) for _, m, s in meas])
        iters = cfg.iters or estimation_iters(epsilon=eps_rule, public_rows=n, columns=d)
        to_noise = cfg.stopping == "noise" or (cfg.stopping == "auto" and noise_stopping(
            epsilon=eps_rule, public_rows=n, columns=d))
        self.model_: GraphicalModel = estimate_model(csizes, meas, total=total, iters=iters, one_way=one_way,
                                                     full_sizes=list(sizes),
                                                     min_iters=ITERS_SMALL if to_noise else None)
        self.compression_ = comp
        self.task_ = self._fit_task(codes, accountant, sigma_t, q_t, steps_t) if task else None
        self.training_ = {
            "noise_multipliers": sig, "pairs": [list(p) for p in chosen], "compressed_sizes": csizes, "iters": iters,
            "iters_run": self.model_.iters_run,
            "domain_weight_exponent": a, "shape": shape,
            "task": None if not task else {"noise_multiplier": sigma_t, "sample_rate": q_t, "steps": steps_t,
                                           "clipping_unit": "person" if by_person else "row"},
            "person_weight": c if person else None,
        }

    # -- mechanism steps ----------------------------------------------------------------------
    def _weights(self) -> list[float]:
        if self.config.field_weights == "none":
            return [1.0] * len(self.encoder_.sizes)
        from dpsyn.masking import tier_clip_weights

        tw = tier_clip_weights(self.schema_)
        return [float(tw[c.name]) for c in self.encoder_.columns]

    @staticmethod
    def _one_way_estimate(noisy: np.ndarray, comp: Compression, j: int) -> np.ndarray:
        """The compressed column's distribution from its noisy counts (clipped at 0, normalised)."""
        c = np.bincount(comp.maps[j], weights=np.clip(noisy, 0, None), minlength=comp.sizes[j])
        return c / c.sum() if c.sum() > 0 else np.full(comp.sizes[j], 1.0 / comp.sizes[j])

    def _select_pairs(self, cc, noisy1, comp, w, sig, accountant, *, forced, weights=None,
                      scale: float = 1.0) -> list[tuple[int, int]]:
        """Release every pair's score against the independent model (Gaussian, sensitivity √m; with person
        weights, c·√m: a person moves each score by at most c) and select."""
        csizes, d, n = comp.sizes, cc.shape[1], self.public_rows_
        pairs = all_pairs(d)
        p1 = [self._one_way_estimate(noisy1[j], comp, j) for j in range(d)]
        scores = np.array([np.abs(pair_counts(cc, csizes, (i, j), weights=weights)
                                  - n * np.outer(p1[i], p1[j]).ravel()).sum()
                           for i, j in pairs]) if pairs else np.zeros(0)
        if len(pairs):
            scores = scores + self.noise_.normal_numpy(len(pairs), scale * sig[SELECT_LABEL] * math.sqrt(len(pairs)))
        accountant.record(SELECT_LABEL, noise_multiplier=sig[SELECT_LABEL], sample_rate=1.0, steps=1,
                          person_level=weights is not None)
        return self._select(pairs, scores, csizes, w, scale * sig[PAIRS_LABEL], d, forced=forced)

    def _select(self, pairs, scores, csizes, w, sigma_p, d, *, forced=()) -> list[tuple[int, int]]:
        """Post-processing of the noisy scores: pairs worth their noise, the maximum spanning forest of those
        first (MST's tree), then the rest by score, within the pair and junction-tree caps.

        A pair is worth measuring when its score (its L1 distance from independence) exceeds the L1 error
        its own measurement would add, sqrt(2/π)·std·cells with std the per-cell noise of K + 1 pairs (AIM's
        penalty); on a small table or at a small ε few pairs pass, and their noise is smaller for it.
        """
        cfg: PGMConfig = self.config
        max_pairs = max(1, int(cfg.max_pairs_factor * max(d - 1, 1)))

        def worth(i: int, k: int) -> bool:
            a, b = pairs[i]
            std = sigma_p * math.sqrt(k) / min(w[a], w[b])  # unit weights: σ√K per cell
            return scores[i] > expected_abs_noise(std, csizes[a] * csizes[b])

        k_guess = max(d - 1, 1) + len(forced)
        ok = [i for i in range(len(pairs)) if worth(i, k_guess) or pairs[i] in forced]
        big = scores.max() + 1.0 if len(scores) else 1.0
        bonus = np.array([big if pairs[i] in forced else 0.0 for i in ok])  # forced pairs join the forest first
        tree = kruskal(d, [pairs[i] for i in ok], scores[ok] + bonus) if ok else []
        chosen = list(dict.fromkeys(list(forced) + tree))
        for i in np.argsort(-scores, kind="stable"):
            p = pairs[i]
            if len(chosen) >= max_pairs:
                break
            if p in chosen or not worth(i, len(chosen) + 1):
                continue
            if junction_tree_cells(csizes, chosen + [p]) > cfg.max_cells:
                continue
            chosen.append(p)
        return chosen

    def _fit_task(self, codes, accountant, sigma_t, q_t, steps_t):
        import torch

        from dpsyn.synth.classifier import train_classifier

        cfg: PGMConfig = self.config
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        torch.manual_seed(self.noise_.seed())
        sizes = self.encoder_.sizes
        units, public, batch = self.dpsgd_units(cfg.task_batch_size)  # per-person clipping with a privacy unit
        return train_classifier(
            codes, sizes[:-1], sizes[-1], hidden=cfg.task_hidden, accountant=accountant, noise=self.noise_,
            noise_multiplier=sigma_t, batch_size=batch, epochs=cfg.task_epochs,
            max_grad_norm=cfg.task_max_grad_norm, lr=cfg.task_lr, label=TASK_LABEL, public_rows=public,
            ema_decay=cfg.task_ema_decay, units=units)

    # -- sampling (post-processing) -----------------------------------------------------------
    def _sample_codes(self, n: int, *, rng: np.random.Generator) -> np.ndarray:
        cc = self.model_.sample(n, rng=rng)
        codes = self.compression_.decompress(cc, rng=rng)
        if self.task_ is not None and n:
            from dpsyn.synth.classifier import classifier_log_probs
            from dpsyn.synth.dpgen import _draw

            lp = classifier_log_probs(self.task_, codes[:, :-1], self.encoder_.sizes[:-1])
            w = self.config.label_mix
            if w > 0:
                lp = (1 - w) * lp + w * self._model_label_log_probs(cc)
            codes[:, -1] = _draw(match_prior(lp, self._label_marginal()), rng)
        return codes

    def log_likelihood(self, df: pd.DataFrame) -> np.ndarray:
        """log p(row) of each row of ``df`` under the fitted model (features and target; a rare cell's share of its
        merged cell included). For white-box audits (dpsyn.audit): post-processing of the fitted model."""
        if not hasattr(self, "model_"):
            raise NotFittedError("PGM is not fitted")
        codes = self.encoder_.encode(df)
        comp = self.compression_
        lp = self.model_.log_prob(comp.compress(codes))
        for j in range(codes.shape[1]):
            if len(comp.rare[j]):
                share = np.zeros(self.encoder_.sizes[j])
                share[comp.rare[j]] = comp.rare_p[j]
                is_rare = comp.maps[j][codes[:, j]] >= len(comp.kept[j])
                lp[is_rare] += np.log(np.maximum(share[codes[is_rare, j]], 1e-300))
        return lp

    def _label_marginal(self) -> np.ndarray:
        """The graphical model's distribution of the target (uncompressed codes)."""
        comp, j = self.compression_, len(self.encoder_.sizes) - 1
        pc = self.model_.marginal(j)
        p = np.zeros(self.encoder_.sizes[-1])
        p[comp.kept[j]] = pc[: len(comp.kept[j])]
        if len(comp.rare[j]):
            p[comp.rare[j]] = pc[-1] * comp.rare_p[j]
        return p

    def _model_label_log_probs(self, cc: np.ndarray) -> np.ndarray:
        """log p(y | x) of the graphical model, over the target's uncompressed codes."""
        lp_c = self.model_.target_log_probs(cc)
        comp, j = self.compression_, cc.shape[1] - 1
        k = self.encoder_.sizes[-1]
        out = np.full((len(cc), k), -np.inf)
        for code in range(k):
            c = comp.maps[j][code]
            share = 1.0 if c < len(comp.kept[j]) else comp.rare_p[j][list(comp.rare[j]).index(code)]
            out[:, code] = lp_c[:, c] + (np.log(share) if share > 0 else -np.inf)
        return out
