"""Noisy one-way marginals and raking (dpsyn/synth/marginals.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.synth.marginals import (
    MarginalTargets,
    calibrated_sample,
    measure_marginals,
    plan_marginals,
    rake,
    systematic_resample,
)


def _codes(n=20000, seed=0):
    rng = np.random.default_rng(seed)
    return np.stack([rng.integers(0, 3, n), (rng.random(n) < 0.3).astype(int), rng.integers(0, 5, n)], 1)


def test_rake_matches_reachable_targets():
    codes = _codes()
    targets = [np.array([0.6, 0.3, 0.1]), np.array([0.8, 0.2]), np.full(5, 0.2)]
    w = rake(codes, [3, 2, 5], targets)
    assert w.mean() == pytest.approx(1.0)
    for j, t in enumerate(targets):
        got = np.bincount(codes[:, j], weights=w, minlength=len(t)) / w.sum()
        assert np.abs(got - t).max() < 1e-3


def test_systematic_resample_follows_weights():
    rng = np.random.default_rng(1)
    w = np.array([1.0, 3.0, 0.0, 4.0])
    idx = systematic_resample(np.repeat(w, 1000), 8000, rng=rng)
    counts = np.bincount(idx // 1000, minlength=4)
    assert counts[2] == 0
    assert np.allclose(counts / 8000, w / w.sum(), atol=0.002)


def test_measurement_is_a_gaussian_mechanism_on_the_accountant():
    """Noise std is z·√d (L2 sensitivity √d: one row moves one cell of each of d histograms)."""
    codes = _codes(50)
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    z = plan_marginals(acct, 0.1, label="m")
    assert [p.label for p in acct.planned] == ["m"]
    m = measure_marginals(codes, [3, 2, 5], z=z, noise=NoiseSource(secure=False, seed=0), accountant=acct, label="m")
    assert acct.planned == [] and [(x.label, x.sample_rate, x.steps) for x in acct.ledger] == [("m", 1.0, 1)]
    assert m.std == pytest.approx(z * math.sqrt(3))
    # the noise has that standard deviation: many independent releases of an empty table
    draws = np.concatenate([
        measure_marginals(np.zeros((0, 3), dtype=int), [3, 2, 5], z=z, noise=NoiseSource(secure=False, seed=s),
                          accountant=PrivacyAccountant(epsilon=1.0, delta=1e-5), label="m").noisy[2]
        for s in range(400)])
    assert np.std(draws) == pytest.approx(m.std, rel=0.05)
    # alone it costs its share: exactly (the analytic Gaussian ε sizes it), and PRV's bound of it within PRV's
    # discretisation error
    from dpsyn.privacy.accountant import analytic_gaussian_epsilon

    assert analytic_gaussian_epsilon(z, delta=1e-5) == pytest.approx(0.1, rel=0.01)
    assert acct.epsilon() <= 0.1 + 0.0105


def test_targets_trust_large_noisy_cells_and_fall_back_to_the_prior():
    t = MarginalTargets([np.array([900.0, 80.0, 20.0])], std=10.0, trust=3.0)
    (p,) = t.targets([np.array([0.5, 0.1, 0.4])])
    assert p.sum() == pytest.approx(1.0)
    assert p[0] == pytest.approx(0.9, abs=1e-9) and p[1] == pytest.approx(0.08, abs=1e-9)  # trusted: as measured
    assert p[2] == pytest.approx(0.02, abs=1e-9)  # 20 < 3·10: the prior's share of what is left (all of it)


def test_calibrated_sample_moves_marginals_to_targets():
    rng = np.random.default_rng(2)

    def draw(m):
        return _codes(m, seed=int(rng.integers(1 << 30)))

    measured = MarginalTargets([np.array([5000.0, 3000.0, 2000.0]), np.array([9000.0, 1000.0]),
                                np.full(5, 2000.0)], std=10.0, trust=3.0)
    out = calibrated_sample(draw, 4000, [3, 2, 5], measured, factor=4, rng=rng)
    assert out.shape == (4000, 3)
    assert np.abs(np.bincount(out[:, 0], minlength=3) / 4000 - [0.5, 0.3, 0.2]).max() < 0.01
    assert np.abs(np.bincount(out[:, 1], minlength=2) / 4000 - [0.9, 0.1]).max() < 0.01
    assert calibrated_sample(draw, 7, [3, 2, 5], None, factor=4, rng=rng).shape == (7, 3)


def test_rake_survives_targets_the_candidates_cannot_reach():
    """A weak generator may never produce the only value a column's target keeps: no NaN weights."""
    codes = np.array([[1, 0], [1, 1], [2, 0], [2, 1]] * 25)
    targets = [np.array([1.0, 0.0, 0.0]), np.array([0.3, 0.7])]  # column 0: all mass on code 0, never drawn
    w = rake(codes, [3, 2], targets)
    assert np.all(np.isfinite(w)) and w.sum() == pytest.approx(len(codes))
    got = np.bincount(codes[:, 1], weights=w, minlength=2) / w.sum()
    assert got == pytest.approx(targets[1], abs=1e-3)  # the reachable column is still matched


def test_candidates_of_a_wide_table_are_drawn_in_bounded_chunks(monkeypatch):
    import dpsyn.synth.marginals as M

    calls = []

    def draw(m):
        calls.append(m)
        return np.full((m, 2), len(calls) - 1)

    sizes = [3000, 3000]  # 6,000 one-hot columns
    monkeypatch.setattr(M, "DRAW_CHUNK_CELLS", 6000 * 2000)
    out = M.chunked_draw(draw, 5000, sizes)
    assert calls == [2000, 2000, 1000] and out.shape == (5000, 2)
    assert (out[:2000] == 0).all() and (out[4000:] == 2).all()  # chunks in order, every row drawn once
    calls.clear()
    assert M.chunked_draw(draw, 1500, sizes).shape == (1500, 2) and calls == [1500]  # one chunk: draw(m) itself
    calls.clear()
    monkeypatch.setattr(M, "DRAW_CHUNK_CELLS", 10)
    M.chunked_draw(draw, 3000, sizes)
    assert calls == [1024, 1024, 952]  # never below 1,024 rows a call


def test_a_trusted_cell_the_generator_never_proposes_gets_mass():
    """Issue 26: raking cannot create mass where no candidate lies; the fill step must (the upper tail)."""
    rng = np.random.default_rng(3)

    def draw(m):  # a generator that never proposes code 4 of column 1
        return np.stack([rng.integers(0, 2, m), rng.integers(0, 4, m)], 1)

    n = 5000
    noisy = [np.array([2500.0, 2500.0]), np.array([1000.0, 1000.0, 1000.0, 1000.0, 1000.0])]
    targets = MarginalTargets(noisy, std=10.0, trust=3.0)
    out = calibrated_sample(draw, n, [2, 5], targets, factor=4, rng=np.random.default_rng(0))
    share = np.bincount(out[:, 1], minlength=5) / n
    assert share[4] == pytest.approx(0.2, abs=0.02)
    # an untrusted cell (noisy count within the noise) is not forced
    weak = MarginalTargets([noisy[0], np.array([1250.0, 1250.0, 1250.0, 1250.0, 20.0])], std=10.0, trust=3.0)
    out = calibrated_sample(draw, n, [2, 5], weak, factor=4, rng=np.random.default_rng(0))
    assert (out[:, 1] == 4).sum() == 0
