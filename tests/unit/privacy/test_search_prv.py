"""The σ searches' PRV (dpsyn.privacy.accountant._search_dprv): Opacus' discretisation with the truncated PRV's
mean computed in the Gaussian's coordinate. It must agree with Opacus' ε, and its mean must be at least as
accurate as Opacus' quad (checked against a 25-digit reference)."""

import math

import numpy as np
import pytest
from opacus.accountants.analysis.prv.prvs import PoissonSubsampledGaussianPRV, TruncatedPrivacyRandomVariable

from dpsyn.privacy import PrivacyAccountant
from dpsyn.privacy import accountant as acc

HISTORIES = [
    [(1.1, 0.01, 300)],
    [(8.4, 0.5, 4), (30.7, 1.0, 12), (6.07, 1.0, 1)],
    [(0.9, 0.2, 25), (4.0, 1.0, 3)],
    [(2.5, 0.004, 2000), (12.0, 1.0, 1), (12.0, 1.0, 1)],
    [(0.7, 0.05, 200)],
    [(50.0, 1.0, 1)],
]


def _reference_mean(q: float, s: float, t_min: float, t_max: float) -> float:
    """E[L | t_min < L ≤ t_max] in 25-digit arithmetic (mpmath), integrating over Y as the docstring derives."""
    mp = pytest.importorskip("mpmath")
    mp.mp.dps = 25
    q, s = mp.mpf(q), mp.mpf(s)

    def z(t):
        if q == 1:
            return mp.mpf(t)
        v = (mp.exp(t) + q - 1) / q
        return mp.log(v) if v > 0 else -mp.inf

    lo, hi = z(t_min), z(t_max)
    num = mass = mp.mpf(0)
    for w, mu in ((q, 1 / (2 * s * s)), (1 - q, -1 / (2 * s * s))):
        a, b = max(lo, mu - 60 / s), min(hi, mu + 60 / s)
        if w == 0 or a >= b:
            continue
        pts = mp.linspace(a, b, 40)
        dens = lambda y, mu=mu: s * mp.exp(-((s * (y - mu)) ** 2) / 2) / mp.sqrt(2 * mp.pi)  # noqa: E731
        num += w * mp.quad(lambda y, dens=dens: mp.log(1 - q + q * mp.exp(y)) * dens(y), pts)
        mass += w * mp.quad(dens, pts)
    return float(num / mass)


@pytest.mark.parametrize(("q", "s", "half_width"), [
    (0.001, 0.3, 40.0), (0.1, 0.3, 12.3), (0.999, 0.6, 40.0), (0.01, 1.1, 5.0), (1.0, 5.0, 3.0), (0.5, 2.0, 12.0),
])
def test_truncated_mean_is_as_accurate_as_quad_or_better(q, s, half_width):
    prv = PoissonSubsampledGaussianPRV(q, s)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = TruncatedPrivacyRandomVariable(prv, -half_width, half_width)
        opacus = t.mean()
    ref = _reference_mean(q, s, -half_width, half_width)
    ours = acc.truncated_prv_mean(q, s, -half_width, half_width, float(t._remaining_mass))
    assert abs(ours - ref) <= 1e-14 * max(1.0, abs(ref))
    assert abs(ours - ref) <= abs(opacus - ref) + 1e-15


@pytest.mark.parametrize("history", HISTORIES)
@pytest.mark.parametrize("delta", [1e-5, 1e-7])
def test_search_epsilon_agrees_with_opacus(history, delta):
    exact = acc._epsilon_of_cached("prv", tuple(history), delta)
    search = acc._epsilon_of_cached("prv", tuple(history), delta, search=True)
    assert math.isclose(search, exact, rel_tol=1e-7, abs_tol=1e-12)


def test_a_calibrated_run_passes_the_exact_check(tmp_path, monkeypatch):
    """The search's σ (fast PRV, no memo) leaves the exact composition within the target."""
    monkeypatch.setenv("DPSYN_ACCOUNTANT_MEMO", "0")
    a = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    a.plan("counts", noise_multiplier=20.0)
    sigma = a.calibrate(sample_rate=0.02, steps=400, label="dpsgd")
    a.record("counts", noise_multiplier=20.0, sample_rate=1.0, steps=1)
    a.record("dpsgd", noise_multiplier=sigma, sample_rate=0.02, steps=400)
    a.check()
    assert 0.99 < a.epsilon() <= 1.0


@pytest.mark.parametrize("history", HISTORIES)
def test_the_search_domain_is_never_narrower_than_opacus(history):
    from opacus.accountants.analysis.prv import PoissonSubsampledGaussianPRV as PRV

    prvs = [PRV(q, s) for s, q, _ in history]
    steps = [t for _, _, t in history]
    kw = {"prvs": prvs, "num_self_compositions": steps, "eps_error": 0.01, "delta_error": 1e-8}
    ours, theirs = acc._make("prv", search=True)._get_domain(**kw), acc._make("prv")._get_domain(**kw)
    assert ours.t_max >= theirs.t_max and ours.t_min <= theirs.t_min and ours.dt == pytest.approx(theirs.dt)
