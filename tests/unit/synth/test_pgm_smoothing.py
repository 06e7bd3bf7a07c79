"""smooth_ordered: post-processing of an ordered column's noisy counts (pgm's opt-in ``smoothing``)."""

import numpy as np

from dpsyn.synth.pgm import _kernel_smoother, smooth_ordered


def test_kernel_rows_sum_to_one_and_keep_a_flat_histogram_flat():
    s = _kernel_smoother(7, 2)
    assert np.allclose(s.sum(axis=1), 1)
    assert np.allclose(smooth_ordered(np.full(7, 5.0), 7, 1.0, 2), 5.0)


def test_a_missing_code_after_the_bins_is_left_alone():
    y = np.array([0.0, 0, 10, 0, 0, 99])
    out = smooth_ordered(y, 5, 1.0, 1)
    assert out[-1] == 99 and np.allclose(out[:5], [0, 2.5, 5, 2.5, 0])


def test_sure_keeps_peaks_that_stand_clear_of_the_noise_and_smooths_noise_dominated_counts():
    rng = np.random.default_rng(0)
    peak = np.array([400.0, 100, 30, 10, 5, 2, 1, 0, 0, 0]) + rng.normal(0, 1, 10)
    assert np.allclose(smooth_ordered(peak, 10, 1.0), peak)  # width 0 chosen
    flat = 20 + rng.normal(0, 30, 10)
    out = smooth_ordered(flat, 10, 30.0)
    assert np.abs(out - 20).mean() < np.abs(flat - 20).mean()  # smoothing moved it towards the truth


def test_the_fit_smooths_only_when_asked_and_spends_the_same_budget():
    import pandas as pd

    from dpsyn.schema import TableSchema
    from dpsyn.synth import create

    schema = TableSchema.model_validate({"name": "t", "target": "y", "columns": [
        {"name": "x", "kind": "numeric", "bounds": [0, 10], "bins": list(range(11))},
        {"name": "y", "kind": "categorical", "domain": ["a", "b"]}]})
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": rng.integers(0, 10, 300).astype(float), "y": rng.choice(["a", "b"], 300)})
    privacy = {"epsilon": 1.0, "delta": 1e-5, "secure_rng": False, "noise_seed": 0}
    off, on = (create("pgm", {"iters": 30, "task": "off", "smoothing": h}, privacy=privacy).fit(df, schema)
               for h in (0, 2))
    assert off.privacy_["epsilon_spent"] == on.privacy_["epsilon_spent"]
    counts = [np.bincount(m.sample(4000, random_state=0)["x"].astype(int), minlength=10) for m in (off, on)]
    assert np.abs(counts[0] - counts[1]).sum() > 400  # the smoothed release changed the fitted x marginal


def test_unequal_bins_are_smoothed_as_a_density_not_as_an_index():
    """Counts proportional to the bins' widths are a flat density: smoothing the density keeps them, smoothing
    over the bin index would move count from the wide bins to the narrow ones."""
    widths = np.array([1.0, 1, 4, 4, 1, 1, 2])
    flat_density = 10 * widths
    assert np.allclose(smooth_ordered(flat_density, 7, 1.0, 1, widths), flat_density)
    assert not np.allclose(smooth_ordered(flat_density, 7, 1.0, 1), flat_density)


def test_sure_chooses_at_most_width_one():
    from dpsyn.synth.pgm import SMOOTHING_WIDTHS

    assert SMOOTHING_WIDTHS == (0, 1)
    rng = np.random.default_rng(1)
    noisy = 20 + rng.normal(0, 50, 12)
    assert np.allclose(smooth_ordered(noisy, 12, 50.0), smooth_ordered(noisy, 12, 50.0, 1))
