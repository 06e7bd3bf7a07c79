"""The marginal backbone ``pgm`` (dpsyn/synth/pgm.py, pgm_model.py): charged what it spends, Gaussian only, tails."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsyn.privacy import PrivacyAccountant
from dpsyn.schema import parse_schema
from dpsyn.synth import create
from dpsyn.synth.pgm import ONE_WAY_LABEL, PAIRS_LABEL, SELECT_LABEL, TASK_LABEL, kruskal, match_prior, use_task_model
from dpsyn.synth.pgm_model import Compression, GraphicalModel, posterior_mean_count, stratified_uniforms

SCHEMA = """
name: tiny
target: y
columns:
  - {name: a, kind: categorical, domain: [p, q, r]}
  - {name: x, kind: numeric, bounds: [0, 10], bins: [0, 2, 4, 6, 8, 10], decimals: 1}
  - {name: b, kind: categorical, domain: ["0", "1"]}
  - {name: y, kind: categorical, domain: ["0", "1"]}
"""


@pytest.fixture(scope="module")
def table():
    rng = np.random.default_rng(0)
    n = 3000
    a = rng.choice(["p", "q", "r"], n, p=[0.5, 0.3, 0.2])
    x = np.where(a == "r", rng.uniform(8, 10, n), rng.uniform(0, 6, n)).round(1)  # an upper tail only r reaches
    b = (rng.random(n) < np.where(a == "p", 0.9, 0.1)).astype(int).astype(str)
    y = (rng.random(n) < np.where(b == "1", 0.8, 0.2)).astype(int).astype(str)
    return pd.DataFrame({"a": a, "x": x, "b": b, "y": y}), parse_schema(SCHEMA)


def _fit(table, *, task="off", epsilon=2.0, accountant="prv"):
    df, schema = table
    acct = PrivacyAccountant(epsilon=epsilon, delta=1e-5, accountant=accountant)
    synth = create("pgm", {"iters": 200, "task": task, "task_epochs": 2},
                   privacy={"epsilon": epsilon, "delta": 1e-5, "secure_rng": False, "noise_seed": 1})
    synth.fit(df, schema, accountant=acct)
    return synth, acct


@pytest.mark.parametrize("accountant", ["prv", "rdp"])
def test_every_release_is_a_recorded_gaussian_within_budget(table, accountant):
    synth, acct = _fit(table, task="on", accountant=accountant)
    labels = [m.label for m in acct.ledger]
    assert labels == ["pgm.rows", ONE_WAY_LABEL, SELECT_LABEL, PAIRS_LABEL, TASK_LABEL]
    assert all(m.noise_multiplier > 0 for m in acct.ledger)
    assert acct.planned == []  # nothing planned was left unspent or unrecorded
    assert 0.95 * 2.0 <= acct.check() <= 2.0


def test_the_one_way_pair_and_score_noise_split_one_gaussian(table):
    """1/σ² of the three measurement releases sums to 1/σ² of one Gaussian that takes what is left."""
    synth, acct = _fit(table)
    sig = synth.training_["noise_multipliers"]
    mu2 = sum(1 / s ** 2 for s in sig.values())
    ref = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    ref.ledger = acct.ledger[:1]
    sigma = ref.calibrate(sample_rate=1.0, steps=1, label="x")
    assert mu2 == pytest.approx(1 / sigma ** 2, rel=0.05)
    assert mu2 <= 1 / sigma ** 2 * (1 + 1e-9)


def test_sample_keeps_the_upper_tail_and_the_resolution(table):
    df, _ = table
    synth, _ = _fit(table)
    out = synth.sample(3000, random_state=0)
    share_tail = (out["x"] >= 8).mean()
    assert share_tail == pytest.approx((df["x"] >= 8).mean(), abs=0.05)
    assert np.allclose(out["x"], out["x"].round(1))  # one decimal, as the schema declares
    # the pair the data holds (a = r ⇒ x ≥ 8) survives: the backbone measured it
    assert (out.loc[out["a"] == "r", "x"] >= 8).mean() > 0.7


def test_labels_follow_the_task_model_and_the_rule_is_public():
    assert use_task_model(epsilon=1.0, public_rows=32_000, has_target=True, feature_codes=171, columns=15)  # adult
    assert not use_task_model(epsilon=1.0, public_rows=700, has_target=True, feature_codes=50, columns=12)
    assert not use_task_model(epsilon=3.0, public_rows=32_000, has_target=False, feature_codes=171, columns=15)
    # many inputs per row (diabetes130: 4,243 feature codes for 57,214 rows): the backbone's p(y | x) instead
    assert not use_task_model(epsilon=3.0, public_rows=57_000, has_target=True, feature_codes=4243, columns=48)
    # a table whose every pair the backbone measures (6 columns: 15 pairs ≤ 3 · 5): its p(y | x) is the star's
    assert not use_task_model(epsilon=3.0, public_rows=2_819, has_target=True, feature_codes=19, columns=6)
    assert use_task_model(epsilon=3.0, public_rows=2_819, has_target=True, feature_codes=19, columns=7)
    assert not use_task_model(epsilon=3.0, public_rows=2_819, has_target=True, feature_codes=19, columns=7,
                              max_pairs_factor=4.0)


def test_match_prior_sets_the_base_rate_and_keeps_the_ranking():
    rng = np.random.default_rng(0)
    lp = np.log(np.stack([np.full(1000, 0.5), np.full(1000, 0.5)], 1)) + np.stack([np.zeros(1000),
                                                                                   rng.normal(size=1000)], 1)
    p = match_prior(lp, np.array([0.9, 0.1]))
    assert p.mean(axis=0) == pytest.approx([0.9, 0.1], abs=1e-3)
    assert np.all(np.diff(p[np.argsort(lp[:, 1] - lp[:, 0]), 1]) >= -1e-12)


def test_compression_merges_only_cells_within_the_noise():
    comp = Compression([np.array([500.0, 3.0, -4.0, 80.0])], [30.0])
    assert comp.sizes == [3]
    codes = comp.decompress(np.array([[2]] * 100), rng=np.random.default_rng(0))
    assert set(codes[:, 0]) == {1}  # the rare cell decompresses by clipped noisy counts: -4 gets nothing


def test_a_code_within_the_noise_keeps_mass_by_its_posterior_mean():
    """With the noise std, the rare cell decompresses by E[c | noisy] under a flat prior on c ≥ 0: every code
    keeps some mass (a bin the noise hides is not emptied), larger noisy counts more."""
    comp = Compression([np.array([500.0, 3.0, -4.0, 80.0])], [30.0], [10.0])
    assert comp.sizes == [3]
    p = comp.rare_p[0]
    assert np.all(p > 0) and p[0] > p[1] and p.sum() == pytest.approx(1.0)
    m = posterior_mean_count(np.array([-30.0, 0.0, 50.0]), 10.0)
    assert m[0] > 0 and m[1] == pytest.approx(10.0 * np.sqrt(2 / np.pi)) and m[2] == pytest.approx(50.0, abs=1e-4)


def test_stratified_uniforms_are_uniform_per_row_and_even_per_group():
    rng = np.random.default_rng(0)
    groups = np.repeat([3, 0, 7], [10, 25, 1])[rng.permutation(36)]
    u = stratified_uniforms(groups, rng)
    for g, m in ((3, 10), (0, 25), (7, 1)):  # one draw in each 1/m stratum of its group
        assert sorted(np.floor(u[groups == g] * m).astype(int)) == list(range(m))
    # each row's draw is U(0, 1): over many repetitions a fixed row's draws have mean 1/2, variance 1/12
    draws = np.array([stratified_uniforms(groups, np.random.default_rng(s))[0] for s in range(4000)])
    assert draws.mean() == pytest.approx(0.5, abs=0.02) and draws.var() == pytest.approx(1 / 12, abs=0.01)


def test_sampling_rounds_each_parent_groups_counts_where_iid_draws_scatter():
    """Systematic sampling within parent groups: a code of probability p among m rows of a group appears ⌊m·p⌋ or
    ⌈m·p⌉ times (mbi's synthetic_data rounds the same way); i.i.d. draws scatter binomially. Same law per row."""
    p0 = np.array([0.5, 0.3, 0.2])
    cond = np.array([[0.9, 0.1], [0.25, 0.75], [0.5, 0.5]])  # p(col 1 | col 0)
    model = GraphicalModel([3, 2], [0, 1], [(), (0,)], [np.cumsum(p0)[None, :], np.cumsum(cond, axis=1)], None)
    n = 1000
    for seed in range(5):
        out = model.sample(n, rng=np.random.default_rng(seed))
        c0 = np.bincount(out[:, 0], minlength=3)
        assert np.all(np.abs(c0 - n * p0) < 1)
        for g in range(3):
            c1 = np.bincount(out[out[:, 0] == g, 1], minlength=2)
            assert np.all(np.abs(c1 - c0[g] * cond[g]) < 1)
    iid = [np.bincount(model.sample(n, rng=np.random.default_rng(s), stratified=False)[:, 0], minlength=3)
           for s in range(5)]
    assert max(np.abs(c - n * p0).max() for c in iid) > 1  # the test can tell the two apart


def test_kruskal_builds_a_maximum_spanning_tree():
    pairs = [(0, 1), (0, 2), (1, 2), (2, 3)]
    tree = kruskal(4, pairs, np.array([5.0, 1.0, 4.0, 3.0]))
    assert sorted(tree) == [(0, 1), (1, 2), (2, 3)]


def test_decimals_are_declared_for_non_integer_numeric_columns_only():
    from dpsyn.errors import SchemaError

    bad = SCHEMA.replace("decimals: 1}", "decimals: 1, integer: true}")
    with pytest.raises(SchemaError, match="decimals"):
        parse_schema(bad)


def test_the_row_total_pools_the_count_and_the_histograms_by_inverse_variance():
    from dpsyn.synth.pgm import pooled_total

    assert pooled_total([(700.0, 100.0), (600.0, 100.0)]) == pytest.approx(650.0)
    assert pooled_total([(700.0, 1e6), (600.0, 1.0)]) == pytest.approx(600.0, abs=0.2)
    assert pooled_total([(512.0, 0.0), (600.0, 1.0)]) == 512.0  # a public (exact) count wins


def test_small_tables_get_more_one_way_budget_by_a_public_rule():
    from dpsyn.synth.pgm import backbone_split

    assert backbone_split(epsilon=1.0, public_rows=600, columns=8) == (0.5, 1.0)
    assert backbone_split(epsilon=1.0, public_rows=32_000, columns=15) == (0.2, 3.0)


def test_wide_columns_get_more_one_way_weight_by_a_public_rule(table, monkeypatch):
    """Off a small table the one-way release weighs column j by k_j**(1/3): a wide column's cells get less noise,
    a narrow one's more, and the weighted histograms still have L2 sensitivity σ₁ (Σ_j (σ₁/std_j)² = 1)."""
    from dpsyn.privacy.noise import NoiseSource
    from dpsyn.synth.pgm import DOMAIN_WEIGHT_EXPONENT, domain_weight_exponent

    assert domain_weight_exponent(epsilon=1.0, public_rows=600, columns=8) == 0.0  # small: every column alike
    assert domain_weight_exponent(epsilon=1.0, public_rows=57_000, columns=48) == DOMAIN_WEIGHT_EXPONENT == 1 / 3
    df, schema = table
    stds = {}
    for a in (None, 0.0):
        calls = []
        synth = create("pgm", {"iters": 50, "task": "off", "domain_weights": a},
                       privacy={"epsilon": 2.0, "delta": 1e-5, "secure_rng": False, "noise_seed": 1})
        real = NoiseSource.normal_numpy

        def spy(self, size, std, _calls=calls, _real=real):
            _calls.append((size, std))
            return _real(self, size, std)

        monkeypatch.setattr(NoiseSource, "normal_numpy", spy)
        acct = PrivacyAccountant(epsilon=2.0, delta=1e-5, accountant="prv")
        synth.fit(df, schema, accountant=acct)
        monkeypatch.undo()
        sizes = synth.encoder_.sizes
        first = next(i for i in range(len(calls)) if [c[0] for c in calls[i:i + len(sizes)]] == sizes)
        stds[a] = np.array([s for _, s in calls[first:first + len(sizes)]])
        sigma1 = synth.training_["noise_multipliers"][ONE_WAY_LABEL]
        assert np.sum((sigma1 / stds[a]) ** 2) == pytest.approx(1.0)
        assert synth.training_["domain_weight_exponent"] == (1 / 3 if a is None else 0.0)
    k = np.array(synth.encoder_.sizes, dtype=float)
    assert np.allclose(stds[0.0], stds[0.0][0])  # unweighted: one std for every column
    assert np.allclose(stds[None] * k ** (1 / 3), (stds[None] * k ** (1 / 3))[0])  # weighted: std ∝ k**(-1/3)


def test_small_tables_stop_the_estimation_early_by_a_public_rule():
    from dpsyn.synth.pgm import ITERS, ITERS_SMALL, estimation_iters

    assert estimation_iters(epsilon=1.0, public_rows=300, columns=8) == ITERS_SMALL < ITERS
    assert estimation_iters(epsilon=1.0, public_rows=2_000, columns=15) == ITERS  # small, not tiny
    assert estimation_iters(epsilon=1.0, public_rows=32_000, columns=15) == ITERS


def test_the_estimation_stops_at_the_noise_level_on_small_tables_that_are_not_tiny():
    from dpsyn.synth.pgm import noise_stopping

    assert not noise_stopping(epsilon=1.0, public_rows=300, columns=8)  # tiny: a fixed 100
    assert noise_stopping(epsilon=1.0, public_rows=2_000, columns=15)  # 133 rows per column: small, not tiny
    assert not noise_stopping(epsilon=1.0, public_rows=32_000, columns=15)  # large: a fixed 1,000


def test_the_fitted_model_holds_numpy_tables_only(table):
    import pickle

    synth, _ = _fit(table)
    blob = pickle.dumps(synth)
    assert b"jax" not in blob and b"mbi" not in blob


def test_without_a_task_model_every_feature_target_pair_is_measured(table):
    """A public rule (the schema names the target): naive Bayes' star is measured; off, only the selection."""
    synth, _ = _fit(table, task="off")
    pairs = {tuple(p) for p in synth.training_["pairs"]}
    assert {(0, 3), (1, 3), (2, 3)} <= pairs
    df, schema = table
    off = create("pgm", {"iters": 50, "task": "off", "target_pairs": False},
                 privacy={"epsilon": 2.0, "delta": 1e-5, "secure_rng": False, "noise_seed": 1}).fit(df, schema)
    assert len(off.training_["pairs"]) >= 1


@pytest.mark.slow  # ten JAX compilations
@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs /proc")
def test_fits_in_one_process_do_not_pile_up_compiled_programs(monkeypatch):
    """A long-lived process (a worker, a benchmark) crashed after ~50 pgm fits: each left ~1,300 memory maps of
    JAX-compiled programs until LLVM could not allocate. The programs are now dropped every CLEAR_EVERY fits, so
    the maps stop growing: three rounds of new shapes hold no more than the first round did."""
    import jax

    from dpsyn.synth import pgm_model

    rng = np.random.default_rng(0)

    def fit(k):
        ms = [((0, 1), rng.random(k * (k + 1)) * 10, 1.0), ((1, 2), rng.random((k + 1) * 3) * 10, 1.0)]
        pgm_model.estimate_model([k, k + 1, 3], ms, total=100.0, iters=20)

    def maps():
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)

    fit(2)
    jax.clear_caches()
    monkeypatch.setattr(pgm_model, "_fits_since_clear", 0)
    monkeypatch.setattr(pgm_model, "CLEAR_EVERY", 3)  # the same code path as 8, in fewer compilations
    before = maps()
    every = pgm_model.CLEAR_EVERY
    for k in range(3, 3 + every - 1):  # one round, not yet cleared
        fit(k)
    first_round = maps() - before
    assert first_round > 100  # the programs are kept between fits (what makes a repeated fit cheap)
    for k in range(3 + every - 1, 3 + 3 * every):
        fit(k)
    assert maps() - before <= 1.5 * first_round  # without clearing: about 3 × first_round


def test_a_small_table_measures_the_star_and_releases_no_scores(table):
    """ε·n̂/d below the public (tiny-table) threshold: every feature × target pair and nothing else, no score release, and
    the budget the scores would take goes to the measurements (all of ε is still spent)."""
    from dpsyn.synth.pgm import star_structure

    df, schema = table
    small = df.iloc[:160]
    assert star_structure(epsilon=1.0, public_rows=160, columns=4)
    # Adult at 2,000 rows and ε = 1 keeps the selection (its strong feature pairs; the gate benchmark)
    assert not star_structure(epsilon=1.0, public_rows=2_000, columns=15)
    assert not star_structure(epsilon=1.0, public_rows=3000, columns=4)
    acct = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    synth = create("pgm", {"iters": 60, "task": "off"},
                   privacy={"epsilon": 1.0, "delta": 1e-5, "secure_rng": False, "noise_seed": 1})
    synth.fit(small, schema, accountant=acct)
    assert [m.label for m in acct.ledger] == ["pgm.rows", ONE_WAY_LABEL, PAIRS_LABEL]
    assert sorted(tuple(p) for p in synth.training_["pairs"]) == [(0, 3), (1, 3), (2, 3)]
    assert synth.training_["iters"] == 60  # the configured value wins over the rule (100 here)
    assert 0.95 <= acct.check() <= 1.0
    selected = create("pgm", {"iters": 100, "task": "off", "structure": "select"},
                      privacy={"epsilon": 1.0, "delta": 1e-5, "secure_rng": False, "noise_seed": 1})
    acct2 = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    selected.fit(small, schema, accountant=acct2)
    assert SELECT_LABEL in [m.label for m in acct2.ledger]


def test_the_independent_structure_measures_no_pair_and_samples_independent_columns(table):
    """structure 'independent' (the trivial baseline the relational benchmark compares against): no score release,
    no pair, the whole budget on one-way marginals; b and y, strongly dependent in the real rows, come out
    independent while their margins hold."""
    df, schema = table
    acct = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    synth = create("pgm", {"iters": 50, "task": "off", "structure": "independent"},
                   privacy={"epsilon": 2.0, "delta": 1e-5, "secure_rng": False, "noise_seed": 1})
    synth.fit(df, schema, accountant=acct)
    assert [m.label for m in acct.ledger] == ["pgm.rows", ONE_WAY_LABEL, PAIRS_LABEL]
    assert synth.training_["pairs"] == []
    assert 0.95 * 2.0 <= acct.check() <= 2.0
    syn = synth.sample(20_000, random_state=0)
    real_gap = (df.y[df.b == "1"] == "1").mean() - (df.y[df.b == "0"] == "1").mean()
    syn_gap = (syn.y[syn.b == "1"] == "1").mean() - (syn.y[syn.b == "0"] == "1").mean()
    assert real_gap > 0.5 and abs(syn_gap) < 0.03
    assert abs((syn.b == "1").mean() - (df.b == "1").mean()) < 0.03


def test_xla_compiles_mbi_programs_at_level_0_unless_the_process_says_otherwise():
    """mbi compiles a few hundred small programs per fit; at XLA's level 0 a small fit compiles in about half the
    time (dpsyn.synth.pgm_model.XLA_FLAGS). A process's own XLA_FLAGS are left alone."""
    import subprocess
    import sys

    code = ("import os; from dpsyn.synth import pgm_model; pgm_model._mbi(); import jax; jax.numpy.ones(2).sum(); "
            "print(os.environ['XLA_FLAGS'])")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "--xla_backend_optimization_level=0"
    own = subprocess.run([sys.executable, "-c", code], env={**env, "XLA_FLAGS": "--xla_cpu_enable_fast_math=false"},
                         capture_output=True, text=True, check=True)
    assert own.stdout.strip() == "--xla_cpu_enable_fast_math=false"


def test_numpy_message_passing_gives_mbis_marginals():
    """pgm_model._tables calibrates the junction tree in numpy (JAX compiled a program per operation and shape,
    half of a small fit); every node marginal, its projections and the target's potentials must be mbi's own."""
    from dpsyn.synth import pgm_model

    mbi = pgm_model._mbi()
    rng = np.random.default_rng(3)
    sizes = [3, 4, 2, 5, 3]
    names = [pgm_model._name(j) for j in range(len(sizes))]
    dom = mbi.Domain(names, sizes)
    cliques = [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4), (1, 4)]  # loops: the tree's nodes are triangulated cliques
    ms = [mbi.LinearMeasurement(rng.random(sizes[a] * sizes[b]) * 50, (names[a], names[b]), stddev=1.0)
          for a, b in cliques]
    est = mbi.estimation.MirrorDescent().estimate(dom, ms, known_total=500.0, iters=30)
    jtree, _ = mbi.junction_tree.make_junction_tree(dom, [tuple(c) for c in est.cliques])
    theirs = mbi.marginal_oracles.message_passing_stable(est.potentials.expand(list(jtree.nodes)), 1.0)
    ours = pgm_model._calibrated(est, dom, mbi)
    assert len(ours) == len(list(jtree.nodes)) and any(len(n) >= 3 for n in ours)
    for node in ours:
        for attrs in [tuple(node), tuple(node)[::-1], tuple(node)[:1], tuple(node)[-2:]]:
            want = np.asarray(theirs.project(attrs).transpose(attrs).datavector(flatten=False))
            np.testing.assert_allclose(pgm_model._project(ours, attrs), want, rtol=1e-9, atol=1e-12)
    model = pgm_model._tables(est, dom, names, mbi)
    for n, p in zip(names, model.one_way, strict=True):
        want = np.asarray(theirs.project((n,)).datavector())
        np.testing.assert_allclose(p, want / want.sum(), rtol=1e-9, atol=1e-12)
    target = names[-1]
    for (others, table), cl in zip(model.target_terms, [c for c in est.cliques if target in c], strict=True):
        order = tuple(names[o] for o in others) + (target,)
        want = np.asarray(est.potentials[tuple(cl)].transpose(order).datavector(flatten=False))
        np.testing.assert_allclose(table, want, rtol=1e-12)


def test_stopping_at_the_noise_level_stops_early_only_where_the_noise_allows():
    """``stopping: noise`` (the discrepancy principle): with measurements far noisier than the signal the loss
    reaches the noise level at the floor (100 iterations); with nearly exact measurements it does not, and mirror
    descent runs on towards ``iters``."""
    from dpsyn.synth import pgm_model

    rng = np.random.default_rng(0)
    truth = np.outer([0.6, 0.3, 0.1], [0.2, 0.8]).ravel() * 1000
    runs = {}
    for std in (200.0, 1e-3):
        ms = [((0, 1), truth + rng.normal(0, std, truth.size), std)]
        model = pgm_model.estimate_model([3, 2], ms, total=1000.0, iters=400, min_iters=100)
        runs[std] = model.iters_run
    assert runs[200.0] == 100
    assert runs[1e-3] > 100
    fixed = pgm_model.estimate_model([3, 2], ms, total=1000.0, iters=120)
    assert fixed.iters_run == 150  # without the stop mbi runs whole blocks of 50: what it ran is reported


def test_the_compiled_descent_is_mbis_estimate_and_reuses_its_programs():
    """pgm_model._descend runs mbi's ``_init`` as one compiled program (eagerly it compiled ~190 programs, half of a
    small fit) and compares a compressed column's weights by value: the estimate must be mbi's own ``estimate``
    from the same measurements, and a second fit of the same structure must reuse the compiled programs."""
    from dpsyn.synth import pgm_model

    mbi = pgm_model._mbi()
    rng = np.random.default_rng(5)
    sizes, full = [3, 2, 4], [5, 2, 4]
    names = [pgm_model._name(j) for j in range(3)]
    dom = mbi.Domain(names, sizes)

    def measurements():
        one = mbi.LinearMeasurement(rng.random(5) * 100, (names[0],), stddev=2.0)
        one = one.compress({names[0]: np.array([0, 0, 1, 2, 2])}, mbi.Domain([names[0]], [5]))
        return [one, *(mbi.LinearMeasurement(rng.random(sizes[a] * sizes[b]) * 50, (names[a], names[b]), stddev=1.0)
                       for a, b in [(0, 1), (1, 2)])]

    ms = measurements()
    theirs = mbi.estimation.MirrorDescent().estimate(dom, ms, known_total=300.0, iters=100)
    ms_by_value = [dataclasses.replace(ms[0], query=pgm_model._weighted_query()(ms[0].query.weights)), *ms[1:]]
    ours, ran = pgm_model._descend(mbi.estimation.MirrorDescent(), dom, ms_by_value, 300.0, 100, None, mbi)
    assert ran == 100
    for cl in theirs.cliques:
        np.testing.assert_allclose(np.asarray(ours.potentials[cl].values), np.asarray(theirs.potentials[cl].values),
                                   rtol=1e-9, atol=1e-9)

    init = pgm_model._compiled_init()
    init.clear_cache()
    for _ in range(2):  # fresh measurement objects, same structure and weights: one compiled _init
        again = measurements()
        pgm_model.estimate_model(sizes, [((0, 1), again[1].noisy_measurement, 1.0)], total=300.0, iters=50,
                                 one_way=[(rng.random(5) * 100, 2.0, np.array([0, 0, 1, 2, 2])),
                                          (rng.random(2) * 100, 2.0, np.arange(2)),
                                          (rng.random(4) * 100, 2.0, np.arange(4))], full_sizes=full)
    assert init._cache_size() == 1
