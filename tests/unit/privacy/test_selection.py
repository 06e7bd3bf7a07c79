"""DP partition selection (dpsyn.privacy.selection): threshold, contribution bound, accounting."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.privacy.selection import select_values, selection_threshold


def _acct() -> PrivacyAccountant:
    a = PrivacyAccountant(epsilon=3.0, delta=1e-5, unit="patients.Id")
    a.reserve_tail(1e-6)
    return a


def test_threshold_makes_a_value_only_one_person_holds_rare():
    # a value only the added person holds has count 1: released with probability δ_sel/ℓ per value, δ_sel in all
    sigma, ell, tail = 2.0, 5, 1e-6
    tau = selection_threshold(sigma, ell, tail)
    p_one = norm.sf((tau - 1.0) / (sigma * math.sqrt(ell)))
    assert p_one == pytest.approx(tail / ell, rel=1e-6)
    assert ell * p_one <= tail * (1 + 1e-9)


def test_common_values_are_released_and_unique_ones_are_not():
    n = 400
    persons = np.repeat(np.arange(n), 3)
    values = pd.Series(["common"] * (3 * n))
    values.iloc[0] = "only-person-0"
    values.iloc[3] = "only-person-1"
    dom = select_values(values, persons, max_per_person=2, max_values=10, sigma=1.0, tail_delta=1e-6,
                        accountant=_acct(), noise=NoiseSource(secure=False, seed=0), label="select.t.c")
    assert dom == ["common"]


def test_a_person_counts_at_most_max_per_person_values():
    # one person holding 50 distinct values moves at most ℓ counts: with no other holder none reaches τ, and
    # the released noisy counts cannot see more than ℓ of them even with tiny noise
    persons = np.zeros(50, dtype=np.int64)
    values = pd.Series([f"v{i}" for i in range(50)])
    dom = select_values(values, persons, max_per_person=3, max_values=100, sigma=1e-3, tail_delta=1e-6,
                        accountant=_acct(), noise=NoiseSource(secure=False, seed=1), label="select.t.c")
    assert dom == []  # counts of 1 never pass τ > 1


def test_selection_is_charged_per_person():
    acct = _acct()
    select_values(pd.Series(["a", "b"]), np.array([0, 1]), max_per_person=2, max_values=5, sigma=3.0,
                  tail_delta=1e-6, accountant=acct, noise=NoiseSource(secure=False, seed=2), label="select.t.c")
    (m,) = acct.ledger
    assert (m.label, m.noise_multiplier, m.sample_rate, m.steps) == ("select.t.c", 3.0, 1.0, 1)
    assert acct.tail_delta == 1e-6


def test_missing_values_are_not_candidates():
    persons = np.arange(300)
    values = pd.Series([None] * 300, dtype="string")
    dom = select_values(values, persons, max_per_person=1, max_values=5, sigma=0.5, tail_delta=1e-6,
                        accountant=_acct(), noise=NoiseSource(secure=False, seed=3), label="select.t.c")
    assert dom == []
