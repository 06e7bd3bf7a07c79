"""dpsyn.validation (the DP fidelity gate) and the noise it draws from dpsyn.privacy.noise."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from dpsyn.errors import GateFailedError, InsecureRNGWarning
from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant
from dpsyn.schema import parse_schema
from dpsyn.validation import (
    VALIDATION_LABEL,
    ValidationConfig,
    fidelity_statistics,
    plan_validation,
    validate,
)

pytestmark = [
    pytest.mark.filterwarnings("ignore:Optimal order is the largest alpha"),
    pytest.mark.filterwarnings("ignore:divide by zero encountered in log:RuntimeWarning"),
]

PLANTED = "ZZ_PLANTED_CATEGORY"

SMALL_YAML = f"""
schema_version: 1
name: small
columns:
  - {{name: x, kind: numeric, bounds: [0, 10]}}
  - {{name: c, kind: categorical, domain: [a, b, {PLANTED}], nullable: true}}
  - {{name: y, kind: numeric, bounds: [-5, 5], nullable: true}}
  - {{name: secret_id, kind: identifier, tier: L1}}
"""


@pytest.fixture(scope="module")
def small_schema():
    return parse_schema(SMALL_YAML)


def _noise(seed: int = 0) -> NoiseSource:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InsecureRNGWarning)
        return NoiseSource(secure=False, seed=seed)


def _accountant(name: str = "prv") -> PrivacyAccountant:
    return PrivacyAccountant(epsilon=1, delta=1e-5, accountant=name)


def _random_small(rng: np.random.Generator, n: int) -> pd.DataFrame:
    x = rng.uniform(-2, 12, n)  # some values outside the public bounds (clipped by the gate)
    y = rng.normal(0, 3, n)
    y[rng.random(n) < 0.2] = np.nan
    c = rng.choice(np.array(["a", "b", PLANTED, None], dtype=object), n)
    return pd.DataFrame({"x": x, "c": pd.Series(c, dtype="string"), "y": y, "secret_id": [f"id{i}" for i in range(n)]})


# -- exact statistics -----------------------------------------------------------------------


def test_identical_frames_have_zero_statistics(adult_sample, adult_schema):
    stats = fidelity_statistics(adult_sample, adult_sample.copy(), adult_schema)
    assert [c for c, _, _ in stats] == [c.name for c in adult_schema.synthesizable_columns()]
    assert all(v == 0.0 for _, _, v in stats)
    kinds = {c: s for c, s, _ in stats}
    assert kinds["age"] == "ks" and kinds["workclass"] == "tvd"


def test_shuffled_rows_keep_every_marginal(adult_sample, adult_schema):
    shuffled = adult_sample.sample(frac=1.0, random_state=0).reset_index(drop=True)
    assert all(v == 0.0 for _, _, v in fidelity_statistics(adult_sample, shuffled, adult_schema))


@pytest.mark.parametrize(
    ("corrupt", "column", "minimum"),
    [
        (lambda d: d.assign(age=d["age"] + 30), "age", 0.5),
        (lambda d: d.assign(fnlwgt=d["fnlwgt"] * 3), "fnlwgt", 0.5),
        (lambda d: d.assign(relationship="Husband"), "relationship", 0.5),
        (lambda d: d.assign(workclass=pd.NA), "workclass", 0.9),  # missing counts as its own value
        (lambda d: d.assign(sex="Female"), "sex", 0.5),
    ],
    ids=["age+30", "fnlwgt*3", "one-relationship", "all-missing-workclass", "one-sex"],
)
def test_corrupted_column_gives_large_statistic(adult_sample, adult_schema, corrupt, column, minimum):
    stats = {c: v for c, _, v in fidelity_statistics(adult_sample, corrupt(adult_sample.copy()), adult_schema)}
    assert stats[column] > minimum
    assert all(v == 0.0 for c, v in stats.items() if c != column)


def test_statistics_are_in_unit_interval(small_schema):
    rng = np.random.default_rng(1)
    for _ in range(10):
        stats = fidelity_statistics(_random_small(rng, 30), _random_small(rng, 17), small_schema)
        assert [c for c, _, _ in stats] == ["x", "c", "y"]  # the identifier is not compared
        assert all(0.0 <= v <= 1.0 for _, _, v in stats)


@pytest.mark.parametrize("seed", range(6))
def test_one_row_moves_each_statistic_by_at_most_1_over_n_minus_1(small_schema, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 40))
    real = _random_small(rng, n)
    synth = _random_small(rng, int(rng.integers(1, 60)))
    base = fidelity_statistics(real, synth, small_schema)
    bound = 1.0 / (n - 1) + 1e-12
    extra = _random_small(rng, 1)
    neighbours = [
        pd.concat([real, extra], ignore_index=True),  # one row added
        real.drop(index=int(rng.integers(n))).reset_index(drop=True),  # one row removed
    ]
    for other in neighbours:
        for (col, _, v0), (_, _, v1) in zip(base, fidelity_statistics(other, synth, small_schema), strict=True):
            assert abs(v1 - v0) <= bound, (col, v0, v1, n)


def test_sensitivity_bound_is_attained(small_schema):
    # real = one category; adding a row of another category moves TVD by exactly 1/(n+1) ≤ 1/(n-1).
    n = 5
    real = pd.DataFrame({"x": [1.0] * n, "c": pd.Series(["a"] * n, dtype="string"), "y": [0.0] * n})
    synth = real.copy()
    more = pd.concat([real, real.iloc[[0]].assign(c="b", x=9.0)], ignore_index=True)
    before = {c: v for c, _, v in fidelity_statistics(real, synth, small_schema)}
    after = {c: v for c, _, v in fidelity_statistics(more, synth, small_schema)}
    assert after["c"] - before["c"] == pytest.approx(1 / (n + 1))
    assert after["x"] - before["x"] == pytest.approx(1 / (n + 1))
    assert after["y"] == before["y"] == 0.0


# -- the gate -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def identical_run(adult_sample, adult_schema):
    acct = _accountant()
    report = validate(adult_sample, adult_sample.copy(), adult_schema, accountant=acct, noise=_noise(),
                      counts=NoisyCounts.public(train=len(adult_sample)))
    return acct, report


def test_validate_charges_one_mechanism(identical_run):
    acct, _ = identical_run
    assert len(acct.ledger) == 1
    m = acct.ledger[0]
    assert m.label == VALIDATION_LABEL
    assert m.sample_rate == 1.0 and m.steps == 1 and m.noise_multiplier > 0
    assert acct.planned == []
    spent = acct.check()
    assert 0 < spent <= 1.0
    assert spent == pytest.approx(ValidationConfig().budget_share, rel=0.05)  # the default budget share


def _weights(report, cfg=None):
    """Σ w² of the gate's release: each primary check weighs 1 (soft rules rule_weight), the per-column and
    per-pair checks share detail_weight, the histograms hist_weight (√2 sensitivity each: counted twice)."""
    cfg = cfg or ValidationConfig()
    primary = sum(1 for c in report.checks if c.primary and c.statistic not in ("hard_rule", "target_signal_p")
                  and not c.name.startswith("utility:"))
    details = any(not c.primary and not c.name.startswith("utility:") for c in report.checks)
    return primary + (cfg.detail_weight if details else 0) + (2 * cfg.hist_weight if report.histograms else 0)


def test_noise_std_is_sigma_sqrt_sum_of_weights_over_n_minus_1(identical_run, adult_sample, adult_schema):
    acct, report = identical_run
    sigma = acct.ledger[0].noise_multiplier
    assert len(report.histograms) == 15
    from dpsyn.encoding import DiscreteEncoder

    sizes = DiscreteEncoder(adult_schema).sizes
    cfg = ValidationConfig()
    cap = min(cfg.pair_max_cells, int(len(adult_sample) / cfg.pair_min_rows_per_cell))  # 160 cells at 4,000 rows
    pairs = sum(a * b <= cap for i, a in enumerate(sizes) for b in sizes[i + 1:])
    n = len(adult_sample)
    names = {c.name for c in report.checks}
    # the verdict's one statistic; the diagnosis: the target, the families' worst excesses, every column and pair
    assert {"gate:worst", "target:tvd", "one_way:worst", "pairs:worst", "tail:worst"} <= names
    assert "constant:worst" not in names  # no near-constant column in a real copy
    # the one noisy primary statistic; target:signal is judged on the synthetic table alone (no noise, no ε)
    assert [c.name for c in report.checks if c.primary] == ["gate:worst", "target:signal"]
    assert next(c for c in report.checks if c.name == "target:signal").noise_std == 0.0
    assert sum(c.statistic == "tvd2" for c in report.checks) == pairs and 50 < pairs < 105
    assert report.n_real == n and report.n_synthetic == n
    # Σw² = 1 (verdict) + the diagnosis pool + 2 × the histograms' pool (√2 sensitivity each)
    assert report.noise_std == pytest.approx(sigma * math.sqrt(1 + cfg.detail_weight + 2 * cfg.hist_weight) / (n - 1),
                                             rel=1e-12)
    gate = next(c for c in report.checks if c.name == "gate:worst")
    assert gate.noise_std == pytest.approx(report.noise_std) and gate.status == "passed"
    pool_a = 4  # target, worst one-way, worst pair, tail
    numeric = sum(c.kind != "categorical" for c in adult_schema.synthesizable_columns())
    pool_b = 14 + pairs + numeric  # per column (but the target), per pair, per numeric column's tail
    fam = next(c for c in report.checks if c.name == "one_way:worst")
    half = cfg.detail_weight / 2
    assert fam.noise_std == pytest.approx(report.noise_std / math.sqrt(half / pool_a))
    for name in ("ks:age", "tvd2:age/workclass", "tail:age"):
        one = next(c for c in report.checks if c.name == name)
        assert one.noise_std == pytest.approx(report.noise_std / math.sqrt(half / pool_b))
    assert all(h.noise_std == pytest.approx(report.noise_std / math.sqrt(cfg.hist_weight / 15))
               for h in report.histograms)


def test_the_verdict_does_not_get_noisier_with_width(adult_sample, adult_schema):
    """A table with twice the columns: the primary checks keep their noise (a fixed pool for the details)."""
    wide = adult_sample.copy()
    extra = []
    for c in adult_schema.columns:
        if c.name == adult_schema.target:
            continue
        wide[c.name + "_2"] = wide[c.name]
        extra.append(c.model_copy(update={"name": c.name + "_2"}))
    schema2 = adult_schema.model_copy(update={"columns": [*adult_schema.columns, *extra]})
    acct1, acct2 = _accountant(), _accountant()
    counts = NoisyCounts.public(train=len(adult_sample))
    r1 = validate(adult_sample, adult_sample, adult_schema, accountant=acct1, noise=_noise(), counts=counts)
    r2 = validate(wide, wide, schema2, accountant=acct2, noise=_noise(), counts=counts)
    assert len(r2.checks) > 2 * len(r1.checks)
    assert r2.noise_std == pytest.approx(r1.noise_std)


def test_reported_values_are_noisy(identical_run):
    _, report = identical_run
    noisy = [c for c in report.checks if c.statistic in ("ks", "tvd", "tvd2")]
    values = np.array([c.value for c in noisy])
    assert np.all(values != 0.0)  # the exact statistics are all 0: only noisy values are kept
    assert np.all(np.abs(values) < 6 * np.array([c.noise_std for c in noisy]))


def test_identical_copy_passes(identical_run):
    _, report = identical_run
    assert report.is_valid()
    report.raise_if_failed()
    assert report.metrics()["gate_passed"] == 1.0
    assert report.metrics()["gate_failed_checks"] == 0.0


def test_corrupted_copy_fails_naming_the_checks(adult_sample, adult_schema):
    bad = adult_sample.copy()
    bad["age"] = bad["age"] + 30
    bad["relationship"] = "Husband"
    report = validate(adult_sample, bad, adult_schema, accountant=_accountant("rdp"), noise=_noise(1),
                      counts=NoisyCounts.public(train=len(adult_sample)))
    assert not report.is_valid() and report.verdict == "failed"
    assert "gate:worst" in {c.name for c in report.failures()}  # the verdict's statistic sees it at ε = 1
    # with more ε, the diagnosis is precise enough at 4,000 rows to say where
    report = validate(adult_sample, bad, adult_schema, accountant=PrivacyAccountant(epsilon=8, delta=1e-5),
                      noise=_noise(1), counts=NoisyCounts.public(train=len(adult_sample)))
    failed = {c.name for c in report.failures()}
    assert {"gate:worst", "one_way:worst", "pairs:worst"} <= failed
    named = failed - {"gate:worst", "one_way:worst", "pairs:worst", "tail:worst", "constant:worst"}
    assert named and all("age" in f or "relationship" in f for f in named)
    with pytest.raises(GateFailedError) as info:
        report.raise_if_failed()
    msg = str(info.value)
    assert "gate:worst" in msg and "tvd2:age/" in msg and f"{len(failed)} of {len(report.checks)}" in msg
    assert sorted(info.value.failures) == sorted(failed)
    assert info.value.exit_code == 1


def test_per_column_threshold_override(adult_sample, adult_schema):
    bad = adult_sample.assign(age=adult_sample["age"] + 30)
    config = ValidationConfig(thresholds={"age": 1.0})
    report = validate(adult_sample, bad, adult_schema, config, accountant=_accountant("rdp"), noise=_noise(2),
                      counts=NoisyCounts.public(train=len(adult_sample)))
    age = next(c for c in report.checks if c.column == "age")
    assert age.threshold == 1.0 and age.passed
    assert report.is_valid(), [c.name for c in report.failures()]


def test_validate_uses_the_planned_sigma(small_schema):
    rng = np.random.default_rng(3)
    real, synth = _random_small(rng, 50), _random_small(rng, 50)
    acct = PrivacyAccountant(epsilon=1, delta=1e-5, accountant="rdp")
    sigma = plan_validation(acct, ValidationConfig(budget_share=0.3))
    assert [m.label for m in acct.planned] == [VALIDATION_LABEL]
    report = validate(real, synth, small_schema, ValidationConfig(hist_weight=0), accountant=acct, noise=_noise(),
                      counts=NoisyCounts.public(train=len(real)))
    assert acct.planned == [] and report.histograms == []
    assert [(m.label, m.noise_multiplier) for m in acct.ledger] == [(VALIDATION_LABEL, sigma)]
    # 3 columns, no target; no pairs at 50 rows (25 rows per cell: at most 2 cells)
    assert not any(c.statistic == "tvd2" for c in report.checks)
    assert report.noise_std == pytest.approx(sigma * math.sqrt(_weights(report, ValidationConfig(hist_weight=0))) / 49)
    assert acct.check() <= 1.0
    # 50 rows at ε = 1: far too noisy to judge; said so, and never a pass
    assert report.verdict == "uninformative" and not report.is_valid()
    assert all(c.status == "uninformative" for c in report.checks)
    with pytest.raises(GateFailedError, match="cannot judge this table at this ε"):
        report.raise_if_failed()
    report.raise_if_failed(allow_uninformative=True)


def test_report_json_holds_no_category_values(small_schema):
    rng = np.random.default_rng(4)
    real, synth = _random_small(rng, 40), _random_small(rng, 40)
    synth["c"] = PLANTED
    report = validate(real, synth, small_schema, ValidationConfig(hist_weight=0), accountant=_accountant("rdp"),
                      noise=_noise(), counts=NoisyCounts.public(train=len(real)))
    dump = report.model_dump_json()
    assert PLANTED not in dump
    assert not any(f"id{i}" in dump for i in range(40))
    assert '"c"' in dump and '"x"' in dump  # column names are fine
    assert "secret_id" not in dump  # identifiers are not compared at all


# -- noise ----------------------------------------------------------------------------------


def test_secure_normal_has_the_right_moments():
    z = NoiseSource(secure=True).normal((200_000,), 2.0, dtype=torch.float64).numpy()
    assert z.shape == (200_000,)
    assert abs(z.mean()) < 0.03
    assert z.std() == pytest.approx(2.0, rel=0.02)


def test_secure_normal_shapes_and_zero_std():
    ns = NoiseSource(secure=True)
    assert ns.normal((3, 4), 1.0).shape == (3, 4)
    assert ns.normal((3, 4), 1.0).dtype == torch.float32
    assert torch.equal(ns.normal((2,), 0.0), torch.zeros(2))
    assert ns.normal_numpy(5, 1.0).dtype == np.float64
    a, b = ns.normal((1000,), 1.0), ns.normal((1000,), 1.0)
    assert not torch.equal(a, b)


@pytest.mark.parametrize("secure", [True, False])
def test_uniform_is_in_open_unit_interval(secure):
    ns = NoiseSource(secure=True) if secure else _noise(5)
    u = ns.uniform(100_000)
    assert u.shape == (100_000,)
    assert np.all((u > 0.0) & (u < 1.0))
    assert abs(u.mean() - 0.5) < 0.01


def test_secure_source_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error", InsecureRNGWarning)
        NoiseSource(secure=True)


def test_seeded_source_reproduces_and_warns():
    with pytest.warns(InsecureRNGWarning):
        a = NoiseSource(secure=False, seed=123)
    with pytest.warns(InsecureRNGWarning):
        b = NoiseSource(secure=False, seed=123)
    c = _noise(124)
    x, y, z = a.normal_numpy(50, 1.0), b.normal_numpy(50, 1.0), c.normal_numpy(50, 1.0)
    np.testing.assert_array_equal(x, y)
    assert not np.array_equal(x, z)
    np.testing.assert_array_equal(a.uniform(10), b.uniform(10))
    assert a.seed() == b.seed()


def test_a_column_shuffled_against_the_rest_fails_a_pair_check(adult_sample, adult_schema):
    """Shuffling keeps every one-way marginal; only the pair checks can see it."""
    rng = np.random.default_rng(0)
    bad = adult_sample.copy()
    bad["relationship"] = bad["relationship"].to_numpy()[rng.permutation(len(bad))]
    report = validate(adult_sample, bad, adult_schema, accountant=_accountant(), noise=_noise(2),
                      counts=NoisyCounts.public(train=len(adult_sample)))
    failed = {c.name for c in report.failures()}
    assert "gate:worst" in failed
    assert all(f in ("gate:worst", "pairs:worst") or (f.startswith("tvd2:") and "relationship" in f) for f in failed)


def test_histograms_hold_public_labels_and_noisy_real_shares(small_schema):
    """Plots need the real distribution: it is released with the same Gaussian mechanism, over public labels."""
    from dpsyn.encoding import DiscreteEncoder

    rng = np.random.default_rng(5)
    real, synth = _random_small(rng, 400), _random_small(rng, 300)
    acct = _accountant("rdp")
    report = validate(real, synth, small_schema, accountant=acct, noise=_noise(5),
                      counts=NoisyCounts.public(train=len(real)))
    assert len(acct.ledger) == 1  # histograms ride in the one release
    enc = DiscreteEncoder(small_schema)
    assert [h.column for h in report.histograms] == enc.names
    codes_r, codes_s = enc.encode(real), enc.encode(synth)
    for j, (h, col) in enumerate(zip(report.histograms, enc.columns, strict=True)):
        assert h.labels == list(col.labels)  # the schema's categories/bins, nothing from the rows
        exact_r = np.bincount(codes_r[:, j], minlength=col.size) / len(real)
        exact_s = np.bincount(codes_s[:, j], minlength=col.size) / len(synth)
        assert np.allclose(h.synthetic, exact_s)  # synthetic side exact
        diff = np.array(h.real) - exact_r
        assert np.all(diff != 0) and np.all(np.abs(diff) < 6 * h.noise_std)  # real side noisy, at its std
    assert report.noise_std == pytest.approx(acct.ledger[0].noise_multiplier * math.sqrt(_weights(report)) / 399)


def test_a_7_percent_target_made_constant_fails(adult_sample, adult_schema):
    """The issue's case: a rare positive class comes out never predicted (target constant) and must not pass."""
    pos = adult_sample[adult_sample["income"] == ">50K"]
    neg = adult_sample[adult_sample["income"] != ">50K"]
    table = pd.concat([neg, pos.iloc[: int(len(neg) * 0.07 / 0.93)]]).sample(frac=1, random_state=0)
    half = len(table) // 2
    real, synth = table.iloc[:half].reset_index(drop=True), table.iloc[half:].reset_index(drop=True)
    assert 0.05 < (real["income"] == ">50K").mean() < 0.09
    counts = NoisyCounts.public(train=len(real))
    ok = validate(real, synth, adult_schema, accountant=PrivacyAccountant(epsilon=3, delta=1e-5), noise=_noise(4),
                  counts=counts)
    assert ok.verdict == "passed", [(c.name, c.value, c.limit) for c in ok.failures()]
    bad = validate(real, synth.assign(income="<=50K"), adult_schema, accountant=PrivacyAccountant(epsilon=3, delta=1e-5),
                   noise=_noise(4), counts=counts)
    assert bad.verdict == "failed" and "gate:worst" in {c.name for c in bad.failures()}


def test_400_males_with_a_pregnancy_code_fail_by_name_with_no_real_statistic():
    """The shipped diabetes130 rules are hard: checked on the synthetic table alone."""
    import gzip
    from pathlib import Path

    from dpsyn.io import coerce_to_schema
    from dpsyn.schema import load_schema
    from dpsyn.validation.rules import expand_icd9, load_rules

    schema = load_schema("diabetes130")
    with gzip.open(Path(__file__).resolve().parents[3] / "dpsyn" / "data" / "diabetes130_sample.csv.gz", "rt") as f:
        df = coerce_to_schema(pd.read_csv(f, dtype=str, keep_default_na=False).replace({"?": None, "": None}), schema,
                              check_domains=False)
    rules = load_rules("diabetes130")
    assert all(r.hard for r in rules.rules)
    preg = expand_icd9(["630-679", "V22-V24", "V27"], schema.column("diag_1").domain)
    bad = df.copy()
    bad.loc[bad.index[:400], "diag_1"], bad.loc[bad.index[:400], "gender"] = preg[0], "Male"
    from dpsyn.validation.checks import hard_rule_results

    got = {c: share for c, share, _ in hard_rule_results(bad, rules, schema)}
    assert got["rule:pregnancy_only_female"] >= 400 / len(bad)
    clean = {c: share for c, share, _ in hard_rule_results(df, rules, schema)}
    assert clean["rule:pregnancy_only_female"] == 0.0
