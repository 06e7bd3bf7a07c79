"""target:signal — a synthetic target unrelated to every other column fails, with no ε spent on it.

The issue's case: on diabetes130 at 2,000 rows and ε = 1, a target shuffled against the rest passed, because its
dependence on each feature is weak and the noisy real side cannot resolve it. The synthetic table, though, is
public: whether *its* target carries any signal is a permutation test on it alone."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant
from dpsyn.schema import parse_schema
from dpsyn.validation import ValidationConfig, validate
from dpsyn.validation.checks import target_signal

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning")]

K = 12
SCHEMA = parse_schema("schema_version: 1\nname: weak\ntarget: y\ncolumns:\n" + "".join(
    f"  - {{name: f{i}, kind: categorical, domain: ['0', '1']}}\n" for i in range(K))
    + "  - {name: y, kind: categorical, domain: ['no', 'yes']}\n")


def _weak(n: int, rng: np.random.Generator) -> pd.DataFrame:
    """Twelve coin features, each nudging a 30 % target by 4 points: every pair's dependence is small."""
    f = rng.integers(0, 2, size=(n, K))
    p = 0.3 + 0.04 * (f - 0.5).sum(axis=1) / np.sqrt(K) * 3
    y = np.where(rng.random(n) < p, "yes", "no")
    return pd.DataFrame({**{f"f{i}": pd.Series(f[:, i].astype(str), dtype="string") for i in range(K)},
                         "y": pd.Series(y, dtype="string")})


def _shuffled(df: pd.DataFrame, rng) -> pd.DataFrame:
    return df.assign(y=df["y"].to_numpy()[rng.permutation(len(df))])


def _gate(real, synth, config, seed=0):
    return validate(real, synth, SCHEMA, config, accountant=PrivacyAccountant(epsilon=1, delta=1e-6),
                    noise=NoiseSource(secure=False, seed=seed), counts=NoisyCounts.public(train=len(real)))


@pytest.fixture(scope="module")
def halves():
    rng = np.random.default_rng(3)
    return _weak(2000, rng), _weak(2000, rng)


def test_the_permutation_test_tells_a_weak_real_target_from_a_shuffled_one(halves):
    _, b = halves
    cfg = ValidationConfig()
    assert target_signal(b, SCHEMA, cfg) <= 0.01
    rng = np.random.default_rng(0)
    ps = [target_signal(_shuffled(b, rng), SCHEMA, cfg) for _ in range(10)]
    assert sum(p <= 0.01 for p in ps) <= 1 and np.median(ps) > 0.1
    assert target_signal(b.assign(y="no"), SCHEMA, cfg) == 1.0  # constant target: no signal at all


def test_it_is_deterministic_and_off_when_asked_or_without_a_target(halves):
    _, b = halves
    cfg = ValidationConfig()
    assert target_signal(b, SCHEMA, cfg) == target_signal(b, SCHEMA, cfg)
    assert target_signal(b, SCHEMA, ValidationConfig(target_signal_alpha=None)) is None
    assert target_signal(b.drop(columns="y"), SCHEMA, cfg) is None


def test_the_gate_fails_a_shuffled_weak_target_by_name_and_passes_the_real_half(halves):
    a, b = halves
    bad = _shuffled(b, np.random.default_rng(1))
    # without the check, the noisy real side cannot see the shuffle: this is the false pass being fixed
    assert _gate(a, bad, ValidationConfig(utility=False, target_signal_alpha=None)).verdict == "passed"
    report = _gate(a, bad, ValidationConfig(utility=False))
    assert report.verdict == "failed" and {c.name for c in report.failures()} == {"target:signal"}
    sig = next(c for c in report.checks if c.name == "target:signal")
    assert sig.noise_std == 0.0 and sig.primary and sig.value > sig.threshold
    good = _gate(a, b, ValidationConfig(utility=False))
    assert good.verdict == "passed", [(c.name, c.value, c.limit) for c in good.failures()]
