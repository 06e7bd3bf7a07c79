"""The gate's utility check: TSTR on a holdout against a DP train-on-real reference, released with DP noise."""

from __future__ import annotations

import numpy as np
import pytest

from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant
from dpsyn.validation import ValidationConfig, plan_validation, validate
from dpsyn.validation.utility import REFERENCE_LABEL, auc_from_shares, mann_whitney_u, split_holdout


def test_mann_whitney_u_matches_roc_auc():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.random(500) < 0.3
    s = rng.random(500) + y * 0.5
    s[:20] = 0.7  # ties
    u = mann_whitney_u(s, y)
    h = len(y)
    assert auc_from_shares(u / h**2, y.mean()) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    assert mann_whitney_u(s, np.zeros(500, dtype=bool)) == 0.0


def test_split_holdout_is_disjoint_and_near_the_share(adult_sample):
    tr, ho = split_holdout(adult_sample, 0.25, noise=NoiseSource(secure=False, seed=1))
    assert len(tr) + len(ho) == len(adult_sample)
    assert abs(len(ho) / len(adult_sample) - 0.25) < 0.03


def test_split_holdout_by_person_keeps_each_person_on_one_side(adult_sample):
    df = adult_sample.iloc[:3000].assign(_person=np.repeat(np.arange(1000), 3))
    tr, ho = split_holdout(df, 0.25, noise=NoiseSource(secure=False, seed=1), person="_person")
    assert len(tr) + len(ho) == len(df)
    assert not set(tr["_person"]) & set(ho["_person"])
    assert (ho["_person"].value_counts() == 3).all()  # a person goes with all their rows
    assert abs(ho["_person"].nunique() / 1000 - 0.25) < 0.05
    # without the column (a row-level run) the split is per row, as before
    tr2, ho2 = split_holdout(df, 0.25, noise=NoiseSource(secure=False, seed=1), person="no_such_column")
    assert set(tr2["_person"]) & set(ho2["_person"])


def _run(adult_sample, adult_schema, synth, seed=0):
    train, holdout = adult_sample.iloc[:3000].reset_index(drop=True), adult_sample.iloc[3000:].reset_index(drop=True)
    acct = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    cfg = ValidationConfig(budget_share=0.5, reference_share=0.3, pair_max_cells=0)
    plan_validation(acct, cfg, n_train=len(train))
    assert {m.label for m in acct.planned} == {"validation.fidelity", REFERENCE_LABEL}
    rep = validate(train, synth(train), adult_schema, cfg, accountant=acct,
                   noise=NoiseSource(secure=False, seed=seed), holdout=holdout,
                   counts=NoisyCounts.public(train=len(train), holdout=len(holdout)))
    return rep, acct


@pytest.mark.slow  # a process or a real training: in the full suite, not the fast tier
def test_useful_synthetic_data_passes_and_both_mechanisms_are_charged(adult_sample, adult_schema):
    rep, acct = _run(adult_sample, adult_schema, lambda t: t.copy())
    check = next(c for c in rep.checks if c.name == "utility:auc_drop")
    assert check.passed, check
    assert rep.utility["auc_tstr"] > 0.8 and rep.utility["auc_trtr"] > 0.8 and rep.utility["positive"] == ">50K"
    assert sorted(m.label for m in acct.ledger) == ["validation.fidelity", REFERENCE_LABEL]
    assert acct.planned == [] and acct.check() <= 10.0


def test_labels_unrelated_to_features_fail_the_utility_check(adult_sample, adult_schema):
    def scramble(t):
        bad = t.copy()
        bad["income"] = bad["income"].to_numpy()[np.random.default_rng(0).permutation(len(bad))]
        return bad

    rep, _ = _run(adult_sample, adult_schema, scramble)
    check = next(c for c in rep.checks if c.name == "utility:auc_drop")
    assert not check.passed and check.value > 0.2, check


def test_no_holdout_no_utility_check(adult_sample, adult_schema):
    rep = validate(adult_sample, adult_sample.copy(), adult_schema, ValidationConfig(pair_max_cells=0),
                   accountant=PrivacyAccountant(epsilon=1.0, delta=1e-5), noise=NoiseSource(secure=False, seed=0),
                   counts=NoisyCounts.public(train=len(adult_sample)))
    assert not any(c.name == "utility:auc_drop" for c in rep.checks) and rep.utility is None
