"""One privacy accountant per run: every mechanism that reads private rows charges it.

:class:`PrivacyAccountant` wraps an Opacus accountant (``prv`` by default,
or ``rdp``) and keeps a labelled ledger beside its history, so the budget
split is visible (which mechanism spent what). Every mechanism is a
(subsampled) Gaussian mechanism, recorded as ``(noise_multiplier,
sample_rate, steps)``:

* a DP-SGD run is ``(σ, q, T)`` with Poisson sample rate ``q``;
* a one-shot Gaussian release with L2 sensitivity Δ and noise std σΔ is
  ``(σ, 1.0, 1)``.

**The privacy unit.** With ``rows_per_unit`` k > 1 (a declared person column whose rows are bounded to k per
person before any read), the guarantee is for adding or removing one person with all their rows. Mechanisms
still state their row-level noise: a release with noise std σΔ on a row-level L2 sensitivity Δ has person-level
sensitivity at most kΔ (a person is k rows added one at a time), and a DP-SGD step with per-row clipping and
row sampling rate q includes some of a person's rows with probability 1 − (1 − q)^k and moves the clipped sum by
at most kC. The ledger records each mechanism at the person level, ``(σ/k, 1 − (1 − q)^k, T)``; a mechanism whose
sensitivity is already per person (``person_level=True``: the rows-per-person histogram) is recorded as given.
docs/privacy.md "The privacy unit" has the argument.

Noise is calibrated *before* a mechanism runs (:meth:`calibrate`), against
the target ε given what was already spent and what is planned for later in
the run (:meth:`plan`), so the total stays ≤ the target. :meth:`check`
raises :class:`PrivacyBudgetExceededError` on any overspend.
"""

from __future__ import annotations

import functools
import logging
import math
import warnings
from dataclasses import asdict, dataclass

import numpy as np

from dpsyn.errors import ConfigError, PrivacyBudgetExceededError, UnknownComponentError

__all__ = ["NEIGHBOURING", "Mechanism", "PrivacyAccountant", "analytic_gaussian_epsilon", "gaussian_epsilon",
           "list_accountants", "neighbouring_relation"]

logger = logging.getLogger(__name__)

#: The neighbouring relation of a run without a declared privacy unit (docs/privacy.md).
NEIGHBOURING = "add/remove one row"


def neighbouring_relation(unit: str | None = None, rows_per_unit: int = 1) -> str:
    """The relation a guarantee is stated for: one row, or one person (``unit`` names its column) with all of
    their rows, at most ``rows_per_unit`` after the contribution bound."""
    if unit is None:
        return NEIGHBOURING
    return f"add/remove one person ({unit}) with all their rows (at most {rows_per_unit} per person)"

_ACCOUNTANTS = ("prv", "rdp")
_CALIBRATION_SLACK = 2e-3  # calibrate() aims at (1 − this) × the target ε
_EPS_TOL = 1e-9
_RDP_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)) + list(range(64, 1024, 16)) + [
    1024, 2048, 4096, 8192, 16384,
]

#: The RDP orders of the σ searches' PRV domain bound: a subset of Opacus' default orders (so the bound is never
#: below Opacus' and the domain never narrower): every integer order (closed-form RDP for the subsampled
#: Gaussian) and 4 of its 90 fractional ones. The fractional orders' series costs 2 ms to 0.9 s per order and σ,
#: most near 1 and for large σ (0.9 s at 1.1 for σ = 4096, q = 0.5). Measured on compositions of 1-2 entries: the
#: domain is as wide as Opacus' where σ ≥ 0.7 and up to 1.8x wider at σ = 0.5 over 3,000 steps (ε in the hundreds).
_DOMAIN_ORDERS = (1.5, 1.8, 2.5, 3.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, *map(float, range(12, 64)))


def list_accountants() -> list[str]:
    return list(_ACCOUNTANTS)


@dataclass(frozen=True)
class Mechanism:
    """One entry of the ledger: a (subsampled) Gaussian mechanism applied ``steps`` times."""

    label: str
    noise_multiplier: float
    sample_rate: float
    steps: int

    def as_tuple(self) -> tuple[float, float, int]:
        return (float(self.noise_multiplier), float(self.sample_rate), int(self.steps))


def _make(name: str, *, search: bool = False):
    """A fresh Opacus accountant ``name``; ``search``: the PRV variant the σ searches use (:func:`_search_dprv`)."""
    if name not in _ACCOUNTANTS:
        raise UnknownComponentError(f"unknown accountant '{name}'; choose one of: {', '.join(_ACCOUNTANTS)}")
    from opacus.accountants import PRVAccountant, create_accountant

    if name != "prv":
        return create_accountant(mechanism=name)

    class _MemoisedPRV(PRVAccountant):
        """Opacus' PRV accountant with its domain bound's RDP curves memoised: the same arithmetic, so the same
        ε to the last bit (tests/unit/privacy/test_accountant_memo.py), without recomputing a subsampled
        Gaussian's fractional-order RDP for every entry twice per call and again on every calibration step."""

        domain_orders: tuple[float, ...] | None = None  # RDP orders of the domain bound (None: Opacus' own)

        def _get_domain(self, prvs, num_self_compositions, eps_error, delta_error):
            from opacus.accountants.analysis.prv import Domain

            entries = [(p.noise_multiplier, p.sample_rate, t) for p, t in zip(prvs, num_self_compositions, strict=True)]
            total = sum(num_self_compositions)
            orders = self.domain_orders
            big_l = max(_rdp_epsilon(entries, delta_error / 4, orders),
                        *(_rdp_epsilon([(s, q, 1)], delta_error / (8 * total), orders) for s, q, _ in entries))
            big_l = max(big_l, eps_error) + 3
            mesh_size = eps_error / np.sqrt(total * np.log(12 / delta_error) / 2)
            return Domain.create_aligned(-big_l, big_l, mesh_size)

    class _SearchPRV(_MemoisedPRV):
        """For the σ searches only: Opacus' discretisation with each truncated PRV's mean by quadrature in the
        Gaussian's own coordinate (:func:`truncated_prv_mean`) instead of adaptive quadrature of its CDF, and the
        domain's RDP bound over a subset of Opacus' orders (:data:`_DOMAIN_ORDERS`). An RDP ε minimised over
        fewer orders is still a valid bound, only never smaller, so the domain is at least as wide as Opacus'
        (as safe; a little more work): what it saves is most fractional orders of a subsampled Gaussian, a
        Python series that cost 1-4 s per new σ at q = 0.5 (most of the gate's DP-SGD plan's search)."""

        domain_orders = _DOMAIN_ORDERS

        def _get_dprv(self, eps_error, delta_error):
            return _search_dprv(self, self.history, eps_error, delta_error)

    return _SearchPRV() if search else _MemoisedPRV()


def _search_dprv(acct, history, eps_error: float, delta_error: float):
    """What Opacus' ``PRVAccountant._get_dprv`` builds (same domain, same discretisation, same composition), except
    that each truncated PRV's continuous mean, which shifts its discretised copy, comes from
    :func:`truncated_prv_mean`. Opacus computes it by ``scipy.integrate.quad`` over the CDF (~90 % of a
    composition's time: 0.2-0.3 s per entry)."""
    from opacus.accountants.analysis.prv import (
        DiscretePRV,
        PoissonSubsampledGaussianPRV,
        TruncatedPrivacyRandomVariable,
        compose_heterogeneous,
    )

    prvs = [PoissonSubsampledGaussianPRV(q, s) for s, q, _ in history]
    counts = [t for _, _, t in history]
    domain = acct._get_domain(prvs=prvs, num_self_compositions=counts, eps_error=eps_error, delta_error=delta_error)
    dprvs = []
    for prv in prvs:  # opacus.accountants.analysis.prv.discretize, but for the continuous mean
        tprv = TruncatedPrivacyRandomVariable(prv, domain.t_min, domain.t_max)
        ts = domain.ts
        pmf = tprv.cdf(ts + domain.dt / 2) - tprv.cdf(ts - domain.dt / 2)
        shift = truncated_prv_mean(prv.sample_rate, prv.noise_multiplier, domain.t_min, domain.t_max,
                                   float(tprv._remaining_mass)) - float(np.dot(ts, pmf))
        if abs(shift) >= domain.dt / 2:
            raise RuntimeError("Discrete mean differs significantly from continuous mean.")
        dprvs.append(DiscretePRV(pmf=pmf, domain=domain.shift_right(shift)))
    return compose_heterogeneous(dprvs=dprvs, num_self_compositions=counts)


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(16)


def truncated_prv_mean(sample_rate: float, noise_multiplier: float, t_min: float, t_max: float, mass: float) -> float:
    """E[L | t_min < L ≤ t_max] for the privacy loss L of the Poisson-subsampled Gaussian mechanism (rate q, noise
    multiplier σ), ``mass`` = P(t_min < L ≤ t_max) as Opacus' CDF gives it.

    Opacus' CDF (Gopi et al. 2021, Prop. B4) says L = log(1 − q + q·e^Y) with Y a mixture: N(1/(2σ²), 1/σ²) with
    weight q and N(−1/(2σ²), 1/σ²) with weight 1 − q. So the truncated mean is a smooth integral over Y: on
    [z(t_min), z(t_max)] (z the inverse of Y ↦ L) within 40 standard deviations of each component's mean
    (beyond: mass below e^-800), by 16-point Gauss–Legendre on pieces half a standard deviation wide. Opacus
    integrates the CDF of L instead, whose approach to 0 at t = log(1 − q) is not smooth for small σ; on a grid
    of σ ∈ [0.3, 1000], q ∈ [1e-4, 1], |t| ≤ 150 the two agree to 1e-7 (tests/unit/privacy/test_search_prv.py)
    and where they differ it is quad's value that moves with a truncation that holds no mass."""
    q, s = float(sample_rate), float(noise_multiplier)

    def z_of(t: float) -> float:  # L ≤ t  ⟺  Y ≤ z_of(t)
        if q >= 1.0:
            return t
        c = math.log1p(-q)
        if t <= c:
            return -math.inf
        return t + math.log(-math.expm1(c - t)) - math.log(q)

    lo, hi = z_of(t_min), z_of(t_max)
    total = 0.0
    for w, mu in ((q, 0.5 / s**2), (1.0 - q, -0.5 / s**2)):
        a, b = max(lo, mu - 40 / s), min(hi, mu + 40 / s)
        if w <= 0 or not a < b:
            continue
        edges = np.linspace(a, b, max(1, math.ceil((b - a) * s / 0.5)) + 1)
        half = (edges[1:] - edges[:-1]) / 2
        y = (edges[1:] + edges[:-1])[:, None] / 2 + half[:, None] * _GL_NODES[None, :]
        density = s * np.exp(-((s * (y - mu)) ** 2) / 2) / math.sqrt(2 * math.pi)
        loss = y if q >= 1.0 else np.logaddexp(math.log1p(-q), math.log(q) + y)
        total += w * float(np.sum(half * ((loss * density) @ _GL_WEIGHTS)))
    return total / mass


@functools.lru_cache(maxsize=8192)
def _rdp_per_step(sigma: float, q: float, orders: tuple[float, ...] | None):
    """One step's RDP of the subsampled Gaussian at ``orders`` (None: Opacus' default orders)."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis import rdp

    curve = rdp.compute_rdp(q=q, noise_multiplier=sigma, steps=1,
                            orders=RDPAccountant.DEFAULT_ALPHAS if orders is None else list(orders))
    curve.setflags(write=False)
    return curve


def _rdp_epsilon(entries, delta: float, orders: tuple[float, ...] | None) -> float:
    """What Opacus' ``RDPAccountant(history=entries).get_epsilon(delta, alphas=orders)`` returns, from memoised
    per-step curves (``compute_rdp(steps=T)`` is the one-step curve times T, summed in history order)."""
    from opacus.accountants import RDPAccountant
    from opacus.accountants.analysis import rdp

    total = sum([_rdp_per_step(float(s), float(q), orders) * t for s, q, t in entries])
    with warnings.catch_warnings():  # optimum at the largest order (a very noisy mechanism): the bound there is
        # still an upper bound on ε, only not the tightest one; nothing for a user to act on
        warnings.filterwarnings("ignore", message="Optimal order is the largest alpha", category=UserWarning)
        eps, _ = rdp.get_privacy_spent(orders=RDPAccountant.DEFAULT_ALPHAS if orders is None else list(orders),
                                       rdp=total, delta=delta)
    return float(eps)


def _epsilon_of(name: str, entries: list[tuple[float, float, int]], delta: float) -> float:
    """ε of a composition of (σ, q, T) entries at δ (memoised: calibration asks the same questions many times)."""
    return _epsilon_of_cached(name, tuple((float(s), float(q), int(t)) for s, q, t in entries), float(delta))


def _search_epsilon_of(name: str, entries: list[tuple[float, float, int]], delta: float) -> float:
    """:func:`_epsilon_of` for the σ searches only, memoised across processes (:mod:`dpsyn.privacy.memo`: a wrong
    memo can only move the search's answer; every budget check composes afresh and refuses an overspend)."""
    from dpsyn.privacy.memo import memoised

    return memoised(functools.partial(_epsilon_of_cached, search=True), name,
                    tuple((float(s), float(q), int(t)) for s, q, t in entries), float(delta))


@functools.lru_cache(maxsize=4096)
def _epsilon_of_cached(name: str, entries: tuple[tuple[float, float, int], ...], delta: float, *,
                       search: bool = False) -> float:
    if not entries:
        return 0.0
    acct = _make(name, search=search)
    acct.history = list(entries)
    try:
        if name == "rdp":
            # Opacus' default orders stop at 63, which cannot certify ε below ~0.2 at δ=1e-5.
            return _rdp_epsilon(entries, delta, tuple(_RDP_ORDERS))
        with np.errstate(divide="ignore", invalid="ignore"):  # PRV's log(1 − q) at q = 1: the branch np.where drops
            return float(acct.get_epsilon(delta=delta))
    except (MemoryError, OverflowError, ValueError):
        # PRV's discretisation blows up for very small σ: such a mechanism is far over any budget.
        return math.inf


def analytic_gaussian_epsilon(noise_multiplier: float, *, delta: float) -> float:
    """The exact ε of one Gaussian release at δ (Balle & Wang 2018, Thm 8): the smallest ε with
    Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ) ≤ δ for noise σ·Δ on sensitivity Δ. Used to size a single release's
    share; composition stays with the run's accountant, whose bound is never below this."""
    from scipy.special import log_ndtr, ndtr  # the ufuncs behind scipy.stats.norm, without its per-call overhead

    s = float(noise_multiplier)

    def excess(eps: float) -> float:
        return float(ndtr(0.5 / s - eps * s) - math.exp(eps + log_ndtr(-0.5 / s - eps * s))) - delta

    if excess(0.0) <= 0:
        return 0.0
    lo, hi = 0.0, 1.0
    while excess(hi) > 0:
        lo, hi = hi, hi * 2
        if hi > 1e4:
            return math.inf
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if excess(mid) <= 0 else (mid, hi)
    return hi


def gaussian_epsilon(noise_multiplier: float, *, delta: float, accountant: str = "prv") -> float:
    """ε of one Gaussian release with the given noise multiplier."""
    return _epsilon_of(accountant, [(noise_multiplier, 1.0, 1)], delta)


class PrivacyAccountant:
    """Owns the privacy budget of one run.

    Parameters
    ----------
    epsilon, delta : float
        The run's target (ε, δ): the whole release is (ε, δ)-DP under :data:`NEIGHBOURING`. Mechanisms are
        composed at ``mechanism_delta`` = δ minus the *tail* δ that high-probability bounds reserved
        (:meth:`reserve_tail`, e.g. the lower bound on a noisy row count that sets a sensitivity); with no
        tail, at δ itself.
    accountant : {"prv", "rdp"}
        Opacus accountant used for composition.
    unit, rows_per_unit : str or None, int
        The privacy unit's column and the public bound on its rows (module docstring); None: one row.
    """

    def __init__(self, *, epsilon: float, delta: float, accountant: str = "prv", unit: str | None = None,
                 rows_per_unit: int = 1, relation: str | None = None):
        if not (epsilon > 0 and math.isfinite(epsilon)):
            raise ConfigError(f"epsilon must be a positive number, got {epsilon}")
        if not (0 < delta < 1):
            raise ConfigError(f"delta must be in (0, 1), got {delta}")
        if accountant not in _ACCOUNTANTS:  # checked here without importing Opacus (_make raises the error)
            _make(accountant)
        if int(rows_per_unit) != rows_per_unit or rows_per_unit < 1 or (unit is None and rows_per_unit != 1):
            raise ConfigError(f"rows_per_unit must be a whole number ≥ 1 with a named unit, got {rows_per_unit}")
        self.unit = unit
        self.rows_per_unit = int(rows_per_unit)
        self.target_epsilon = float(epsilon)
        self.delta = float(delta)
        self.tail_delta = 0.0
        self.name = accountant
        self.ledger: list[Mechanism] = []
        self.planned: list[Mechanism] = []
        self._person_level: set[str] = set()  # labels recorded or planned with person_level=True
        # a relation stated by the caller (a dataset of related tables: every mechanism is recorded person_level)
        self.relation = relation

    @property
    def neighbouring(self) -> str:
        return self.relation or neighbouring_relation(self.unit, self.rows_per_unit)

    def planned_noise(self, label: str) -> float | None:
        """The row-level noise multiplier (as :meth:`plan` was given it) of planned mechanism ``label``, or None."""
        for m in self.planned:
            if m.label == label:
                return m.noise_multiplier * (1 if label in self._person_level else self.rows_per_unit)
        return None

    def _unit_level(self, noise_multiplier: float, sample_rate: float, person_level: bool) -> tuple[float, float]:
        """A mechanism's row-level (σ, q) as the person-level pair the ledger composes (module docstring)."""
        k = self.rows_per_unit
        if person_level or k == 1:
            return float(noise_multiplier), float(sample_rate)
        q = 1.0 if sample_rate >= 1.0 else -math.expm1(k * math.log1p(-sample_rate))
        return float(noise_multiplier) / k, min(1.0, q)

    @property
    def mechanism_delta(self) -> float:
        """The δ at which the recorded mechanisms are composed: δ less the reserved tail."""
        return self.delta - self.tail_delta

    def reserve_tail(self, probability: float) -> float:
        """Set aside ``probability`` of δ for an event of at most that probability under which a later
        mechanism's stated sensitivity may fail (a noisy count's lower bound exceeding the true count).
        Call before any calibration: ε is computed at the δ that remains. Returns the tail reserved so far."""
        if not (0 < probability and self.tail_delta + probability <= self.delta / 2):
            raise ConfigError(f"a tail of δ {probability:g} does not fit in δ={self.delta:g} (at most half of it)")
        if self.ledger or self.planned:
            raise ConfigError("reserve the tail δ before any mechanism is planned or recorded")
        self.tail_delta += float(probability)
        return self.tail_delta

    # -- what has been spent ------------------------------------------------------------
    def history(self) -> list[tuple[float, float, int]]:
        return [m.as_tuple() for m in self.ledger]

    def epsilon(self, *, include_planned: bool = False) -> float:
        """ε spent so far at ``self.delta`` (optionally with the planned mechanisms)."""
        entries = self.history() + ([m.as_tuple() for m in self.planned] if include_planned else [])
        return _epsilon_of(self.name, entries, self.mechanism_delta)

    def remaining(self) -> float:
        return max(0.0, self.target_epsilon - self.epsilon())

    def record(self, label: str, *, noise_multiplier: float, sample_rate: float, steps: int,
               person_level: bool = False) -> Mechanism:
        """Record a mechanism that has run, with its row-level noise multiplier and sample rate (the ledger keeps
        the unit-level pair; ``person_level``: already per person). Consumes a matching planned entry."""
        if noise_multiplier <= 0:
            raise PrivacyBudgetExceededError(f"mechanism '{label}' has no noise (noise_multiplier={noise_multiplier})")
        if not (0 < sample_rate <= 1) or steps < 0:
            raise ConfigError(f"mechanism '{label}': sample_rate must be in (0, 1] and steps ≥ 0")
        m = Mechanism(label, *self._unit_level(noise_multiplier, sample_rate, person_level), int(steps))
        self.planned = [p for p in self.planned if p.label != label]
        if steps > 0:
            self.ledger.append(m)
        logger.info("privacy: %s σ=%.4g q=%.4g steps=%d", label, noise_multiplier, sample_rate, steps)
        return m

    def check(self) -> float:
        """Return ε spent; raise :class:`PrivacyBudgetExceededError` if it exceeds the target."""
        eps = self.epsilon()
        if eps > self.target_epsilon + _EPS_TOL:
            raise PrivacyBudgetExceededError(
                f"spent ε={eps:.4f} exceeds the target ε={self.target_epsilon:g} at δ={self.delta:g}"
            )
        return eps

    # -- planning and calibration -------------------------------------------------------
    def plan(self, label: str, *, noise_multiplier: float, sample_rate: float = 1.0, steps: int = 1,
             person_level: bool = False) -> Mechanism:
        """Declare a mechanism that will run later in this run, so calibration leaves room for it (row-level σ
        and q, as :meth:`record` takes them)."""
        m = Mechanism(label, *self._unit_level(noise_multiplier, sample_rate, person_level), int(steps))
        if person_level:
            self._person_level.add(label)
        self.planned = [p for p in self.planned if p.label != label] + [m]
        if self.epsilon(include_planned=True) > self.target_epsilon + _EPS_TOL:
            self.planned.pop()
            raise PrivacyBudgetExceededError(
                f"planned mechanism '{label}' does not fit in the remaining budget of ε={self.target_epsilon:g}"
            )
        return m

    def sigma_for_share(self, share: float, *, sample_rate: float = 1.0, steps: int = 1,
                        person_level: bool = False) -> float:
        """Noise multiplier of a mechanism that alone costs ``share`` × the target ε.

        The default is one Gaussian release, sized with its exact ε (:func:`analytic_gaussian_epsilon`: PRV's
        discretisation error, 0.01 in ε, would swamp the small shares of small budgets); give ``sample_rate`` and
        ``steps`` for DP-SGD. Only the size of the share uses this: every check of the budget composes the whole
        history with the run's accountant.
        """
        if not 0 < share < 1:
            raise ConfigError(f"budget share must be in (0, 1), got {share}")
        goal = share * self.target_epsilon
        k = 1 if person_level else self.rows_per_unit
        _, q = self._unit_level(1.0, sample_rate, person_level)
        if sample_rate == 1.0 and steps == 1:
            return k * self._search(lambda s: analytic_gaussian_epsilon(s, delta=self.mechanism_delta), goal,
                                    lo=0.05, hi=1e6)
        return k * self._search(lambda s: _search_epsilon_of(self.name, [(s, q, steps)], self.mechanism_delta), goal)

    def calibrate(self, *, sample_rate: float, steps: int, label: str = "dpsgd", person_level: bool = False) -> float:
        """Smallest (row-level) noise multiplier for ``steps`` steps at ``sample_rate`` that keeps the run within
        budget.

        Accounts for what was already spent and for every planned mechanism.
        """
        k = 1 if person_level else self.rows_per_unit
        _, q = self._unit_level(1.0, sample_rate, person_level)
        base = self.history() + [m.as_tuple() for m in self.planned if m.label != label]
        if _epsilon_of(self.name, base, self.mechanism_delta) >= self.target_epsilon:
            raise PrivacyBudgetExceededError(
                f"no budget left for '{label}': spent and planned mechanisms already use ε={self.target_epsilon:g}"
            )
        # aim a hair below the target: the PRV composition of the recorded history (other order, other step
        # counts) can differ from the planned one in the 4th digit, and check() must never find ε above target
        sigma = k * self._search(
            lambda s: _search_epsilon_of(self.name, base + [(s, q, steps)], self.mechanism_delta),
            self.target_epsilon * (1 - _CALIBRATION_SLACK)
        )
        logger.info("privacy: calibrated %s σ=%.4f for q=%.4g, %d steps", label, sigma, sample_rate, steps)
        return sigma

    @staticmethod
    def _search(eps_of, goal: float, *, lo: float = 0.3, hi: float = 4096.0, rel_tol: float = 0.002) -> float:
        """Smallest σ with eps_of(σ) ≤ goal (ε decreases in σ), to within ``rel_tol``: the feasible end of a bracket
        [lo, hi] with eps_of(lo) > goal ≥ eps_of(hi) and hi/lo < 1 + rel_tol.

        Each evaluation of a DP-SGD composition costs up to a second, so the bracket is narrowed by interpolating
        log ε linearly in log σ (regula falsi with the Illinois rule: when the same end moves twice, the other end's
        value is halved, so neither end stalls) and, once the bracket is within 8 tolerances, by probing just either
        side of the interpolated root, which closes it in two evaluations when the interpolation is that good. An
        end whose ε is not finite and positive makes the step a bisection. Only the bracket decides the answer, so
        it is feasible whatever the interpolation does (about 8 evaluations where bisection took 13-15)."""
        f_hi = eps_of(hi)
        if f_hi > goal:
            raise PrivacyBudgetExceededError(f"cannot reach ε={goal:.4g}: even σ={hi:g} spends more")
        f_lo = eps_of(lo)
        if f_lo <= goal:
            return lo
        tol = math.log1p(rel_tol)
        # in x = log σ, F(x) = log ε − log goal: F(lo) > 0 ≥ F(hi); Illinois keeps the stalled end's F halved
        x_lo, x_hi = math.log(lo), math.log(hi)

        def F(f: float) -> float:
            return math.log(f / goal) if 0 < f < math.inf and goal > 0 else (math.inf if f > goal else -math.inf)

        F_lo, F_hi = F(f_lo), F(f_hi)
        last = 0  # which end the previous probe moved: +1 hi, -1 lo

        def probe(x: float) -> int:
            nonlocal x_lo, x_hi, F_lo, F_hi
            v = F(eps_of(math.exp(x)))
            if v <= 0:
                x_hi, F_hi = x, v
                return 1
            x_lo, F_lo = x, v
            return -1

        for _ in range(200):
            width = x_hi - x_lo
            if width < tol:
                break
            if math.isfinite(F_lo) and math.isfinite(F_hi) and F_lo > F_hi:
                t = F_lo / (F_lo - F_hi)
                x = x_lo + min(max(t, 0.01), 0.99) * width
            else:
                x = x_lo + width / 2
            if width < 8 * tol:  # close: probe just either side of the estimate (two probes close the bracket)
                moved = probe(min(x + tol / 3, x_hi - tol / 100))
                if x_hi - x_lo >= tol:
                    probe(max(x - tol / 3, x_lo + tol / 100) if moved == 1 else min(x + tol, x_hi - tol / 100))
                continue
            moved = probe(x)
            if moved == last:  # the same end moved twice: Illinois halves the other end's F
                if moved == 1:
                    F_lo /= 2
                else:
                    F_hi /= 2
            last = moved
        return math.exp(x_hi)  # always the feasible end

    # -- reporting ----------------------------------------------------------------------
    def epsilon_curve(self, deltas: list[float]) -> list[tuple[float, float]]:
        """(δ, ε(δ)) for the mechanisms recorded so far (δ of the whole release: the tail included)."""
        return [(d, _epsilon_of(self.name, self.history(), d - self.tail_delta)) for d in deltas
                if d > self.tail_delta]

    def state_dict(self) -> dict:
        """Everything needed to resume accounting in another process (no data values)."""
        return {
            "epsilon": self.target_epsilon,
            "delta": self.delta,
            "tail_delta": self.tail_delta,
            "accountant": self.name,
            "unit": self.unit,
            "rows_per_unit": self.rows_per_unit,
            **({"relation": self.relation} if self.relation else {}),
            "ledger": [asdict(m) for m in self.ledger],
            "planned": [asdict(m) for m in self.planned],
            "person_level_labels": sorted(self._person_level),
        }

    @classmethod
    def from_state_dict(cls, state: dict) -> PrivacyAccountant:
        acct = cls(epsilon=state["epsilon"], delta=state["delta"], accountant=state["accountant"],
                   unit=state.get("unit"), rows_per_unit=state.get("rows_per_unit", 1),
                   relation=state.get("relation"))
        acct.tail_delta = float(state.get("tail_delta", 0.0))
        acct.ledger = [Mechanism(**m) for m in state.get("ledger", [])]
        acct.planned = [Mechanism(**m) for m in state.get("planned", [])]
        acct._person_level = set(state.get("person_level_labels", []))
        return acct

    def summary(self, *, curve: bool = False) -> dict:
        """A JSON-able account of the run's privacy spend (no data values).

        With ``curve``, also ε(δ) for δ from 1e-10 to 1e-3 (for the ε(δ) plot).
        """
        per_label: dict[str, float] = {}
        for m in self.ledger:
            per_label[m.label] = _epsilon_of(self.name, [m.as_tuple()], self.mechanism_delta)
        extra = {}
        if curve and self.ledger:
            extra["epsilon_curve"] = [[d, e] for d, e in self.epsilon_curve([10.0**-k for k in range(10, 2, -1)])]
        return {
            "accountant": self.name,
            "neighbouring": self.neighbouring,
            "rows_per_unit": self.rows_per_unit,
            "target_epsilon": self.target_epsilon,
            "delta": self.delta,
            "tail_delta": self.tail_delta,
            "epsilon_spent": self.epsilon(),
            "mechanisms": [asdict(m) for m in self.ledger],
            "epsilon_alone_by_mechanism": per_label,
            **extra,
        }
