"""shape_ordered: the unimodal post-processing of an ordered column's noisy one-way counts (pgm's ``shape``)."""

import numpy as np
import pandas as pd
import pytest

from dpsyn.synth.pgm import shape_ordered, small_table, unimodal_fit


def _is_unimodal(x: np.ndarray) -> bool:
    d = np.sign(np.diff(x).round(9))
    d = d[d != 0]
    return not np.any((d[:-1] < 0) & (d[1:] > 0))  # never a fall followed by a rise


def test_unimodal_fit_is_unimodal_non_negative_and_the_least_squares_one():
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(1)
    for _ in range(20):
        y, w = rng.normal(20, 30, 9), rng.uniform(0.5, 2, 9)
        fit = unimodal_fit(y, w)
        assert _is_unimodal(fit) and (fit >= 0).all()
        # no unimodal candidate does better: scikit-learn's isotonic fits on either side of every split point
        rss = np.sum(w * (y - fit) ** 2)
        x = np.arange(9)
        for k in range(1, 9):
            up = IsotonicRegression().fit(x[:k], y[:k], sample_weight=w[:k]).predict(x[:k])
            down = IsotonicRegression(increasing=False).fit(x[k:], y[k:], sample_weight=w[k:]).predict(x[k:])
            cand = np.clip(np.concatenate([up, down]), 0, None)
            assert rss <= np.sum(w * (y - cand) ** 2) + 1e-9
    peak = np.array([1.0, 3, 7, 20, 9, 2, 0])
    assert np.allclose(unimodal_fit(peak, np.ones(7)), peak)  # already unimodal: kept


def test_a_noise_dominated_tail_moves_towards_the_truth_and_loses_its_noise_spikes():
    """The breast_cancer case: a few hundred rows, cells with noise std 39. Over many draws, the shaped counts
    are closer to the true ones than the noisy counts, and the worst overestimate among the tail bins (true counts
    16 or less: the spikes that compression kept and the model then filled) is less than half the noisy one's."""
    truth = np.array([0.0, 141, 116, 83, 34, 16, 5, 3, 2, 1])
    tail = slice(5, 9)
    rng = np.random.default_rng(2)
    err_raw, err_shaped, spike_raw, spike_shaped = [], [], [], []
    for _ in range(200):
        y = truth + rng.normal(0, 39, len(truth))
        out = shape_ordered(y, len(truth), 39.0)
        err_raw.append(np.abs(y[1:-1] - truth[1:-1]).sum())
        err_shaped.append(np.abs(out[1:-1] - truth[1:-1]).sum())
        spike_raw.append((y[tail] - truth[tail]).max())
        spike_shaped.append((out[tail] - truth[tail]).max())
        assert out[0] == y[0] and out[-1] == y[-1]  # the end bins (catch-alls of the clipped tails) as released
    assert np.mean(err_shaped) < 0.8 * np.mean(err_raw)
    assert np.mean(spike_shaped) < 0.5 * np.mean(spike_raw)


def test_counts_that_stand_clear_of_the_noise_keep_their_second_mode():
    bimodal = np.array([5.0, 10, 900, 40, 30, 800, 20, 5])
    rng = np.random.default_rng(3)
    y = bimodal + rng.normal(0, 5, len(bimodal))
    assert np.array_equal(shape_ordered(y, len(y), 5.0), y)  # residual far beyond the noise: unchanged
    # the same shape drowned in noise (std 2000) is flattened into one mode
    out = shape_ordered(bimodal, len(bimodal), 2000.0)
    assert _is_unimodal(out[1:-1]) and not np.array_equal(out, bimodal)


def test_a_missing_code_after_the_bins_and_short_columns_are_left_alone():
    y = np.array([3.0, 50, -40, 60, 10, 2, 77])  # 6 ordered bins, then the missing code
    out = shape_ordered(y, 6, 40.0)
    assert out[-1] == 77 and out[0] == 3 and out[5] == 2 and _is_unimodal(out[1:5])
    short = np.array([1.0, -5, 9, 4])
    assert np.array_equal(shape_ordered(short, 4, 10.0), short)  # two inner bins: nothing to shape


def test_unequal_bins_are_shaped_as_a_density():
    """Counts proportional to the widths are a flat density: already unimodal, so kept."""
    widths = np.array([1.0, 1, 4, 1, 4, 1, 1, 2])
    counts = 10 * widths
    assert np.allclose(shape_ordered(counts, 8, 100.0, widths), counts)
    assert not np.allclose(shape_ordered(counts, 8, 100.0), counts)  # over the index, 10 40 10 40 is two modes


@pytest.fixture
def numeric_table():
    from dpsyn.schema import TableSchema

    schema = TableSchema.model_validate({"name": "t", "target": "y", "columns": [
        {"name": "x", "kind": "numeric", "bounds": [0, 12], "bins": list(range(13))},
        {"name": "y", "kind": "categorical", "domain": ["a", "b"]}]})
    rng = np.random.default_rng(0)
    x = np.clip(rng.normal(5, 2, 300).round(), 0, 11)
    return pd.DataFrame({"x": x, "y": rng.choice(["a", "b"], 300)}), schema


def test_the_fit_shapes_on_a_small_table_by_rule_and_spends_the_same_budget(numeric_table):
    from dpsyn.synth import create

    df, schema = numeric_table
    assert small_table(epsilon=0.5, public_rows=300, columns=2)
    privacy = {"epsilon": 0.5, "delta": 1e-5, "secure_rng": False, "noise_seed": 0}
    fits = {s: create("pgm", {"iters": 30, "task": "off", "shape": s}, privacy=privacy).fit(df, schema)
            for s in ("auto", "off", "unimodal")}
    assert fits["auto"].training_["shape"] == "unimodal" and fits["off"].training_["shape"] == "off"
    assert len({f.privacy_["epsilon_spent"] for f in fits.values()}) == 1
    counts = {s: np.bincount(f.sample(4000, random_state=0)["x"].astype(int), minlength=12)
              for s, f in fits.items()}
    assert np.array_equal(counts["auto"], counts["unimodal"])
    assert not np.array_equal(counts["off"], counts["unimodal"])  # the shaped release changed the x marginal


def test_a_large_table_is_not_shaped_by_default():
    assert not small_table(epsilon=1.0, public_rows=32_000, columns=15)


def test_compression_and_the_row_total_read_the_release_not_the_shaped_counts(numeric_table, monkeypatch):
    """Wiring: with a 'shape' that empties every inner bin, the cells kept apart and the pooled row total are
    still those of the release (same noise seed as shape off)."""
    import dpsyn.synth.pgm as pgm_mod
    from dpsyn.synth import create

    df, schema = numeric_table
    privacy = {"epsilon": 0.5, "delta": 1e-5, "secure_rng": False, "noise_seed": 3}
    seen = {}

    def fake_estimate(sizes, meas, *, total, **kw):
        seen.setdefault("totals", []).append(total)
        return real_estimate(sizes, meas, total=total, **kw)

    real_estimate = pgm_mod.estimate_model
    monkeypatch.setattr(pgm_mod, "estimate_model", fake_estimate)
    off = create("pgm", {"iters": 10, "task": "off", "shape": "off"}, privacy=privacy).fit(df, schema)

    def empty_inner(noisy, ordered, std, bin_widths=None):
        out = np.array(noisy, dtype=float)
        if ordered >= 5:
            out[1:ordered - 1] = 0.0
        return out

    monkeypatch.setattr(pgm_mod, "shape_ordered", empty_inner)
    on = create("pgm", {"iters": 10, "task": "off", "shape": "unimodal"}, privacy=privacy).fit(df, schema)
    assert np.array_equal(off.compression_.kept[0], on.compression_.kept[0]) and len(on.compression_.kept[0]) > 2
    assert seen["totals"][0] == pytest.approx(seen["totals"][1])
