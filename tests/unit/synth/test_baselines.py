"""The suite's trivial DP baselines (benchmarks/baselines.py) are charged what they spend."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

from baselines import Independent, NaiveBayes  # noqa: E402

from dpsyn.privacy import PrivacyAccountant  # noqa: E402


@pytest.mark.parametrize("cls", [Independent, NaiveBayes])
def test_one_gaussian_release_takes_the_rest_of_the_budget(cls, adult_sample, adult_schema):
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    synth = cls(None, privacy={"epsilon": 1.0, "delta": 1e-5, "secure_rng": False, "noise_seed": 0})
    synth.fit(adult_sample.iloc[:1500], adult_schema, accountant=acct)
    assert [m.label for m in acct.ledger][1:] == [f"{cls.name}.{'one_way' if cls is Independent else 'tables'}"]
    assert 0.97 <= acct.check() <= 1.0
    out = synth.sample(400, random_state=0)
    assert list(out.columns) == adult_schema.output_columns() and len(out) == 400
