"""dpsyn.drift: a DP comparison of two real batches (KS for numeric columns, PSI from noisy shares)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from dpsyn.drift import DRIFT_LABEL, DriftConfig, detect_drift, psi, render_html
from dpsyn.errors import InsecureRNGWarning
from dpsyn.privacy import COUNT_LABEL, NoiseSource, PrivacyAccountant

pytestmark = [
    pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha"),
    pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning"),
]


def _noise(seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRNGWarning)
        return NoiseSource(secure=False, seed=seed)


def _run(ref, cur, schema, eps=1.0, seed=0):
    acct = PrivacyAccountant(epsilon=eps, delta=1e-5)
    rep = detect_drift(ref, cur, schema, DriftConfig(epsilon=eps), accountant=acct, noise=_noise(seed))
    return rep, acct


def test_psi_of_known_shares():
    assert psi(np.array([0.5, 0.5]), np.array([0.5, 0.5]), floor=1e-6) == pytest.approx(0.0, abs=1e-9)
    expected = (0.7 - 0.5) * math.log(0.7 / 0.5) + (0.3 - 0.5) * math.log(0.3 / 0.5)
    assert psi(np.array([0.5, 0.5]), np.array([0.7, 0.3]), floor=1e-9) == pytest.approx(expected, rel=1e-6)
    # negative noisy shares are clipped; tiny cells in both are merged instead of exploding the log
    assert psi(np.array([0.5, 0.5, -0.001, 0.0]), np.array([0.5, 0.5, 0.0, -0.002]), floor=0.005) < 1e-6


@pytest.fixture(scope="module")
def halves(adult_sample):
    df = adult_sample.sample(frac=1.0, random_state=0).reset_index(drop=True)
    return df.iloc[:2000].reset_index(drop=True), df.iloc[2000:].reset_index(drop=True)


def test_same_population_is_no_drift_and_one_release_is_charged(halves, adult_schema):
    ref, cur = halves
    rep, acct = _run(ref, cur, adult_schema)
    assert not rep.drifted, rep.summary()
    assert [m.label for m in acct.ledger] == [COUNT_LABEL, DRIFT_LABEL]  # the batches' noisy sizes, then the check
    assert 0.9 < acct.check() <= 1.0
    stats = {c.column: c.statistic for c in rep.columns}
    assert stats["age"] == "ks" and stats["workclass"] == "psi"


def test_shifted_numeric_and_changed_categorical_are_named(halves, adult_schema):
    ref, cur = halves
    cur = cur.assign(age=(cur["age"] + 15).clip(upper=90))
    cur.loc[: len(cur) // 3, "workclass"] = "Self-emp-inc"
    rep, _ = _run(ref, cur, adult_schema, seed=1)
    assert rep.drifted
    assert {"age", "workclass"} <= set(rep.drifted_columns)
    assert "ks:age" in rep.summary()


def test_noise_matches_the_sensitivity_bound(halves, adult_schema):
    ref, cur = halves
    rep, acct = _run(ref, cur, adult_schema)
    sigma = acct.ledger[1].noise_multiplier
    k_ks = sum(c.statistic == "ks" for c in rep.columns)
    w = DriftConfig().hist_weight
    delta = math.sqrt(k_ks + 2 * w**2 * len(rep.columns)) / (min(len(ref), len(cur)) - 1)
    # the sensitivity uses a lower bound of the noisy batch sizes: a little more noise than the exact sizes
    # would give (never less, except with the δ tail), and one ratio for every statistic
    ratios = [c.noise_std / (sigma * delta / (1 if c.statistic == "ks" else w)) for c in rep.columns]
    assert 1.0 < min(ratios) and max(ratios) < 1.3 and max(ratios) - min(ratios) < 1e-9
    assert rep.n_reference != len(ref) or rep.n_current != len(cur)  # the report shows the noisy sizes
    exact = ref["sex"].value_counts(normalize=True).reindex(["Female", "Male"]).to_numpy()
    sex = next(c for c in rep.columns if c.column == "sex")
    got = np.array(sex.reference[:2])
    assert np.all(got != exact) and np.all(np.abs(got - exact) < 6 * sigma * delta / w)


def test_report_page(halves, adult_schema):
    ref, cur = halves
    rep, _ = _run(ref, cur.assign(age=(cur["age"] + 15).clip(upper=90)), adult_schema)
    page = render_html(rep, context={"model": "dpsyn-adult v1"})
    assert 'data-verdict="drift"' in page and page.count("<svg") == len(rep.columns)
    assert '<figure class="plot fail" data-column="age">' in page
