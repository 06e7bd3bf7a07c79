"""DP-SGD-S: group-specific clip bounds estimated privately during DP-SGD.

Standard DP-SGD clips every row's gradient at one bound C. DP-SGD-S (the
seed's fourth article) gives each group k (a categorical column: sex, race,
age band) its own bound C_k that follows a quantile of that group's gradient
norms. The seed computes the quantiles from the raw norms, which is a leak;
here they are estimated with the noisy-quantile method of Andrew et al.
(2021, "Differentially private learning with adaptive clipping"):

* each step releases, per group, the number of batch rows whose gradient norm
  is at most the group's tracked quantile Q_k and the number above it. Every
  row adds 1 to exactly one of these 2K counts, so the vector has L2
  sensitivity 1; Gaussian noise of std σ_b is added (:meth:`GroupClipper.update`);
* Q_k moves geometrically towards the target quantile γ:
  Q_k ← Q_k · exp(−η (f̃_k − γ)), f̃_k the noisy fraction at or below Q_k;
* the clip bound is an EMA of τ·Q_k, between a floor and a ceiling:
  C_k = clip(S_k, floor, ceiling), S_k ← β S_k + (1 − β) τ Q_k; a group whose noisy
  batch count is within three noise stds of zero keeps its Q_k that step (its
  fraction would be noise, and a random walk of Q_k would inflate max C_k and so
  everyone's noise);
* the gradient sum gets Gaussian noise of std σ_g · max_k C_k: a row of any
  group moves the clipped sum by at most C_{g(i)} ≤ max_k C_k;
* optionally (``compensate`` = κ > 0) more Gaussian noise, of variance
  κ · Σ_k ñ_k (max_j C_j² − C_k²) from the last noisy counts ñ_k: the sampling
  variance that tighter bounds take away from the other groups' cover is put
  back (extra noise whose scale depends on released values only);
* optionally (``rarity`` = r > 0) groups that are rare are clipped tighter:
  C_k ← C_k · min(1, (p̃_k / p_ref)^r), with p̃_k = Σ_t ñ_{k,t} / Σ_t Σ_j ñ_{j,t} the
  share of group k in all noisy batch counts released so far and p_ref = ``rare_share``.
  A rare group's one-hot coordinates get gradient from few rows, so the sampling
  variance that hides one of its rows is small and its membership risk is high.
  p̃_k is post-processing of counts already released and paid for: no extra budget.
* optionally (``size_share`` > 0) a one-off noisy histogram of group sizes is released before
  training (:func:`plan_group_sizes`, :func:`measure_group_sizes`): each row adds 1 to one
  count, so Gaussian noise of std σ_h (sensitivity 1) makes it one more Gaussian mechanism on
  the accountant, with σ_h chosen so that alone it would cost ``size_share`` × the run's ε.
  At small ε the batch counts (noise std σ_b ≫ a small group's batch count) estimate a rare
  group's share poorly; p̃_k then combines both estimates, weighted by their inverse noise
  variances (both computed from released values and public noise scales only).

Privacy: the counts and the clipped gradient sum of one step are one
subsampled Gaussian mechanism on the same Poisson batch; with noise
multipliers σ_g (gradient, relative to max C_k) and σ_b (counts) it is
equivalent to one Gaussian mechanism with
1/σ² = 1/σ_g² + 1/σ_b² (Andrew et al., Thm 1). The caller calibrates σ on
the accountant as for plain DP-SGD; :func:`split_noise` gives the share
``count_share`` of 1/σ² to the counts. The bounds C_k used at step t depend
only on noisy releases of steps < t, so adaptive composition applies.
Group labels only choose which bound clips a row; sampling stays plain
Poisson at one rate q for every row (no stratified batches), so the
accountant's subsampling assumption holds unchanged.

With a privacy unit (per-person clipping, ``units`` in ``train_dpsgd``) everything above holds with "person" for
"row". A person's group g(p) is the group of the person's *first* row in the table's order
(:func:`person_groups`): a function of that person's own rows, so adding or removing a person changes no one
else's group. Each step samples persons (Poisson, rate q), clips each sampled person's *summed* gradient to
C_{g(p)} ≤ max_k C_k (the Gaussian noise σ_g · max_k C_k covers one person), and releases the 2K counts over the
sampled persons (per-person norm at or below Q_{g(p)}, or above): one person adds 1 to exactly one count, L2
sensitivity 1. The step is then one subsampled Gaussian mechanism of multiplier σ at the person level (Andrew et
al., Thm 1, with persons as the examples), recorded with ``person_level=True``. The group-size histogram counts
persons per group (same rule, sensitivity 1 per person) and is planned and recorded with ``person_level=True``;
the rarity shares are then shares of persons.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SIZES_LABEL", "GroupClipConfig", "GroupClipper", "GroupSizes", "measure_group_sizes", "person_groups",
           "plan_group_sizes", "split_noise"]

SIZES_LABEL = "group_clip.sizes"


class GroupClipConfig(BaseModel):
    """Settings of DP-SGD-S (group-adaptive clipping).

    The defaults are the setting measured best on the fairness benchmark (benchmarks/results/fairness.md):
    equalize at strength 1, compensating noise κ = 0.03, rarity 0.5 under 10 % of the rows, floor 0.5 C_0.
    The seed's rule is ``rule="quantile", floor=0.05, compensate=0, rarity=0``.
    """

    model_config = ConfigDict(extra="forbid")

    column: str = Field(description="Categorical column whose values are the groups (a public encoding).")
    rule: Literal["quantile", "equalize"] = Field(
        default="equalize",
        description="quantile (the seed's rule; set floor 0.05, compensate 0, rarity 0 for the seed's setting): "
        "C_k = τ × group k's tracked quantile, noise at max C_k. "
        "equalize: C_k = C_0 · min(1, (median_j S_j / S_k)^strength): groups whose gradient norms run above the "
        "median are clipped tighter, the others keep C_0; noise at C_0 = max C_k.",
    )
    strength: float = Field(default=1.0, gt=0, le=4, description="Exponent of the equalize rule.")
    target_quantile: float = Field(default=0.75, gt=0, lt=1, description="γ: quantile of each group's norms tracked.")
    scale: float = Field(default=1.0, gt=0, description="τ: clip bound = τ × the tracked quantile.")
    quantile_lr: float = Field(default=0.2, gt=0, description="η: geometric step of the quantile update.")
    ema: float = Field(default=0.9, ge=0, lt=1, description="β: EMA smoothing of the clip bounds.")
    floor: float = Field(default=0.5, gt=0, description="Smallest clip bound (and tracked quantile), as a fraction of the "
                         "initial bound: 0.5 keeps the rarity factor from over-clipping the smallest groups.")
    ceiling: float = Field(default=4.0, ge=1, description="Largest tracked quantile and bound, as a multiple of the "
                           "initial bound: a small group's noisy counts must not walk its bound (and everyone's noise) "
                           "off to infinity.")
    count_share: float = Field(default=0.05, gt=0, lt=1,
                               description="Share of the step's noise precision 1/σ² spent on the noisy counts.")
    compensate: float = Field(
        default=0.03, ge=0,
        description="κ: add isotropic Gaussian noise of variance κ · Σ_k ñ_k (max_j C_j² − C_k²) to each step's "
        "gradient sum (ñ_k the last noisy batch counts): the sampling variance that tighter bounds remove from the "
        "other rows' view is put back. Extra noise, computed from released values only.")
    rarity: float = Field(
        default=0.5, ge=0, le=4,
        description="r: multiply C_k by min(1, (p̃_k / rare_share)^r), p̃_k the group's share of all noisy batch counts "
        "released so far (free post-processing). Groups rarer than rare_share are clipped tighter; 0 turns it off.")
    rare_share: float = Field(default=0.1, gt=0, lt=1,
                              description="p_ref: groups whose estimated share of rows is below it count as rare.")
    size_share: float = Field(
        default=0.0, ge=0, lt=1,
        description="Release a noisy histogram of group sizes once, before training, with noise that alone would "
        "cost this share of the run's ε (charged to the accountant; the training noise is calibrated to what is "
        "left). The rarity factor then estimates group shares from it as well as from the batch counts, from the first "
        "step on. Measured on Adult (benchmarks/results/fairness_sizes*.md): no gain at ε = 1, a further Δ cut by "
        "race at ε = 10 at an accuracy cost; hence off (0) by default.")


@dataclass(frozen=True)
class GroupSizes:
    """A released noisy histogram of group sizes: ``counts`` (true count + N(0, σ_h²)) and σ_h² (public)."""

    counts: np.ndarray
    variance: float


def plan_group_sizes(config: GroupClipConfig | None, accountant, *, label: str = SIZES_LABEL,
                     person_level: bool = False) -> float | None:
    """σ_h of the group-size histogram, planned on ``accountant`` (call before calibrating DP-SGD).

    None when there is no histogram (no ``config``, or ``size_share`` 0). ``person_level``: the histogram will
    count persons (:func:`measure_group_sizes` with ``units``), sensitivity 1 per person, so σ_h is sized and
    planned as is, without the privacy unit's row bound.
    """
    if config is None or not config.size_share:
        return None
    sigma = accountant.sigma_for_share(config.size_share, person_level=person_level)
    accountant.plan(label, noise_multiplier=sigma, person_level=person_level)
    return sigma


def person_groups(groups, units) -> np.ndarray:
    """Each person's group under DP-SGD-S with a privacy unit: the group of the person's first row in the order of
    the rows (``groups`` one code per row, ``units`` one person code 0 … P − 1 per row). A function of the person's
    own rows only. A code with no row gets −1."""
    groups = np.asarray(groups, dtype=np.int64)
    units = np.asarray(units, dtype=np.int64)
    if groups.shape != units.shape:
        raise ValueError(f"person_groups needs one group and one person code per row ({len(groups)} and {len(units)})")
    count = int(units.max()) + 1 if len(units) else 0
    first = np.full(count, len(units), dtype=np.int64)
    np.minimum.at(first, units, np.arange(len(units), dtype=np.int64))
    out = np.full(count, -1, dtype=np.int64)
    present = first < len(units)
    out[present] = groups[first[present]]
    return out


def measure_group_sizes(groups: np.ndarray, n_groups: int, sigma: float | None, *, accountant, noise,
                        label: str = SIZES_LABEL, units: np.ndarray | None = None) -> GroupSizes | None:
    """Release each group's row count plus N(0, σ²) and charge it (one Gaussian mechanism, L2 sensitivity 1).

    ``groups`` holds one code in 0 … n_groups − 1 per private row. ``sigma`` None (nothing planned): returns None
    and reads nothing. ``units`` (one person code per row; σ planned with ``person_level=True``): count *persons*
    per group instead, each person in the group of their first row (:func:`person_groups`), so one person adds 1
    to one count; recorded with ``person_level=True``.
    """
    if sigma is None:
        return None
    codes = np.asarray(groups, dtype=np.int64)
    if units is not None:
        codes = person_groups(codes, units)
        codes = codes[codes >= 0]
    true = np.bincount(codes, minlength=n_groups)[:n_groups].astype(float)
    counts = true + noise.normal_numpy(n_groups, sigma)
    accountant.record(label, noise_multiplier=sigma, sample_rate=1.0, steps=1, person_level=units is not None)
    return GroupSizes(counts=counts, variance=float(sigma) ** 2)


def split_noise(sigma: float, count_share: float) -> tuple[float, float]:
    """(σ_g, σ_b) with 1/σ_g² + 1/σ_b² = 1/σ² and 1/σ_b² = count_share/σ²."""
    return sigma / math.sqrt(1.0 - count_share), sigma / math.sqrt(count_share)


def float32_floor(x) -> np.ndarray:
    """``x`` as float32, each value the largest float32 not above it."""
    x = np.asarray(x, dtype=np.float64)
    f = x.astype(np.float32)
    return np.where(f.astype(np.float64) > x, np.nextafter(f, np.float32(-np.inf)), f).astype(np.float32)


class GroupClipper:
    """State of DP-SGD-S for ``n_groups`` groups; see the module docstring.

    Parameters
    ----------
    n_groups : int
        Number of groups (codes 0 … n_groups − 1).
    initial_bound : float
        C_0: starting value of every Q_k and C_k.
    config : GroupClipConfig
    sizes : GroupSizes, optional
        The released group-size histogram (``config.size_share`` > 0), used by the rarity factor's shares.
    """

    def __init__(self, n_groups: int, initial_bound: float, config: GroupClipConfig, sizes: GroupSizes | None = None):
        if sizes is not None and len(sizes.counts) != n_groups:
            raise ValueError(f"the group-size histogram has {len(sizes.counts)} groups, the clipper {n_groups}")
        self.config = config
        self.n_groups = int(n_groups)
        self.initial_bound = float(initial_bound)
        self.quantiles = np.full(self.n_groups, float(initial_bound))
        self.smoothed = self.quantiles * config.scale
        self.min_bound = config.floor * float(initial_bound)
        self.history: list[np.ndarray] = []
        self._counts = np.zeros(self.n_groups)  # last noisy batch count per group (released)
        self._count_sums = np.zeros(self.n_groups)  # Σ over steps of the released noisy counts (unbiased)
        self._sums_variance = 0.0  # noise variance of each entry of _count_sums (public: steps × 2σ_b²)
        self.sizes = sizes

    def shares(self) -> np.ndarray:
        """p̃_k: each group's estimated share of the rows (uniform before anything is released).

        From the noisy batch counts released so far and, when there is one, the noisy size histogram: each
        estimate's noise variance (of the share, to first order: count variance / total²) weights it inversely.
        """
        estimates = []
        for values, var in ((self._count_sums, self._sums_variance),
                            (None, 0.0) if self.sizes is None else (self.sizes.counts, self.sizes.variance)):
            if values is None:
                continue
            v = np.maximum(values, 0.0)
            if v.sum() > 0:
                estimates.append((v / v.sum(), max(var, 1e-12) / v.sum() ** 2))
        if not estimates:
            return np.full(self.n_groups, 1.0 / self.n_groups)
        if len(estimates) == 1:
            return estimates[0][0]
        weights = np.array([1.0 / var for _, var in estimates])
        return sum(w * p for w, (p, _) in zip(weights, estimates, strict=True)) / weights.sum()

    @property
    def bounds(self) -> np.ndarray:
        """C_k for every group."""
        cfg = self.config
        if cfg.rule == "equalize":
            ratio = np.median(self.smoothed) / np.maximum(self.smoothed, 1e-12)
            b = self.initial_bound * np.minimum(1.0, ratio ** cfg.strength)
        else:
            b = np.minimum(self.smoothed, cfg.ceiling * self.initial_bound)
        if cfg.rarity:
            b = b * np.minimum(1.0, self.shares() / cfg.rare_share) ** cfg.rarity
        return np.maximum(b, self.min_bound)

    def row_bounds(self, groups: torch.Tensor) -> torch.Tensor:
        """C_{g(i)} for each row of a batch (or each person of a batch, ``groups`` then one code per person), as
        float32 rounded *down*: a bound rounded to the nearest float32 can exceed the float64 bound the noise is
        scaled to (0.1 becomes 0.10000000149), and a row would then move the sum by more than the noise covers."""
        return torch.from_numpy(float32_floor(self.bounds))[groups]

    def max_bound(self) -> float:
        return float(self.bounds.max())

    def extra_noise_std(self) -> float:
        """Std of the compensating noise (0 unless ``compensate``); released values only."""
        if not self.config.compensate:
            return 0.0
        b = self.bounds
        return float(np.sqrt(self.config.compensate * (self._counts * (b.max() ** 2 - b ** 2)).sum()))

    def noise_std(self, grad_sigma: float) -> float:
        """Std of the Gaussian noise on the step's clipped sum: σ_g · max_k C_k, which the guarantee needs,
        combined with the compensating noise (independent Gaussians: variances add). Never below σ_g · max_k C_k."""
        return math.hypot(grad_sigma * self.max_bound(), self.extra_noise_std())

    def update(self, norms: torch.Tensor, groups: torch.Tensor, *, sigma_b: float, noise) -> None:
        """One noisy-quantile step from a batch's per-row gradient norms (before clipping), or with a privacy unit
        its per-person norms (of each person's summed gradient) and the persons' groups: one entry per sampled row
        or person, each counted once.

        Releases the 2K counts (at or below / above Q_k per group) with N(0, σ_b²) each.
        """
        if len(norms) != len(groups):
            raise ValueError(f"update needs one group per norm ({len(norms)} norms, {len(groups)} groups)")
        g = groups.numpy()
        below = norms.detach().numpy() <= self.quantiles[g]
        counts = np.zeros((2, self.n_groups))
        np.add.at(counts[0], g[below], 1.0)
        np.add.at(counts[1], g[~below], 1.0)
        self._step(counts + noise.normal_numpy(2 * self.n_groups, sigma_b).reshape(2, self.n_groups), sigma_b)

    def skip(self, *, sigma_b: float, noise) -> None:
        """An empty batch: release the same noisy counts (all zero before noise)."""
        self._step(noise.normal_numpy(2 * self.n_groups, sigma_b).reshape(2, self.n_groups), sigma_b)

    def _step(self, noisy: np.ndarray, sigma_b: float) -> None:
        cfg = self.config
        below, above = np.maximum(noisy[0], 0.0), np.maximum(noisy[1], 0.0)
        total = below + above
        self._counts = total
        self._count_sums += noisy.sum(axis=0)
        self._sums_variance += 2.0 * sigma_b**2
        # a group whose noisy batch count is within 3 noise stds of 0 keeps its quantile: its fraction is noise
        enough = total >= max(1.0, 3.0 * np.sqrt(2.0) * sigma_b)
        frac = np.where(enough, below / np.maximum(total, 1.0), cfg.target_quantile)
        q = self.quantiles * np.exp(-cfg.quantile_lr * (frac - cfg.target_quantile))
        self.quantiles = np.clip(q, self.min_bound, cfg.ceiling * self.initial_bound)
        self.smoothed = cfg.ema * self.smoothed + (1 - cfg.ema) * cfg.scale * self.quantiles
        self.history.append(self.bounds.copy())

    def summary(self, labels: list[str] | None = None) -> dict:
        """Final bounds per group, the largest bound seen (the noise scale's maximum), and the settings in effect."""
        labels = labels or [str(i) for i in range(self.n_groups)]
        peak = float(np.max(self.history)) if self.history else self.max_bound()
        out = {"final_bounds": dict(zip(labels, map(float, self.bounds), strict=True)), "max_bound_seen": peak,
               "steps": len(self.history), "settings": self.config.model_dump(exclude={"column"})}
        if self.sizes is not None:
            # released values (noisy counts) and public noise scale only; the shares used by the rarity factor
            out["sizes_noise_std"] = math.sqrt(self.sizes.variance)
            out["final_shares"] = dict(zip(labels, map(float, self.shares()), strict=True))
        return out
