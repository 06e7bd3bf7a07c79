"""The within-bin decode: the encoder's primitive is uniform by default, a synthesizer's sample is 'shaped' by
default; 'shaped' follows the bins' trend and never leaves a bin."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import yaml

from dpsyn.encoding import DiscreteEncoder, within_bin_positions
from dpsyn.errors import ConfigError
from dpsyn.schema import TableSchema

EDGES = [0, 1, 2, 3, 5, 8, 12, 20, 40, 365]
COUNTS = [1300, 700, 400, 350, 250, 150, 100, 120, 40]  # a visit count: falling, with a wide last bin


def _schema() -> TableSchema:
    raw = yaml.safe_load(f"""
schema_version: 1
name: visits
columns:
  - {{name: visits, kind: numeric, bounds: [0, 365], bins: {EDGES}, integer: true}}
  - {{name: income, kind: numeric, bounds: [0, 60], bins: [0, 1, 2, 4, 60], decimals: 2, nullable: true}}
  - {{name: y, kind: categorical, domain: ["0", "1"]}}
target: y
""")
    return TableSchema.model_validate(raw)


def _codes(rng) -> np.ndarray:
    visits = np.repeat(np.arange(len(COUNTS)), COUNTS)
    n = len(visits)
    income = rng.choice(5, size=n, p=[0.3, 0.3, 0.25, 0.1, 0.05])  # 4 is the missing code
    return np.stack([visits, income, rng.integers(0, 2, n)], axis=1)


def test_shaped_decode_keeps_every_value_in_its_bin_and_the_same_bins_as_uniform():
    enc = DiscreteEncoder(_schema())
    codes = _codes(np.random.default_rng(0))
    uni = enc.decode(codes, rng=np.random.default_rng(1))
    shp = enc.decode(codes, rng=np.random.default_rng(1), within_bin="shaped")
    np.testing.assert_array_equal(enc.encode(shp), codes)  # the marginals a TVD reads are untouched
    np.testing.assert_array_equal(enc.encode(uni), codes)
    assert shp["income"].isna().sum() == (codes[:, 1] == 4).sum()
    assert (shp["visits"] == shp["visits"].round()).all()
    assert (shp["income"].dropna() == shp["income"].dropna().round(2)).all()


def test_a_wide_tail_bin_after_a_falling_run_stays_near_its_lower_edge():
    enc = DiscreteEncoder(_schema())
    codes = _codes(np.random.default_rng(0))
    last = codes[:, 0] == len(COUNTS) - 1
    uni = enc.decode(codes, rng=np.random.default_rng(2))["visits"][last]
    shp = enc.decode(codes, rng=np.random.default_rng(2), within_bin="shaped")["visits"][last]
    assert uni.mean() > 150  # uniform over [40, 365]
    assert 40 <= shp.min() and shp.mean() < 80  # decays from the [20, 40) run's density


def test_a_mode_or_flat_run_stays_uniform_and_a_rising_bin_leans_right():
    edges = np.array([0.0, 10, 20, 30, 40])
    u = np.random.default_rng(3).random(4000)
    flat = np.repeat(np.arange(4), 1000)
    np.testing.assert_array_equal(within_bin_positions(u, flat, flat, edges), u)
    rising = np.repeat(np.arange(4), [100, 400, 1600, 1900])
    t = within_bin_positions(u[: len(rising)], rising, rising, edges)
    assert t[rising == 0].mean() > 0.55  # denser to its right
    assert (t >= 0).all() and (t < 1).all()


def test_default_decode_is_unchanged_and_a_bad_choice_is_refused():
    enc = DiscreteEncoder(_schema())
    codes = _codes(np.random.default_rng(0))
    a = enc.decode(codes, rng=np.random.default_rng(4))
    b = enc.decode(codes, rng=np.random.default_rng(4), within_bin="uniform")
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(ConfigError, match="within_bin"):
        enc.decode(codes, rng=np.random.default_rng(4), within_bin="smooth")


def test_a_synthesizers_sample_is_shaped_by_default():
    from dpsyn.synth import create

    enc = DiscreteEncoder(_schema())
    real = enc.decode(_codes(np.random.default_rng(0)), rng=np.random.default_rng(5), within_bin="shaped")
    synth = create("pgm", {}, privacy={"epsilon": 50.0, "delta": 1e-6, "secure_rng": False, "noise_seed": 0})
    synth.fit(real, _schema())
    default = synth.sample(3000, random_state=7)
    shaped = synth.sample(3000, random_state=7, within_bin="shaped")
    uniform = synth.sample(3000, random_state=7, within_bin="uniform")
    pd.testing.assert_frame_equal(default, shaped)
    np.testing.assert_array_equal(enc.encode(default), enc.encode(uniform))  # the same bins either way
    tail = default["visits"] >= 40
    assert tail.any() and default["visits"][tail].mean() < uniform["visits"][tail].mean() - 40
