"""The white-box gradient-canary audit has power: it passes the real DP-SGD step and catches a noise bug."""

from __future__ import annotations

import pytest
import torch

from dpsyn.audit import audit_dpsgd_with_gradient_canaries
from dpsyn.privacy import NoiseSource

pytestmark = [pytest.mark.filterwarnings("ignore::dpsyn.errors.InsecureRNGWarning"),
              pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha")]


class _QuarterNoise:
    """A mutant of the noise source: every Gaussian draw of DP-SGD has std ÷ 4 (the accountant still records σ)."""

    def __init__(self, base: NoiseSource):
        self.base = base

    def normal_list(self, shapes, std, **kw):
        return self.base.normal_list(shapes, std / 4, **kw)

    def __getattr__(self, name):
        return getattr(self.base, name)


def _data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2000, 12, generator=g)
    return x, (x[:, 0] + 0.5 * x[:, 1] > 0).long()


@pytest.mark.parametrize("mutant", [False, True], ids=["real-code", "noise-divided-by-4"])
def test_the_audit_bounds_the_real_code_below_the_claim_and_the_mutant_above(mutant):
    x, y = _data()
    noise = NoiseSource(secure=False, seed=11)
    result, claim = audit_dpsgd_with_gradient_canaries(
        x, y, 2, epsilon=2.0, delta=1e-5, batch_size=64, epochs=10, noise=_QuarterNoise(noise) if mutant else noise,
        coins_seed=3)
    assert claim["epsilon"] <= 2.0 and claim["steps"] == 320
    if mutant:
        assert result.epsilon_lower_bound > 2.0, result  # the broken noise is caught
    else:
        assert result.epsilon_lower_bound <= 2.0, result  # the real step is consistent with its claim
        assert result.correct > 110  # and the audit is not blind (a chance-level guesser gets about 100 of 200)
