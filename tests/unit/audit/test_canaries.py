"""One-run audit: the Steinke et al. bound, and that it catches a copying "synthesizer"."""

from __future__ import annotations

import numpy as np
import pytest

from dpsyn.audit.canaries import canary_dcr_scores, epsilon_lower_bound, make_canaries, p_value, run_audit


def test_p_value_is_the_binomial_tail_when_delta_is_zero():
    from scipy import stats

    q = np.exp(1) / (1 + np.exp(1))
    assert p_value(100, 50, 40, 1.0, 0.0) == pytest.approx(stats.binom.sf(39, 50, q))


def test_bound_grows_with_correct_guesses_and_is_zero_at_chance():
    assert epsilon_lower_bound(1000, 200, 100, delta=1e-5) == 0.0
    b = [epsilon_lower_bound(1000, 200, v, delta=1e-5) for v in (130, 160, 190, 200)]
    assert 0 < b[0] < b[1] < b[2] < b[3]
    assert b[3] == pytest.approx(4.17, abs=0.02)  # all 200 right: ε ≥ 4.17 at 95%
    # the δ term only weakens the bound
    assert epsilon_lower_bound(1000, 200, 190, delta=1e-3) <= b[2]


def test_a_copying_synthesizer_is_caught_and_noise_is_not(adult_sample, adult_schema):
    rng = np.random.default_rng(0)
    canaries = make_canaries(adult_schema, 200, rng=rng)
    included = rng.random(200) < 0.5
    training = adult_sample.iloc[:1000]
    copied = np.concatenate([training.to_numpy(), canaries.loc[included, training.columns].to_numpy()])
    import pandas as pd

    copied = pd.DataFrame(copied, columns=training.columns)
    res = run_audit(canary_dcr_scores(canaries, copied, adult_schema), included, delta=1e-5, rng=rng)
    assert res.correct == res.k_in + res.k_out == 40 and res.epsilon_lower_bound > 1.5
    # a synthetic table that never saw a canary: chance-level guesses, bound ~0
    res = run_audit(canary_dcr_scores(canaries, training, adult_schema), included, delta=1e-5, rng=rng)
    assert res.epsilon_lower_bound < 1.0


def test_guesses_need_room():
    with pytest.raises(ValueError):
        run_audit(np.zeros(10), np.zeros(10, dtype=bool), delta=1e-5, k_in=6, k_out=6)
