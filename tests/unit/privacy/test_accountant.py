"""The run accountant: golden ε values, calibration, planning, overspend."""

import math

import pytest

from dpsyn.errors import ConfigError, PrivacyBudgetExceededError, UnknownComponentError
from dpsyn.privacy import PrivacyAccountant, gaussian_epsilon
from dpsyn.privacy.accountant import analytic_gaussian_epsilon

# Golden values: ε at δ=1e-5 for fixed (σ, q, steps), computed with Opacus 1.6's
# accountants (PRV upper bound at eps_error=0.01; RDP over dpsyn's extended orders).
# If one moves, the accounting changed: find out why before updating it.
GOLDEN = [
    ("rdp", [(1.0, 0.01, 1000)], 2.1014),
    ("rdp", [(2.0, 0.02, 500)], 1.0153),
    ("rdp", [(50.0, 1.0, 1)], 0.0657),
    ("prv", [(1.0, 0.01, 1000)], 1.8384),
    ("prv", [(2.0, 0.02, 500)], 0.9310),
    ("prv", [(50.0, 1.0, 1)], 0.0686),
]


@pytest.mark.parametrize("name,history,expected", GOLDEN)
def test_golden_epsilon(name, history, expected):
    acct = PrivacyAccountant(epsilon=100.0, delta=1e-5, accountant=name)
    for i, (s, q, t) in enumerate(history):
        acct.record(f"m{i}", noise_multiplier=s, sample_rate=q, steps=t)
    assert acct.epsilon() == pytest.approx(expected, abs=2e-3)


@pytest.mark.parametrize("sigma", [5.0, 50.0, 300.0])
def test_rdp_gaussian_matches_closed_form(sigma):
    # Unsubsampled Gaussian: RDP(α) = α/(2σ²); converted to (ε, δ) with the bound Opacus uses
    # (Balle et al. 2020): ε = RDP(α) − (ln δ + ln α)/(α−1) + ln((α−1)/α), minimised over α.
    import numpy as np

    delta = 1e-5
    alphas = np.linspace(1.001, 20000, 2_000_000)
    eps = alphas / (2 * sigma**2) - (np.log(delta) + np.log(alphas)) / (alphas - 1) + np.log((alphas - 1) / alphas)
    best = float(eps.min())
    ours = gaussian_epsilon(sigma, delta=delta, accountant="rdp")
    assert best - 1e-6 <= ours <= best * 1.03


def test_gaussian_release_matches_analytic_bound():
    # The one-shot Gaussian mechanism with σ is (ε, δ)-DP for σ ≥ √(2 ln(1.25/δ))/ε (Dwork & Roth, Thm A.1).
    # Numerical accountants must be at least as tight as this classical bound.
    delta, eps = 1e-5, 0.5
    sigma = math.sqrt(2 * math.log(1.25 / delta)) / eps
    for name in ("prv", "rdp"):
        assert gaussian_epsilon(sigma, delta=delta, accountant=name) <= eps


@pytest.mark.parametrize("name", ["prv", "rdp"])
@pytest.mark.parametrize("target", [0.1, 1.0])
def test_calibrate_meets_target_and_is_tight(name, target):
    acct = PrivacyAccountant(epsilon=target, delta=1e-5, accountant=name)
    q, steps = 0.02, 300
    sigma = acct.calibrate(sample_rate=q, steps=steps)
    acct.record("dpsgd", noise_multiplier=sigma, sample_rate=q, steps=steps)
    spent = acct.check()
    assert spent <= target
    assert spent > 0.97 * target  # not wastefully loose
    # 2% less noise would overspend: the calibration is the smallest σ within budget
    probe = PrivacyAccountant(epsilon=target, delta=1e-5, accountant=name)
    probe.record("dpsgd", noise_multiplier=sigma * 0.98, sample_rate=q, steps=steps)
    assert probe.epsilon() > target * 0.995


def test_plan_leaves_room_for_later_mechanisms():
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    sv = acct.sigma_for_share(0.1)
    # one release's share is sized with its exact ε; PRV's bound of it is within PRV's discretisation error (0.01)
    assert 0.1 * (1 - 0.01) <= analytic_gaussian_epsilon(sv, delta=1e-5) <= 0.1 + 1e-9
    assert analytic_gaussian_epsilon(sv, delta=1e-5) <= gaussian_epsilon(sv, delta=1e-5) <= 0.1 + 0.0105
    acct.plan("validation", noise_multiplier=sv)
    sigma = acct.calibrate(sample_rate=0.01, steps=500)
    acct.record("dpsgd", noise_multiplier=sigma, sample_rate=0.01, steps=500)
    assert acct.epsilon() < 1.0
    acct.record("validation", noise_multiplier=sv, sample_rate=1.0, steps=1)
    assert acct.planned == []
    assert acct.check() <= 1.0


def test_overspend_raises():
    acct = PrivacyAccountant(epsilon=0.5, delta=1e-5)
    acct.record("too-little-noise", noise_multiplier=0.8, sample_rate=0.05, steps=1000)
    with pytest.raises(PrivacyBudgetExceededError, match="exceeds the target"):
        acct.check()


def test_no_budget_left_for_calibration():
    acct = PrivacyAccountant(epsilon=0.5, delta=1e-5)
    acct.record("spent", noise_multiplier=0.8, sample_rate=0.05, steps=1000)
    with pytest.raises(PrivacyBudgetExceededError):
        acct.calibrate(sample_rate=0.01, steps=10)


def test_noiseless_mechanism_is_refused():
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    with pytest.raises(PrivacyBudgetExceededError):
        acct.record("no-noise", noise_multiplier=0.0, sample_rate=1.0, steps=1)


@pytest.mark.parametrize("kw", [dict(epsilon=0, delta=1e-5), dict(epsilon=-1, delta=1e-5), dict(epsilon=1, delta=0),
                                dict(epsilon=1, delta=1.5), dict(epsilon=float("inf"), delta=1e-5)])
def test_bad_targets(kw):
    with pytest.raises(ConfigError):
        PrivacyAccountant(**kw)


def test_unknown_accountant_lists_valid_names():
    with pytest.raises(UnknownComponentError, match="prv, rdp"):
        PrivacyAccountant(epsilon=1, delta=1e-5, accountant="gdpx")


def test_state_round_trip():
    acct = PrivacyAccountant(epsilon=2.0, delta=1e-6, accountant="rdp")
    acct.record("a", noise_multiplier=1.5, sample_rate=0.01, steps=100)
    acct.plan("b", noise_multiplier=40.0)
    again = PrivacyAccountant.from_state_dict(acct.state_dict())
    assert again.epsilon() == pytest.approx(acct.epsilon())
    assert again.planned == acct.planned


@pytest.mark.parametrize("sigma", [0.8, 3.0, 40.0])
def test_analytic_gaussian_epsilon_is_exact_and_below_the_classical_bound(sigma):
    """Balle & Wang 2018: δ(ε) = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ); the ε found meets δ with equality."""
    from scipy.stats import norm

    delta = 1e-6
    eps = analytic_gaussian_epsilon(sigma, delta=delta)
    got = norm.cdf(0.5 / sigma - eps * sigma) - math.exp(eps) * norm.cdf(-0.5 / sigma - eps * sigma)
    assert got == pytest.approx(delta, rel=1e-6)
    assert eps <= math.sqrt(2 * math.log(1.25 / delta)) / sigma or sigma < 1  # the classical bound holds for ε < 1
    for name in ("prv", "rdp"):  # the numerical accountants bound it from above
        assert gaussian_epsilon(sigma, delta=delta, accountant=name) >= eps - 1e-9


def test_reserve_tail_moves_the_composition_delta():
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    acct.reserve_tail(1e-6)
    assert acct.mechanism_delta == pytest.approx(9e-6)
    acct.record("m", noise_multiplier=5.0, sample_rate=1.0, steps=1)
    assert acct.epsilon() == pytest.approx(gaussian_epsilon(5.0, delta=9e-6))
    with pytest.raises(ConfigError, match="before any mechanism"):
        acct.reserve_tail(1e-7)
    with pytest.raises(ConfigError, match="does not fit"):
        PrivacyAccountant(epsilon=1.0, delta=1e-5).reserve_tail(6e-6)
