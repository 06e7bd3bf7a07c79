"""DP-SGD-S (dpsyn.synth.group_clip): noisy per-group quantiles, bounds, and the accounting of a run."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.synth.dpsgd import steps_and_rate, train_dpsgd
from dpsyn.synth.group_clip import (
    SIZES_LABEL,
    GroupClipConfig,
    GroupClipper,
    GroupSizes,
    measure_group_sizes,
    plan_group_sizes,
    split_noise,
)

ONE = dict(floor=0.05, compensate=0.0, rarity=0.0)  # defaults off, so a test sees one mechanism at a time


def test_split_noise_keeps_the_step_a_gaussian_of_the_calibrated_sigma():
    for sigma, share in [(0.7, 0.05), (2.3, 0.3)]:
        s_g, s_b = split_noise(sigma, share)
        assert s_g > sigma and s_b > sigma
        assert 1 / s_g**2 + 1 / s_b**2 == pytest.approx(1 / sigma**2)
        assert (1 / s_b**2) / (1 / sigma**2) == pytest.approx(share)


def _run_quantiles(cfg, norms_of, steps=400, sigma_b=0.5, seed=0):
    clip = GroupClipper(2, 1.0, cfg)
    noise = NoiseSource(secure=False, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        g = torch.from_numpy(rng.integers(0, 2, 200))
        clip.update(torch.from_numpy(norms_of(g.numpy(), rng)), g, sigma_b=sigma_b, noise=noise)
    return clip


def test_quantile_rule_tracks_each_groups_noisy_quantile():
    # group 0: norms ~ U(0, 0.4), group 1: ~ U(0, 4); median targets 0.2 and 2.0
    cfg = GroupClipConfig(column="g", rule="quantile", target_quantile=0.5, ema=0.0, **ONE)
    clip = _run_quantiles(cfg, lambda g, rng: rng.uniform(0, 1, len(g)) * np.where(g == 0, 0.4, 4.0))
    assert clip.quantiles[0] == pytest.approx(0.2, rel=0.25)
    assert clip.quantiles[1] == pytest.approx(2.0, rel=0.25)
    assert clip.max_bound() == pytest.approx(clip.bounds[1])
    assert len(clip.history) == 400


def test_equalize_rule_clips_the_high_norm_group_tighter_and_never_exceeds_the_initial_bound():
    cfg = GroupClipConfig(column="g", rule="equalize", strength=1.0, target_quantile=0.5)
    clip = _run_quantiles(cfg, lambda g, rng: rng.uniform(0, 1, len(g)) * np.where(g == 0, 0.4, 4.0))
    b = clip.bounds
    assert np.all(b <= 1.0 + 1e-12) and clip.max_bound() == pytest.approx(1.0)
    assert b[1] < 0.9 * b[0]


def test_compensating_noise_puts_back_the_variance_removed_by_tighter_bounds():
    norms = lambda g, rng: rng.uniform(0, 1, len(g)) * np.where(g == 0, 0.4, 4.0)  # noqa: E731
    off = _run_quantiles(GroupClipConfig(column="g", rule="equalize", strength=1.0, target_quantile=0.5, **ONE), norms)
    assert off.extra_noise_std() == 0.0 and off.noise_std(0.7) == pytest.approx(0.7 * off.max_bound())
    cfg = GroupClipConfig(column="g", rule="equalize", strength=1.0, target_quantile=0.5, **{**ONE, "compensate": 0.1})
    clip = _run_quantiles(cfg, norms)
    b = clip.bounds
    # about 100 rows per group per batch; group 0 keeps the top bound, group 1's is cut: κ · ñ_1 · (C_0² − C_1²)
    assert clip.extra_noise_std() == pytest.approx(np.sqrt(0.1 * 100 * (b[0] ** 2 - b[1] ** 2)), rel=0.1)
    assert clip.noise_std(0.7) == pytest.approx(np.hypot(0.7 * b.max(), clip.extra_noise_std()))
    assert GroupClipper(2, 1.0, cfg).extra_noise_std() == 0.0  # nothing released yet: nothing to compensate


def test_floor_holds_when_a_groups_norms_vanish():
    cfg = GroupClipConfig(column="g", rule="quantile", floor=0.1, ema=0.0)
    clip = _run_quantiles(cfg, lambda g, rng: np.where(g == 0, 1e-6, 1.0), steps=300)
    assert clip.bounds[0] == pytest.approx(0.1)


def test_dpsgd_s_is_accounted_as_the_same_gaussian_steps_as_dpsgd():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (600, 3))
    y = (x[:, 0] + rng.integers(0, 2, 600) > 2).astype(np.int64)
    data = torch.from_numpy(np.c_[x, y])
    q, steps = steps_and_rate(600, batch_size=64, epochs=3)
    hist = []
    for gc in (None, GroupClipper(3, 1.0, GroupClipConfig(column="x0")),
               GroupClipper(3, 1.0, GroupClipConfig(column="x0", rule="equalize", compensate=0.05)),
               GroupClipper(3, 1.0, GroupClipConfig(column="x0", rule="equalize", compensate=0.05, rarity=1.0,
                                                    rare_share=0.5))):
        acct = PrivacyAccountant(epsilon=2.0, delta=1e-5)
        sigma = acct.calibrate(sample_rate=q, steps=steps)
        torch.manual_seed(0)
        train_dpsgd(
            torch.nn.Sequential(torch.nn.Linear(9, 2)), data=data,
            loss_fn=lambda m, xb, c: c(m(torch.nn.functional.one_hot(xb[:, :3], 3).flatten(1).float()), xb[:, 3]),
            accountant=acct, noise=NoiseSource(secure=False, seed=1), noise_multiplier=sigma, batch_size=64, epochs=3,
            max_grad_norm=1.0, lr=0.05, label="t", public_rows=len(data),
            groups=None if gc is None else data[:, 0], group_clip=gc,
        )
        hist.append(acct.history())
        assert acct.check() <= 2.0
        if gc is not None:
            assert len(gc.history) == steps  # one noisy-count release per step, empty batches included
            assert not np.allclose(gc.bounds, 1.0)  # the bounds moved
    assert hist[0] == hist[1] == hist[2] == hist[3]  # compensating noise is extra noise, shares post-processing
    assert hist[0][0] == (pytest.approx(sigma), pytest.approx(q), steps)


@pytest.mark.parametrize("clipping", ["bookkeeping", "ghost"])
def test_training_adds_the_compensating_noise(monkeypatch, clipping):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 3, (600, 3))
    data = torch.from_numpy(np.c_[x, (x[:, 0] > 1).astype(np.int64)])
    stds = []
    noise = NoiseSource(secure=False, seed=1)
    real = noise.normal_list
    monkeypatch.setattr(noise, "normal_list", lambda shapes, std, **kw: stds.append(std) or real(shapes, std, **kw))
    gc = GroupClipper(3, 1.0, GroupClipConfig(column="x0", rule="equalize", strength=2.0, **{**ONE, "compensate": 0.05}))
    assert train_dpsgd(
        torch.nn.Sequential(torch.nn.Linear(9, 2)), data=data,
        loss_fn=lambda m, xb, c: c(m(torch.nn.functional.one_hot(xb[:, :3], 3).flatten(1).float()), xb[:, 3]),
        accountant=PrivacyAccountant(epsilon=2.0, delta=1e-5), noise=noise, noise_multiplier=1.0, batch_size=64,
        epochs=2, max_grad_norm=1.0, lr=0.05, label="t", public_rows=len(data), groups=data[:, 0], group_clip=gc,
        clipping=clipping,
    ).dp_clipping_ == clipping
    sigma_g = split_noise(1.0, gc.config.count_share)[0]
    assert min(stds) >= sigma_g * 1.0 - 1e-9  # never below the calibrated noise
    assert max(stds) > 1.5 * sigma_g  # and above it once some group's bound was cut


def test_group_clip_needs_both_groups_and_clipper():
    with pytest.raises(ValueError, match="both groups"):
        train_dpsgd(torch.nn.Linear(2, 2), data=torch.zeros(4, 3, dtype=torch.long), loss_fn=None,
                    accountant=PrivacyAccountant(epsilon=1, delta=1e-5), noise=NoiseSource(secure=False, seed=0),
                    noise_multiplier=1.0, batch_size=2, epochs=1, max_grad_norm=1.0, lr=0.1, label="t",
                    public_rows=4, groups=torch.zeros(4, dtype=torch.long))
    assert math.isfinite(split_noise(1.0, 0.5)[0])


def test_a_tiny_groups_noisy_counts_cannot_inflate_everyones_noise():
    """One row of group 1 per batch, counts noise std 3: its fraction is noise; the bound must stay put."""
    cfg = GroupClipConfig(column="g", rule="quantile", target_quantile=0.75)
    clip = GroupClipper(2, 1.0, cfg)
    noise = NoiseSource(secure=False, seed=5)
    rng = np.random.default_rng(5)
    for _ in range(500):
        g = torch.from_numpy(np.r_[np.zeros(200, int), [1]])
        clip.update(torch.from_numpy(rng.uniform(0, 1, 201)), g, sigma_b=3.0, noise=noise)
    assert clip.max_bound() <= cfg.ceiling
    assert clip.quantiles[1] < 1.5  # rarely enough (noisy) rows to move it, and never past the ceiling
    assert clip.quantiles[0] == pytest.approx(0.75, rel=0.2)


def test_rarity_clips_rare_groups_tighter_from_the_released_counts_only():
    """Shares 0.90 / 0.08 / 0.02 in each batch of 500; rare_share 0.1, r = 1: bounds ≈ 1 / 0.8 / 0.2 of the rule's."""
    cfg = GroupClipConfig(column="g", rule="equalize", strength=1.0, **{**ONE, "rarity": 1.0}, rare_share=0.1)
    clip = GroupClipper(3, 1.0, cfg)
    np.testing.assert_allclose(clip.bounds, 1.0)  # nothing released yet: uniform shares, no group is rare
    noise = NoiseSource(secure=False, seed=3)
    g = torch.from_numpy(np.repeat([0, 1, 2], [450, 40, 10]))
    for _ in range(300):
        clip.update(torch.ones(500), g, sigma_b=2.0, noise=noise)  # equal norms: the equalize rule alone clips no one
    np.testing.assert_allclose(clip.shares(), [0.90, 0.08, 0.02], atol=0.005)
    np.testing.assert_allclose(clip.bounds, [1.0, 0.8, 0.2], atol=0.05)
    assert clip.max_bound() == pytest.approx(1.0)  # the noise scale is unchanged
    off = GroupClipper(3, 1.0, GroupClipConfig(column="g", rule="equalize", strength=1.0, **ONE))
    off._count_sums = clip._count_sums
    np.testing.assert_allclose(off.bounds, 1.0)  # r = 0 turns it off
    floor = GroupClipper(3, 1.0, GroupClipConfig(column="g", rarity=2.0, floor=0.1, compensate=0.0))
    floor._count_sums = clip._count_sums.copy()
    assert floor.bounds[2] == pytest.approx(0.1)  # (0.2)² = 0.04 is under the floor


def test_group_size_histogram_is_charged_before_training_and_leaves_dpsgd_less_budget():
    cfg = GroupClipConfig(column="g", size_share=0.3)
    off = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    assert plan_group_sizes(GroupClipConfig(column="g"), off) is None  # size_share 0: nothing planned
    assert measure_group_sizes(np.zeros(5, int), 2, None, accountant=off, noise=None) is None  # nor released
    assert off.planned == [] and off.ledger == []
    q, steps = steps_and_rate(2000, batch_size=64, epochs=3)
    alone = PrivacyAccountant(epsilon=1.0, delta=1e-5).calibrate(sample_rate=q, steps=steps)
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    sigma_h = plan_group_sizes(cfg, acct)
    assert sigma_h == pytest.approx(acct.sigma_for_share(0.3))
    sigma = acct.calibrate(sample_rate=q, steps=steps)
    assert sigma > alone  # the histogram's budget is not free
    groups = np.repeat([0, 1, 2], [1900, 80, 20])
    sizes = measure_group_sizes(groups, 3, sigma_h, accountant=acct, noise=NoiseSource(secure=False, seed=0))
    acct.record("dpsgd", noise_multiplier=sigma, sample_rate=q, steps=steps)
    assert acct.history() == [(sigma_h, 1.0, 1), (sigma, q, steps)] and acct.ledger[0].label == SIZES_LABEL
    assert acct.check() <= 1.0
    assert sizes.variance == pytest.approx(sigma_h**2)
    assert np.all(np.abs(sizes.counts - [1900, 80, 20]) < 5 * sigma_h)
    assert not np.allclose(sizes.counts, [1900, 80, 20])  # noise was added


def test_shares_weigh_the_histogram_and_the_batch_counts_by_their_noise():
    """Batch counts alone (σ_b = 20, batches of 64) barely see a 1 % group; the histogram (σ_h = 5) does."""
    cfg = GroupClipConfig(column="g", rule="equalize", **{**ONE, "rarity": 1.0})
    true = np.array([0.90, 0.09, 0.01])
    hist = GroupSizes(counts=2000 * true + np.array([3.0, -4.0, 2.0]), variance=25.0)
    only_hist = GroupClipper(3, 1.0, cfg, sizes=hist)
    np.testing.assert_allclose(only_hist.shares(), np.maximum(hist.counts, 0) / hist.counts.sum())  # nothing else yet
    errors = {}
    for name, sizes in (("batches", None), ("both", hist)):
        noise = NoiseSource(secure=False, seed=7)
        clip = GroupClipper(3, 1.0, cfg, sizes=sizes)
        g = torch.from_numpy(np.repeat([0, 1, 2], [58, 5, 1]))
        for _ in range(100):
            clip.update(torch.ones(64), g, sigma_b=20.0, noise=noise)
        errors[name] = np.abs(clip.shares() - true).max()
        assert clip.shares().sum() == pytest.approx(1.0)
    assert errors["both"] < 0.01 < errors["batches"]
    with pytest.raises(ValueError, match="2 groups"):
        GroupClipper(3, 1.0, cfg, sizes=GroupSizes(counts=np.ones(2), variance=1.0))
