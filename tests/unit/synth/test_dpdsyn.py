"""dpdsyn's own promises beyond the shared contract."""

import numpy as np
import pytest

from dpsyn.errors import ConfigError
from dpsyn.privacy import PrivacyAccountant
from dpsyn.schema import parse_schema
from dpsyn.synth import create

FAST = {"epochs": 1, "batch_size": 128, "hidden": 8, "task_epochs": 1, "task_batch_size": 128}
PRIV = {"secure_rng": False, "noise_seed": 0}


def test_both_mechanisms_on_one_accountant_within_budget(adult_sample, adult_schema):
    acct = PrivacyAccountant(epsilon=0.8, delta=1e-5)
    acct.plan("validation.fidelity", noise_multiplier=acct.sigma_for_share(0.2))
    synth = create("dpdsyn", FAST, privacy=PRIV).fit(adult_sample.iloc[:800], adult_schema, accountant=acct)
    labels = [m.label for m in acct.ledger]
    assert labels == ["dpdsyn.rows", "dpdsyn.marginals", "dpdsyn.task", "dpdsyn.generator"]
    # the planned gate is still reserved: spending it too must stay within budget
    acct.record("validation.fidelity", noise_multiplier=acct.planned[0].noise_multiplier, sample_rate=1.0, steps=1)
    assert acct.check() <= 0.8
    t = synth.training_
    assert t["task"]["noise_multiplier"] > 0 and t["generator"]["noise_multiplier"] > 0
    assert t["marginals"]["noise_multiplier"] > 0 and t["marginals"]["steps"] == 1


def test_needs_a_target(adult_sample):
    schema = parse_schema("""
name: notarget
columns:
  - {name: age, kind: numeric, bounds: [17, 90], integer: true}
  - {name: sex, kind: categorical, domain: [Female, Male]}
""")
    with pytest.raises(ConfigError, match="target"):
        create("dpdsyn", FAST, privacy=PRIV).fit(adult_sample[["age", "sex"]], schema)


def test_labels_follow_the_task_model(adult_sample, adult_schema):
    synth = create("dpdsyn", FAST, privacy={**PRIV, "epsilon": 2.0}).fit(adult_sample.iloc[:800], adult_schema)
    out = synth.sample(400, random_state=0)
    assert set(out["income"].dropna()) <= {"<=50K", ">50K"}


@pytest.mark.slow  # a process or a real training: in the full suite, not the fast tier
@pytest.mark.parametrize("name", ["dpgen", "dpdsyn"])
def test_log_likelihood_scores_rows(name, adult_sample, adult_schema):
    cfg = FAST if name == "dpdsyn" else {k: v for k, v in FAST.items() if not k.startswith("task_")}
    synth = create(name, cfg, privacy={**PRIV, "epsilon": 4.0}).fit(adult_sample.iloc[:800], adult_schema)
    ll = synth.log_likelihood(adult_sample.iloc[:50])
    assert ll.shape == (50,) and np.all(np.isfinite(ll)) and np.all(ll < 0)
    # a record made of the rarest codes is less likely than the data's own rows
    from dpsyn.audit.canaries import make_canaries

    odd = make_canaries(adult_schema, 50, rng=np.random.default_rng(0))
    assert np.median(synth.log_likelihood(odd)) < np.median(ll)


@pytest.mark.slow  # a process or a real training: in the full suite, not the fast tier
@pytest.mark.parametrize("size_share", [0.0, 0.2])
def test_group_clip_option_on_both_dp_sgd_mechanisms(adult_sample, adult_schema, size_share):
    """DP-SGD-S on the task model and the generator: same accounting labels, bounds recorded per group; with
    size_share, one group-size histogram is charged once, before both, and serves both clippers."""
    cfg = {**FAST, "group_clip": {"column": "sex", "size_share": size_share}}
    acct = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    synth = create("dpdsyn", cfg, privacy=PRIV).fit(adult_sample.iloc[:600], adult_schema, accountant=acct)
    t = synth.training_
    assert set(t["task"]["group_clip"]["final_bounds"]) == {"0", "1"}  # codes of the public encoding
    assert t["generator"]["group_clip"]["steps"] > 0
    assert acct.check() <= 2.0
    labels = [m.label for m in acct.ledger]
    assert labels == ["dpdsyn.rows", "dpdsyn.marginals"] + ["group_clip.sizes"] * (size_share > 0) + \
        ["dpdsyn.task", "dpdsyn.generator"]
    for part in ("task", "generator"):
        gc = t[part]["group_clip"]
        assert gc["settings"]["size_share"] == size_share
        assert ("sizes_noise_std" in gc) == (size_share > 0)
    if size_share:
        assert t["task"]["group_clip"]["sizes_noise_std"] == pytest.approx(acct.ledger[2].noise_multiplier)


def test_group_clip_column_must_be_in_the_schema(adult_sample, adult_schema):
    with pytest.raises(ConfigError, match="race"):  # a column that is not in the schema names the valid ones
        create("dpgen", {"epochs": 1, "group_clip": {"column": "favourite_colour"}},
               privacy=PRIV).fit(adult_sample.iloc[:200], adult_schema)


@pytest.mark.slow  # a process or a real training: in the full suite, not the fast tier
def test_task_model_weights_are_the_ema_of_its_iterates(adult_sample, adult_schema):
    import torch

    fits = [create("dpdsyn", {**FAST, "task_ema_decay": d}, privacy=PRIV).fit(adult_sample.iloc[:400], adult_schema)
            for d in (0.0, 0.9)]
    w0, w1 = (next(f.task_.parameters()).detach() for f in fits)
    assert not torch.allclose(w0, w1)  # same seed and noise: only the averaging differs
    assert fits[1].training_["task"]["ema_decay"] == 0.9
