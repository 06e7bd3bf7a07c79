"""Privacy-risk diagnostics (dpsyn.audit.risk): each attack must catch a leaky control and not a private one."""

from __future__ import annotations

import numpy as np
import pytest

from dpsyn.audit.risk import (
    attribute_inference,
    dcr_diagnostic,
    hamming_dcr,
    sensitive_columns,
    shadow_mia,
    tpr_at_fpr,
)


def test_tpr_at_fpr_on_known_scores():
    labels = np.array([1] * 10 + [0] * 90)
    perfect = np.r_[np.full(10, 2.0), np.zeros(90)]
    assert tpr_at_fpr(perfect, labels) == {"0.001": 1.0, "0.01": 1.0, "0.1": 1.0}
    # 3 members above every non-member, the rest mixed: at FPR 0 only those 3 are found
    s = np.r_[[5.0, 5.0, 5.0], np.zeros(7), np.zeros(90)]
    assert tpr_at_fpr(s, labels)["0.001"] == pytest.approx(0.3)


def test_hamming_dcr_matches_brute_force():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 3, (57, 6)), rng.integers(0, 3, (300, 6))
    brute = np.array([min(int((x != y).sum()) for y in b) for x in a])
    assert np.array_equal(hamming_dcr(a, b, chunk=10), brute)


@pytest.fixture(scope="module")
def halves(adult_sample):
    df = adult_sample.sample(frac=1.0, random_state=0).reset_index(drop=True)
    return df.iloc[:1300].reset_index(drop=True), df.iloc[1300:2600].reset_index(drop=True), \
        df.iloc[2600:].reset_index(drop=True)


def test_dcr_tells_a_copy_from_a_fresh_sample(halves, adult_schema):
    train, holdout, other = halves
    copy = dcr_diagnostic(train, holdout, train, adult_schema)
    assert copy.exact_copies_of_train == 1.0 and copy.share_closer_to_train > 0.95
    fresh = dcr_diagnostic(train, holdout, other, adult_schema)
    assert 0.4 < fresh.share_closer_to_train < 0.6
    assert fresh.exact_copies_of_train < 0.2


@pytest.mark.slow  # a process or a real training: in the full suite, not the fast tier
def test_attribute_inference_sees_memorisation_only(halves, adult_schema):
    train, holdout, other = halves
    cols = sensitive_columns(adult_schema)
    assert cols and all(adult_schema.column(c).tier.value == "L2" for c in cols)
    leaky = {r.column: r for r in attribute_inference(train, holdout, train, adult_schema, cols)}
    fair = {r.column: r for r in attribute_inference(train, holdout, other, adult_schema, cols)}
    # a model fitted on the members themselves does better on them; one fitted on other people does not
    assert max(r.member_advantage for r in leaky.values()) > 0.03
    assert all(abs(r.member_advantage) < 0.05 for r in fair.values())
    assert all(0 <= r.accuracy_majority <= 1 and r.rows == 1300 for r in fair.values())


def test_shadow_mia_catches_a_copying_synthesizer(adult_sample, adult_schema):
    res = shadow_mia(lambda train, seed: train, adult_sample, adult_schema, n_targets=40, shadows=3, eval_runs=2,
                     train_rows=800, seed=1)
    assert res.auc > 0.95 and res.tpr_at_fpr["0.01"] > 0.8


def test_shadow_mia_is_at_chance_against_a_synthesizer_that_ignores_its_input(adult_sample, adult_schema):
    pool = adult_sample.sample(n=800, random_state=5).reset_index(drop=True)

    def ignore(train, seed):  # output does not depend on the training rows
        return pool

    res = shadow_mia(ignore, adult_sample, adult_schema, n_targets=40, shadows=3, eval_runs=2, train_rows=800, seed=1)
    assert 0.3 < res.auc < 0.7
