"""The privacy unit (dpsyn/privacy/unit.py and the accountant's person-level ledger): a person with all their rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsyn.errors import ConfigError, SchemaError
from dpsyn.privacy import NoiseSource, PrivacyAccountant
from dpsyn.privacy.accountant import analytic_gaussian_epsilon
from dpsyn.privacy.unit import (
    UNIT_SIZES_LABEL,
    assign_fresh_ids,
    bound_contributions,
    person_codes,
    unit_sizes,
)
from dpsyn.schema import parse_schema
from dpsyn.synth import create

SCHEMA = """
name: visits
target: y
privacy_unit: {column: pid, max_rows_per_person: 2}
columns:
  - {name: pid, kind: identifier}
  - {name: a, kind: categorical, domain: [p, q, r]}
  - {name: y, kind: categorical, domain: ["0", "1"]}
"""


def _noise(seed=0):
    return NoiseSource(secure=False, seed=seed)


def test_bound_keeps_at_most_k_rows_per_person_and_all_rows_of_small_persons():
    codes = np.array([0, 0, 0, 0, 1, 2, 2, 3, 3, 3])
    keep = bound_contributions(codes, 2, _noise())
    kept = np.bincount(codes[keep], minlength=4)
    assert kept.tolist() == [2, 1, 2, 2]
    # every subset of a person's rows is possible: over seeds, each of person 0's four rows is kept sometimes
    seen = np.zeros(4)
    for seed in range(40):
        seen += bound_contributions(codes, 2, _noise(seed))[:4]
    assert (seen > 0).all() and seen.sum() == 80


def test_person_codes_are_dense_and_do_not_follow_the_ids_order():
    ids = pd.Series([f"id{i:03d}" for i in range(200)] + ["id000", None, None])
    codes = person_codes(ids, _noise())
    assert codes[0] == codes[200] and codes[201] != codes[202]  # a missing id is a person of its own
    assert sorted(set(codes.tolist())) == list(range(202))
    assert not (np.diff(codes[:200]) > 0).all()


def test_unit_sizes_histogram_refuses_unbounded_rows():
    assert unit_sizes(np.array([0, 0, 1, 2, 2]), 3).tolist() == [1.0, 2.0, 0.0]
    with pytest.raises(ValueError, match="bound the rows first"):
        unit_sizes(np.array([0, 0, 0]), 2)


def test_person_level_ledger_scales_row_level_mechanisms_by_the_bound():
    k = 3
    person = PrivacyAccountant(epsilon=1.0, delta=1e-6, unit="pid", rows_per_unit=k)
    row = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    # one Gaussian release: the row-level σ for a share is k times the one-row σ, and costs the same ε
    s_person, s_row = person.sigma_for_share(0.3), row.sigma_for_share(0.3)
    assert s_person == pytest.approx(k * s_row, rel=1e-9)
    person.record("release", noise_multiplier=s_person, sample_rate=1.0, steps=1)
    assert person.ledger[-1].noise_multiplier == pytest.approx(s_row)
    assert analytic_gaussian_epsilon(person.ledger[-1].noise_multiplier, delta=1e-6) == pytest.approx(0.3, rel=1e-3)
    # DP-SGD: recorded at σ/k and the rate at which some of a person's rows are drawn
    q, steps = 0.01, 200
    sigma = person.calibrate(sample_rate=q, steps=steps, label="sgd")
    person.record("sgd", noise_multiplier=sigma, sample_rate=q, steps=steps)
    m = person.ledger[-1]
    assert m.noise_multiplier == pytest.approx(sigma / k)
    assert m.sample_rate == pytest.approx(1 - (1 - q) ** k)
    assert person.check() <= 1.0
    # the same σ on a one-row accountant would spend far less: the bound is charged, not ignored
    row.record("sgd", noise_multiplier=sigma, sample_rate=q, steps=steps)
    assert row.epsilon() < 0.5 * person.epsilon()


def test_person_level_mechanisms_are_recorded_as_given_and_planned_noise_is_row_level():
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-6, unit="pid", rows_per_unit=4)
    s = acct.sigma_for_share(0.2, person_level=True)
    assert s == pytest.approx(PrivacyAccountant(epsilon=1.0, delta=1e-6).sigma_for_share(0.2))
    acct.plan(UNIT_SIZES_LABEL, noise_multiplier=s, person_level=True)
    acct.plan("gate", noise_multiplier=40.0)
    assert acct.planned_noise(UNIT_SIZES_LABEL) == pytest.approx(s)
    assert acct.planned_noise("gate") == pytest.approx(40.0)
    assert acct.planned[-1].noise_multiplier == pytest.approx(10.0)
    again = PrivacyAccountant.from_state_dict(acct.state_dict())
    assert again.planned_noise(UNIT_SIZES_LABEL) == pytest.approx(s) and again.rows_per_unit == 4
    assert again.summary()["neighbouring"] == "add/remove one person (pid) with all their rows (at most 4 per person)"
    assert PrivacyAccountant(epsilon=1.0, delta=1e-6).summary()["neighbouring"] == "add/remove one row"


def test_rows_per_unit_needs_a_named_unit():
    with pytest.raises(ConfigError, match="rows_per_unit"):
        PrivacyAccountant(epsilon=1.0, delta=1e-6, rows_per_unit=2)


def test_person_weighted_counts_move_by_at_most_c_per_person():
    from dpsyn.synth.base import Synthesizer
    from dpsyn.synth.pgm_model import pair_counts

    class _S(Synthesizer):
        name = "probe"

        def _fit(self, codes, *, accountant): ...

        def _sample_codes(self, n, *, rng): ...

    s = _S.__new__(_S)
    s.unit_sizes_, s.public_rows_ = [50.0, 25.0, 25.0], 175
    persons = np.repeat(np.arange(100), [1] * 50 + [2] * 25 + [3] * 25)
    c, w = s._person_weights(persons, 3)
    assert c == pytest.approx(1.75) and np.bincount(persons, weights=w) == pytest.approx(np.full(100, 1.75))
    codes = np.random.default_rng(0).integers(0, 3, size=(len(persons), 2))
    without = persons != 99  # remove the last person (3 rows) with the same weights for everyone else
    change = pair_counts(codes, [3, 3], (0, 1), weights=w) - pair_counts(codes[without], [3, 3], (0, 1),
                                                                          weights=w[without])
    assert np.linalg.norm(change) <= c + 1e-12 and np.abs(change).sum() == pytest.approx(c)


def test_schema_checks_the_unit_column():
    with pytest.raises(SchemaError, match="must be an identifier"):
        parse_schema(SCHEMA.replace("kind: identifier", "kind: categorical, domain: [x]"))
    with pytest.raises(SchemaError, match="is not a column"):
        parse_schema(SCHEMA.replace("column: pid,", "column: nobody,"))
    assert parse_schema(SCHEMA).unit_kwargs() == {"unit": "pid", "rows_per_unit": 2}


def test_fresh_ids_follow_the_sizes_histogram_and_never_repeat_across_persons():
    rng = np.random.default_rng(0)
    ids = assign_fresh_ids(3000, [100.0, 0.0, 300.0], rng)
    per = ids.value_counts()
    assert (~per.isin([1, 3])).sum() <= 1 and per.sum() == 3000  # the last person may be cut short
    assert (per == 3).mean() == pytest.approx(0.75, abs=0.05)  # persons, not rows, follow the histogram
    assert assign_fresh_ids(5, None, rng).nunique() == 5


@pytest.fixture(scope="module")
def visits():
    rng = np.random.default_rng(1)
    persons = np.repeat(np.arange(900), rng.choice([1, 2, 5], 900, p=[0.5, 0.3, 0.2]))
    a = rng.choice(["p", "q", "r"], len(persons))
    y = (rng.random(len(persons)) < np.where(a == "p", 0.8, 0.2)).astype(int).astype(str)
    return pd.DataFrame({"pid": [f"real-{p}" for p in persons], "a": a, "y": y}), parse_schema(SCHEMA)


def test_a_person_level_fit_bounds_rows_charges_the_sizes_release_and_writes_fresh_ids(visits):
    df, schema = visits
    before = df.copy()
    syn = create("pgm", {}, privacy={"epsilon": 2.0, "secure_rng": False, "noise_seed": 0}).fit(df, schema)
    pd.testing.assert_frame_equal(df, before)  # the input is not modified
    labels = [m["label"] for m in syn.privacy_["mechanisms"]]
    assert UNIT_SIZES_LABEL in labels and syn.privacy_["epsilon_spent"] <= 2.0 + 1e-9
    assert "person (pid)" in syn.privacy_["neighbouring"]
    out = syn.sample(2000, random_state=0)
    assert list(out.columns) == ["pid", "a", "y"]
    assert not set(out["pid"]) & set(df["pid"])
    assert out["pid"].value_counts().max() <= 2
    # the noisy histogram of rows per person, not the raw one (with persons of 5 rows, bounded to 2)
    sizes = np.asarray(syn.unit_sizes_)
    assert len(sizes) == 2 and math.isfinite(sizes.sum())
    # pgm measures person-weighted counts (each person's rows weigh c in all): its measurements are recorded at
    # their person-level multipliers, as planned; the row-level count release at σ/k
    c = syn.training_["person_weight"]
    assert 1.0 <= c <= 2.0 and syn.row_weights_ is None  # the weights are not kept in the model
    by_label = {m["label"]: m["noise_multiplier"] for m in syn.privacy_["mechanisms"]}
    assert by_label["pgm.one_way"] == pytest.approx(syn.training_["noise_multipliers"]["pgm.one_way"])
    # both cost count_share alone per person: the row count (noise std kσ on row sensitivity 1) is recorded at σ
    assert by_label["pgm.rows"] == pytest.approx(by_label[UNIT_SIZES_LABEL])


def test_a_person_level_fit_refuses_a_table_without_the_unit_column(visits):
    df, schema = visits
    with pytest.raises(ConfigError, match="has no column 'pid'"):
        create("pgm", {}, privacy={"epsilon": 2.0, "secure_rng": False, "noise_seed": 0}).fit(df.drop(columns="pid"),
                                                                                             schema)


def test_row_counts_charged_by_the_bound_when_person_weights_are_off(visits):
    df, schema = visits
    syn = create("pgm", {"person_weights": False},
                 privacy={"epsilon": 2.0, "secure_rng": False, "noise_seed": 0}).fit(df, schema)
    by_label = {m["label"]: m["noise_multiplier"] for m in syn.privacy_["mechanisms"]}
    # the measurements' row-level multipliers, recorded per person at σ/k (k = 2)
    assert by_label["pgm.one_way"] == pytest.approx(syn.training_["noise_multipliers"]["pgm.one_way"] / 2)
    assert syn.training_["person_weight"] is None and syn.privacy_["epsilon_spent"] <= 2.0 + 1e-9


def test_rows_added_after_preparation_are_persons_of_their_own(visits):
    """A prepared table carries person codes; an in-run audit's canaries join without one (they were a KeyError
    or an integer cast of a missing value): each is bounded as a person of its own."""
    from dpsyn.privacy.unit import PERSON_CODE, bound_table

    df, _ = visits
    prepared = df.drop(columns="pid").assign(**{PERSON_CODE: person_codes(df["pid"], _noise())})
    canaries = prepared.iloc[:5].assign(**{PERSON_CODE: pd.NA})
    table = pd.concat([prepared, canaries], ignore_index=True)
    _, codes = bound_table(table, "pid", 2, _noise())
    assert np.bincount(codes).max() <= 2
    n_real = prepared[PERSON_CODE].nunique()
    assert len(set(codes.tolist())) == n_real + 5  # five canaries, five new persons, all kept


@pytest.mark.parametrize("person_clipping", [True, False], ids=["per-person", "per-row"])
def test_dpgen_with_a_unit_clips_persons_or_converts_rows(visits, person_clipping):
    """dpgen with a privacy unit: by default persons are sampled and each person's summed gradient is clipped, the
    steps recorded at the person level as run (σ, q); with person_clipping off, rows are clipped and the steps are
    recorded by group privacy (σ/k, 1 − (1 − q)^k)."""
    df, schema = visits
    syn = create("dpgen", {"epochs": 1, "batch_size": 64, "hidden": 8, "marginal_share": 0,
                           "person_clipping": person_clipping},
                 privacy={"epsilon": 2.0, "secure_rng": False, "noise_seed": 0}).fit(df, schema)
    t = syn.training_
    (m,) = [m for m in syn.privacy_["mechanisms"] if m["label"] == "dpgen.dpsgd"]
    assert syn.privacy_["epsilon_spent"] <= 2.0 + 1e-9
    if person_clipping:
        assert t["clipping_unit"] == "person"
        assert m["noise_multiplier"] == pytest.approx(t["noise_multiplier"])
        assert m["sample_rate"] == pytest.approx(t["sample_rate"])
        assert t["expected_batch_size"] < 64  # 64 rows' worth of persons (c > 1 rows each)
    else:
        assert t["clipping_unit"] == "row"
        assert m["noise_multiplier"] == pytest.approx(t["noise_multiplier"] / 2)
        assert m["sample_rate"] == pytest.approx(1 - (1 - t["sample_rate"]) ** 2)
    assert syn.persons_ is None  # who has which row is not kept in the model


def test_dpgen_group_clipping_with_a_unit_clips_persons_at_less_noise_than_group_privacy(visits):
    """DP-SGD-S with a privacy unit: persons are sampled and clipped at their group's bound, the steps and the
    group-size histogram recorded per person as run; at the same ε the noise multiplier is far below that of row
    clipping charged by group privacy (person_clipping off: σ/k, 1 − (1 − q)^k)."""
    df, schema = visits
    df = df[df["pid"].str[5:].astype(int) < 300]  # 300 persons, about 600 rows: a faster fit
    gc = {"column": "a", "size_share": 0.1}
    runs = {}
    for person_clipping in (True, False):
        syn = create("dpgen", {"epochs": 1, "batch_size": 64, "hidden": 8, "marginal_share": 0, "group_clip": gc,
                               "person_clipping": person_clipping},
                     privacy={"epsilon": 2.0, "secure_rng": False, "noise_seed": 0}).fit(df, schema)
        by_label = {m["label"]: m for m in syn.privacy_["mechanisms"]}
        assert syn.privacy_["epsilon_spent"] <= 2.0 + 1e-9
        runs[person_clipping] = syn.training_, by_label
    t, by_label = runs[True]
    assert t["clipping_unit"] == "person" and t["group_clip"]["steps"] == t["steps"]
    assert by_label["dpgen.dpsgd"]["noise_multiplier"] == pytest.approx(t["noise_multiplier"])
    assert by_label["dpgen.dpsgd"]["sample_rate"] == pytest.approx(t["sample_rate"])
    # the histogram counts persons (sensitivity 1 per person): recorded at the σ_h it used
    assert by_label["group_clip.sizes"]["noise_multiplier"] == pytest.approx(t["group_clip"]["sizes_noise_std"])
    rows, rows_label = runs[False]
    assert rows["clipping_unit"] == "row"
    assert rows_label["dpgen.dpsgd"]["noise_multiplier"] == pytest.approx(rows["noise_multiplier"] / 2)
    assert rows_label["group_clip.sizes"]["noise_multiplier"] == pytest.approx(rows["group_clip"]["sizes_noise_std"] / 2)
    assert t["noise_multiplier"] < 0.75 * rows["noise_multiplier"]  # noise std / clip bound, at the same ε
    assert t["group_clip"]["sizes_noise_std"] < 0.75 * rows["group_clip"]["sizes_noise_std"]


def test_dpdsyn_with_a_unit_clips_persons_in_both_models(visits):
    df, schema = visits
    syn = create("dpdsyn", {"epochs": 1, "task_epochs": 1, "batch_size": 64, "task_batch_size": 64, "hidden": 8,
                            "marginal_share": 0},
                 privacy={"epsilon": 2.0, "secure_rng": False, "noise_seed": 0}).fit(df, schema)
    t = syn.training_
    assert t["clipping_unit"] == "person"
    by_label = {m["label"]: m for m in syn.privacy_["mechanisms"]}
    for part, label in (("task", "dpdsyn.task"), ("generator", "dpdsyn.generator")):
        m = by_label[label]
        assert m["noise_multiplier"] == pytest.approx(t[part]["noise_multiplier"])
        assert m["sample_rate"] == pytest.approx(t[part]["sample_rate"])
    assert syn.privacy_["epsilon_spent"] <= 2.0 + 1e-9


def test_pgm_task_model_with_a_unit_clips_persons(visits):
    df, schema = visits
    syn = create("pgm", {"task": "on", "task_epochs": 1},
                 privacy={"epsilon": 2.0, "secure_rng": False, "noise_seed": 0}).fit(df, schema)
    t = syn.training_["task"]
    assert t["clipping_unit"] == "person"
    (m,) = [m for m in syn.privacy_["mechanisms"] if m["label"] == "pgm.task"]
    assert m["noise_multiplier"] == pytest.approx(t["noise_multiplier"])
    assert m["sample_rate"] == pytest.approx(t["sample_rate"])
    assert syn.privacy_["epsilon_spent"] <= 2.0 + 1e-9
