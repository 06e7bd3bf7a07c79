"""The noisy row counts of a run: one Gaussian release that makes every size-dependent quantity public.

A run's sample rates, step counts, synthetic row count and the validation gate's sensitivities all depend on
how many rows were read. Under the add/remove relation the exact count separates neighbours, so it is never
used or released: :func:`release_counts` releases the sizes of the disjoint groups of rows a run uses (the
training rows, and the holdout when there is one) with Gaussian noise. A row lies in exactly one group, so the
count vector has L2 sensitivity 1 and the release is the Gaussian mechanism ``(σ, 1.0, 1)`` on the run's
accountant (label :data:`COUNT_LABEL`). Everything computed from the noisy counts is post-processing.

Where a sensitivity needs a *lower* bound on a group's size (the gate's statistics move by at most 1/(n − 1)),
:meth:`NoisyCounts.lower_bound` gives L = n̂ − z·σ − 1 with z = Φ⁻¹(1 − p): the bound exceeds n − 1 with
probability at most p, and that probability was set aside from δ beforehand (``reserve_tail`` on the
accountant; the argument is in docs/privacy.md, "Noisy row counts").
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from dpsyn.errors import ConfigError
from dpsyn.privacy.accountant import PrivacyAccountant
from dpsyn.privacy.noise import NoiseSource

__all__ = ["COUNT_LABEL", "TAIL_SHARE", "CountPlan", "NoisyCounts", "plan_counts", "release_counts"]

COUNT_LABEL = "rows"
#: Share of the run's δ set aside for the lower bounds of the noisy counts (split over the groups).
TAIL_SHARE = 0.1


@dataclass(frozen=True)
class CountPlan:
    """What :func:`plan_counts` reserved: the groups, the noise multiplier and each lower bound's z."""

    groups: tuple[str, ...]
    noise_multiplier: float
    z: float | None  # None: no lower bounds (no tail δ reserved)


@dataclass(frozen=True)
class NoisyCounts:
    """Noisy sizes of disjoint groups of rows (a DP release) and the public rules derived from them."""

    values: dict[str, float]  # DP: n̂ per group
    noise_std: float  # public: σ (sensitivity 1)
    z: float | None = None  # public: the lower bounds' z (None: none were planned)
    extra: dict[str, float] = field(default_factory=dict)  # public additions (e.g. expected canaries)
    unit_sizes: list[float] | None = None  # DP: noisy histogram of training rows per person, 1..k (dpsyn.privacy.unit)

    def estimate(self, group: str | None = None) -> int:
        """A public row count: round(n̂) of ``group`` (all groups if None), at least 1; plus public additions."""
        value = sum(self.values.values()) if group is None else self.values[group]
        value += sum(self.extra.values()) if group in (None, "train") else 0.0
        return max(1, int(round(value)))

    def lower_bound(self, group: str) -> float:
        """L = n̂ − z·σ − 1: below the true size minus one except with the probability reserved from δ."""
        if self.z is None:
            raise ConfigError("these counts were released without lower bounds (plan_counts(..., lower_bounds=False))")
        return self.values[group] - self.z * self.noise_std - 1.0

    @classmethod
    def public(cls, **sizes: int) -> NoisyCounts:
        """Sizes that are already public knowledge (a registry the owner publishes; tests), used as is: no noise,
        lower bounds n − 1. A run never calls this on counts of the private rows: it releases them."""
        return cls(values={g: float(n) for g, n in sizes.items()}, noise_std=0.0, z=0.0)

    def with_extra(self, name: str, rows: float) -> NoisyCounts:
        """The same release with a public number of rows added to the training group (e.g. audit canaries)."""
        return NoisyCounts(self.values, self.noise_std, self.z, {**self.extra, name: float(rows)}, self.unit_sizes)

    def with_unit_sizes(self, sizes: list[float]) -> NoisyCounts:
        """The same release with the noisy rows-per-person histogram (a release of its own) beside it."""
        return NoisyCounts(self.values, self.noise_std, self.z, dict(self.extra), [float(x) for x in sizes])

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> NoisyCounts:
        return cls(values={k: float(v) for k, v in d["values"].items()}, noise_std=float(d["noise_std"]),
                   z=None if d.get("z") is None else float(d["z"]), extra=dict(d.get("extra", {})),
                   unit_sizes=None if d.get("unit_sizes") is None else [float(x) for x in d["unit_sizes"]])


def plan_counts(accountant: PrivacyAccountant, share: float, *, groups: tuple[str, ...] = ("train",),
                lower_bounds: bool = True, label: str = COUNT_LABEL) -> CountPlan:
    """Plan the count release on ``accountant``: σ costs ``share`` × ε alone. With ``lower_bounds``, first set aside
    :data:`TAIL_SHARE` of δ, split over the groups, for their lower bounds (call this before anything else is
    planned on the accountant)."""
    z = None
    if lower_bounds:
        tail = TAIL_SHARE * accountant.delta
        accountant.reserve_tail(tail)
        from scipy.stats import norm  # at call time: reading a config loads no scipy.stats

        z = float(norm.isf(tail / len(groups)))
    sigma = accountant.sigma_for_share(share)
    accountant.plan(label, noise_multiplier=sigma)
    return CountPlan(tuple(groups), sigma, z)


def release_counts(true_counts: dict[str, int], plan: CountPlan, *, accountant: PrivacyAccountant,
                   noise: NoiseSource, label: str = COUNT_LABEL) -> NoisyCounts:
    """n̂_g = n_g + N(0, σ²) for each group, recorded on ``accountant``. ``true_counts`` never leaves here."""
    if tuple(true_counts) != plan.groups:
        raise ValueError(f"counts of groups {sorted(true_counts)} but the plan is for {list(plan.groups)}")
    draws = noise.normal_numpy(len(true_counts), plan.noise_multiplier)
    values = {g: float(n) + float(d) for (g, n), d in zip(true_counts.items(), draws, strict=True)}
    accountant.record(label, noise_multiplier=plan.noise_multiplier, sample_rate=1.0, steps=1)
    if not all(math.isfinite(v) for v in values.values()):
        raise ValueError("noisy counts are not finite")
    return NoisyCounts(values, plan.noise_multiplier, plan.z)
