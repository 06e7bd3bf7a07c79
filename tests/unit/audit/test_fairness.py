"""Group privacy-fairness audit (dpsyn.audit.fairness): the game, the advantage, the metrics."""

from __future__ import annotations

import numpy as np
import pytest

from dpsyn.audit.fairness import (
    delta_interval,
    demographic_parity_difference,
    equalized_odds_difference,
    group_privacy_audit,
    per_sample_advantage,
    plot_group_risk,
)
from dpsyn.errors import ConfigError


def test_advantage_is_one_for_a_perfectly_separable_row_and_near_zero_for_an_unaffected_one():
    rng = np.random.default_rng(0)
    r = 40
    l_in = np.c_[rng.uniform(0, 1, r), rng.uniform(0, 1, r)]
    l_out = np.c_[rng.uniform(2, 3, r), rng.uniform(0, 1, r)]
    adv = per_sample_advantage(l_in, l_out)
    assert adv[0] == pytest.approx(1.0)
    assert abs(adv[1]) < 0.35
    with pytest.raises(ConfigError):
        per_sample_advantage(l_in[:1], l_out[:1])


def test_thresholds_are_cross_fitted_so_noise_alone_averages_to_zero():
    rng = np.random.default_rng(1)
    l_in, l_out = rng.normal(size=(20, 3000)), rng.normal(size=(20, 3000))
    assert abs(per_sample_advantage(l_in, l_out).mean()) < 0.02  # an in-sample optimum would be ≈ +0.3


def test_audit_game_finds_the_group_a_model_memorises():
    """A fake trainer memorises rows of group 0 (low loss when trained on), ignores group 1."""
    n = 400
    groups = np.arange(n) % 2
    rng = np.random.default_rng(2)

    def train_fn(rows, seed):
        member = np.zeros(n, bool)
        member[rows] = True
        noise = np.random.default_rng(seed).normal(0, 0.3, n)
        return lambda idx: (1.0 - 0.8 * (member[idx] & (groups[idx] == 0)) + noise[idx])

    audit = np.arange(n)
    rep, adv = group_privacy_audit(train_fn, fixed_rows=np.array([], int), audit_rows=audit, groups=groups,
                                   labels=["memorised", "ignored"], column="g", rounds=8, seed=3)
    gpr = rep.gpr()
    assert gpr["memorised"] > 0.6 and abs(gpr["ignored"]) < 0.1
    assert rep.delta == pytest.approx(gpr["memorised"] - gpr["ignored"])
    assert rep.models_trained == 16 and rep.audit_rows == n and len(adv) == n
    assert all(g.se > 0 for g in rep.groups)
    assert rep.delta_ci[0] < rep.delta < rep.delta_ci[1] < 1.0
    assert rng is not None


def test_delta_interval_narrows_with_more_rows_and_ignores_small_groups():
    rng = np.random.default_rng(4)
    for n, width_max in ((100, 0.3), (10_000, 0.03)):
        groups = np.r_[np.zeros(n, int), np.ones(n, int), np.full(3, 2)]
        adv = np.r_[rng.normal(0.2, 0.5, n), rng.normal(0.0, 0.5, n), [5.0, 5.0, 5.0]]
        lo, hi = delta_interval(adv, groups, min_rows=10, seed=0)
        assert lo < 0.2 < hi and hi - lo < width_max  # group 2 (3 rows, GPR 5) is left out
    assert delta_interval(adv, groups, min_rows=n + 1) == (0.0, 0.0)


def test_small_groups_are_reported_but_left_out_of_delta():
    def train_fn(rows, seed):
        member = np.zeros(30, bool)
        member[rows] = True
        return lambda idx: np.where(member[idx] & (idx < 3), 0.0, 1.0) + np.random.default_rng(seed).normal(0, .1, len(idx))

    groups = np.r_[np.zeros(3, int), np.ones(27, int)]
    rep, _ = group_privacy_audit(train_fn, fixed_rows=np.array([], int), audit_rows=np.arange(30), groups=groups,
                                 labels=["tiny", "big"], column="g", rounds=4, min_rows=5)
    assert rep.gpr()["tiny"] > 0.5
    assert rep.delta == 0.0  # only one group is large enough


def test_outcome_fairness_metrics_on_known_values():
    groups = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    y = np.array([1, 1, 0, 0, 1, 1, 0, 0])
    pred = np.array([1, 1, 1, 0, 1, 0, 0, 0])
    assert demographic_parity_difference(pred, groups) == pytest.approx(0.75 - 0.25)
    # TPR 1.0 vs 0.5, FPR 0.5 vs 0.0
    assert equalized_odds_difference(y, pred, groups) == pytest.approx(0.5)
    assert demographic_parity_difference(y, groups) == 0.0


def test_bar_chart_is_written(tmp_path):
    def train_fn(rows, seed):
        return lambda idx: np.random.default_rng(seed).normal(size=len(idx))

    rep, _ = group_privacy_audit(train_fn, fixed_rows=np.array([], int), audit_rows=np.arange(40),
                                 groups=np.arange(40) % 2, labels=["a", "b"], column="g", rounds=2)
    plot_group_risk({"DP-SGD": rep, "DP-SGD-S": rep}, tmp_path / "gpr.png")
    assert (tmp_path / "gpr.png").read_bytes()[:4] == b"\x89PNG"


def test_the_person_game_trains_on_whole_persons_and_sums_their_losses():
    from dpsyn.audit.fairness_audit import _PersonGame

    persons = np.array([2, 0, 1, 2, 0, 2])  # person 2 has rows 0, 3, 5
    calls = []

    def trainer(rows, seed):
        calls.append(rows)
        return lambda idx: np.asarray(idx, dtype=float) * 10  # a row's loss: ten times its index

    game = _PersonGame(trainer, persons)
    loss = game(np.array([2, 1]), seed=0)
    assert calls[-1].tolist() == [0, 2, 3, 5]  # all rows of persons 1 and 2
    assert loss(np.array([0, 2, 1])).tolist() == [(1 + 4) * 10, (0 + 3 + 5) * 10, 2 * 10]

