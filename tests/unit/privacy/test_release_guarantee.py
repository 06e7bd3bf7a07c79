"""Issue 19's findings, each as a test: what a run may release, and what it must refuse or charge."""

from __future__ import annotations

import numpy as np
import pytest

from dpsyn.errors import ConfigError
from dpsyn.privacy import (
    COUNT_LABEL,
    NoiseSource,
    NoisyCounts,
    PrivacyAccountant,
    PrivacyConfig,
    default_delta,
    derive_seed,
    plan_counts,
    release_counts,
)
from dpsyn.privacy.budget import BudgetLedger, population_of, reservation

pytestmark = [pytest.mark.filterwarnings("ignore::dpsyn.errors.InsecureRNGWarning")]


# -- finding 2: the row count ---------------------------------------------------------------------------------------
def test_counts_are_one_gaussian_release_and_their_lower_bounds_hold_except_with_the_reserved_tail():
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    plan = plan_counts(acct, 0.1, groups=("train", "holdout"))
    assert acct.tail_delta == pytest.approx(1e-6) and acct.mechanism_delta == pytest.approx(9e-6)
    counts = release_counts({"train": 1600, "holdout": 400}, plan, accountant=acct, noise=NoiseSource(secure=True))
    assert [m.label for m in acct.ledger] == [COUNT_LABEL] and acct.ledger[0].noise_multiplier == plan.noise_multiplier
    assert counts.values["train"] != 1600  # noisy (a continuous draw)
    assert 1 <= counts.estimate() and counts.estimate("train") == max(1, round(counts.values["train"]))
    # the lower bound n̂ − zσ − 1 exceeds n − 1 with probability Φ(−z) = tail / groups: 5e-7 here
    from scipy.stats import norm

    assert norm.sf(plan.z) == pytest.approx(1e-6 / 2, rel=1e-6)
    rng = np.random.default_rng(0)
    draws = 1600 + rng.normal(0, plan.noise_multiplier, 200_000)
    lows = draws - plan.z * plan.noise_multiplier - 1
    assert (lows > 1600 - 1).mean() < 1e-4  # far rarer than 1 in 10,000 (the theory: 5 in 10 million)


def test_the_synthesizer_releases_its_own_count_when_the_run_gives_none(adult_sample, adult_schema):
    from dpsyn.synth import create

    synth = create("dpgen", {"epochs": 1}, privacy={"epsilon": 2.0, "secure_rng": False, "noise_seed": 1})
    acct = PrivacyAccountant(epsilon=2.0, delta=1e-6)
    synth.fit(adult_sample.iloc[:1000], adult_schema, accountant=acct)
    assert acct.ledger[0].label == "dpgen.rows"
    assert synth.public_rows_ != 1000 or acct.ledger[0].noise_multiplier > 0  # sizes come from the noisy count
    q = synth.training_["sample_rate"]
    assert q == pytest.approx(1 / -(-synth.public_rows_ // synth.config.batch_size))


def test_delta_comes_from_a_public_size_never_from_the_rows():
    assert default_delta(48842) == 1e-6 and default_delta(101766) == 1e-7 and default_delta(None) == 1e-6
    assert PrivacyConfig().resolved_delta(48842) == 1e-6
    assert PrivacyConfig(population_size=5_000_000).resolved_delta(48842) == 1e-8
    assert PrivacyConfig(delta=1e-4).resolved_delta(48842) == 1e-4


# -- finding 5 and the failure rule: the budget protocol ----------------------------------------------------------------
def test_a_stop_after_the_read_is_charged_the_whole_reservation(tmp_path):
    url = f"sqlite:///{tmp_path / 'b.db'}"
    with pytest.raises(RuntimeError), reservation(url, "p", "r1", epsilon=1.0, delta=1e-6, purpose="t") as run:
        run.mark_read()
        run.settle({"epsilon_spent": 0.01, "delta": 1e-6})  # whatever it claims: the stop depends on the data
        raise RuntimeError("a data-dependent stop")
    with reservation(url, "p", "r2", epsilon=1.0, delta=1e-6, purpose="t") as run:  # never read: released
        pass
    with reservation(url, "p", "r3", epsilon=0.5, delta=1e-6, purpose="t") as run:
        run.mark_read()
        run.settle({"epsilon_spent": 0.49, "delta": 1e-6})
    (pop,) = BudgetLedger(url).status("p")
    by = {r.run_id: r for r in pop.runs}
    assert by["r1"].state == "committed" and by["r1"].spent_epsilon == 1.0
    assert by["r2"].state == "released"
    assert by["r3"].spent_epsilon == 0.49 and pop.spent_epsilon == pytest.approx(1.49)


def test_owner_tools_are_recorded_as_non_dp_access(tmp_path):
    led = BudgetLedger(tmp_path / "b.db")
    led.record_access("adult", "audit risk", "train a.csv")
    (pop,) = led.status("adult")
    assert [a.tool for a in pop.accesses] == ["audit risk"] and pop.spent_epsilon == 0


# -- finding 9: populations and float32 bounds ---------------------------------------------------------------------------
def test_a_capped_run_needs_a_declared_population(adult_schema):
    assert population_of(None, adult_schema) == "uci-adult"  # the shipped schema declares its people
    anonymous = adult_schema.model_copy(update={"population": None})
    assert population_of(None, anonymous) == "adult"
    assert population_of("owners-name", anonymous, capped=True) == "owners-name"
    with pytest.raises(ConfigError, match="declared population"):
        population_of(None, anonymous, capped=True)


def test_group_bounds_in_float32_never_exceed_the_float64_bound_of_the_noise():
    import torch

    from dpsyn.synth.group_clip import GroupClipConfig, GroupClipper, float32_floor

    x = np.array([0.1, 1 / 3, 0.7, 1.0, 2.5e-3])
    f = float32_floor(x)
    assert f.dtype == np.float32 and np.all(f.astype(np.float64) <= x)
    assert np.all(np.nextafter(f, np.float32(np.inf)).astype(np.float64) > x)  # the largest such float32
    clipper = GroupClipper(2, 0.1, GroupClipConfig(column="g", rarity=0))  # both groups start at C = 0.1
    exact = clipper.bounds
    assert exact[0] == 0.1 and np.float32(0.1).astype(np.float64) > 0.1  # the case that rounded up
    b = clipper.row_bounds(torch.tensor([0, 1, 1])).double().numpy()
    assert np.all(b <= exact[[0, 1, 1]]) and clipper.max_bound() == exact.max()


# -- finding 8: seeds -------------------------------------------------------------------------------------------------
def test_each_mechanism_gets_its_own_seed():
    seeds = {derive_seed(3, label) for label in ("dpgen", "dpdsyn", "validation", "rows")}
    assert len(seeds) == 4 and derive_seed(None, "x") is None and derive_seed(3, "dpgen") == derive_seed(3, "dpgen")


def test_public_counts_are_for_known_sizes():
    c = NoisyCounts.public(train=100)
    assert c.lower_bound("train") == 99 and c.estimate() == 100
