"""dpsyn.watermark.statistical: bounded distortion, robust detection, exact null."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsyn.errors import ConfigError
from dpsyn.schema import ColumnKind, parse_schema
from dpsyn.watermark import (
    DEFAULT_STRENGTH,
    WM_COLUMN,
    WatermarkKey,
    apply_watermark,
    cell_width,
    detect_statistical,
    embed_statistical,
    embed_statistical_with_report,
    score_statistical,
)

KEY = WatermarkKey.from_secret(bytes(range(32)))
OTHER = WatermarkKey.from_secret(bytes(range(100, 132)))


def _ks(a, b) -> float:
    a, b = np.sort(np.asarray(a, float)), np.sort(np.asarray(b, float))
    grid = np.union1d(a, b)
    return float(np.max(np.abs(np.searchsorted(a, grid, "right") / len(a) - np.searchsorted(b, grid, "right") / len(b))))


def _tvd(a: pd.Series, b: pd.Series) -> float:
    pa, pb = a.value_counts(normalize=True, dropna=False), b.value_counts(normalize=True, dropna=False)
    return float(0.5 * pa.sub(pb, fill_value=0).abs().sum())


@pytest.fixture(scope="module")
def marked(adult_sample, adult_schema):
    return embed_statistical_with_report(adult_sample, adult_schema, KEY, random_state=0)


@pytest.fixture(scope="module")
def marked_with_categories(adult_sample, adult_schema):
    return embed_statistical_with_report(adult_sample, adult_schema, KEY, categorical=True, random_state=0)


def _numeric(schema):
    return [c for c in schema.columns if c.kind == ColumnKind.numeric]


# -- embedding -------------------------------------------------------------------------------


@pytest.mark.parametrize("with_categories", [False, True], ids=["numeric", "numeric+categorical"])
def test_embedding_distortion_is_bounded(adult_sample, adult_schema, marked, marked_with_categories, with_categories):
    df, rep = marked_with_categories if with_categories else marked
    assert rep.key_id == KEY.key_id and rep.rows == len(adult_sample)
    for col in adult_schema.columns:
        a, b = adult_sample[col.name], df[col.name]
        if col.kind == ColumnKind.numeric:
            assert _ks(a, b) <= DEFAULT_STRENGTH + 1e-12, col.name
            lo, hi = col.numeric_bounds()
            assert b.between(lo, hi).all()
            assert (b == b.round()).all()  # integer columns stay integers
            assert b.dtype == a.dtype
            moved = a != b
            assert moved.sum() == rep.moved[col.name]
            assert np.allclose((b[moved] - a[moved]).abs(), cell_width(col)), col.name  # exactly one cell
        elif col.kind == ColumnKind.categorical:
            assert _tvd(a, b) <= DEFAULT_STRENGTH + 1e-12, col.name
            assert set(b.dropna()) <= set(col.domain)
            assert (a.isna() == b.isna()).all()
            assert (rep.moved.get(col.name, 0) > 0) == (with_categories and col.name != "income")
            if not with_categories:
                pd.testing.assert_series_equal(a, b)
    pd.testing.assert_series_equal(df["income"], adult_sample["income"])  # the target is left alone
    assert sum(rep.moved.values()) > 0.1 * len(adult_sample)


def test_categorical_mark_is_detected_when_asked_for(marked_with_categories, adult_schema):
    df = marked_with_categories[0]
    res = detect_statistical(df, adult_schema, [KEY], categorical=True)
    assert res.detected and "workclass" in res.columns
    assert "workclass" not in detect_statistical(df, adult_schema, [KEY]).columns


def test_no_value_leaves_its_public_bin(adult_sample, adult_schema, marked):
    """The mark lives below the schema's public resolution: the synthesizers' encoding is unchanged."""
    from dpsyn.encoding import DiscreteEncoder

    enc = DiscreteEncoder(adult_schema)
    assert (enc.encode(adult_sample) == enc.encode(marked[0])).all()
    assert marked[1].moved["education-num"] == 0  # one public bin per value: nothing to move within


def test_embedding_does_not_modify_its_input_and_is_reproducible(adult_sample, adult_schema):
    before = adult_sample.copy(deep=True)
    a = embed_statistical(adult_sample, adult_schema, KEY, random_state=3)
    b = embed_statistical(adult_sample, adult_schema, KEY, random_state=3)
    pd.testing.assert_frame_equal(adult_sample, before)
    pd.testing.assert_frame_equal(a, b)


def test_zero_strength_changes_nothing(adult_sample, adult_schema):
    out = embed_statistical(adult_sample, adult_schema, KEY, strength=0.0)
    pd.testing.assert_frame_equal(out, adult_sample)


@pytest.mark.parametrize("kw", [{"strength": -0.1}, {"strength": 0.5}, {"grid": 1}], ids=["neg", "big", "grid"])
def test_bad_settings_raise(adult_sample, adult_schema, kw):
    with pytest.raises(ConfigError):
        embed_statistical(adult_sample.head(10), adult_schema, KEY, **kw)


def test_float_column_with_missing_values():
    schema = parse_schema(
        "name: t\ncolumns:\n  - {name: x, kind: numeric, bounds: [0, 1], nullable: true}\n"
        "  - {name: y, kind: numeric, bounds: [-5, 5]}\n"
    )
    rng = np.random.default_rng(0)
    x = rng.beta(2, 5, 3000)
    x[::10] = np.nan
    df = pd.DataFrame({"x": x, "y": rng.normal(0, 1.5, 3000).clip(-5, 5)})
    out = embed_statistical(df, schema, KEY, strength=0.01, random_state=1)
    assert out["x"].isna().equals(df["x"].isna())
    assert _ks(df["x"].dropna(), out["x"].dropna()) <= 0.01 + 1e-12
    assert _ks(df["y"], out["y"]) <= 0.01 + 1e-12
    assert out["x"].dropna().between(0, 1).all()
    assert detect_statistical(out.sample(300, random_state=2), schema, [KEY]).detected


# -- detection ---------------------------------------------------------------------------------


def test_detects_the_intact_table(marked, adult_schema):
    res = detect_statistical(marked[0], adult_schema, [OTHER, KEY])
    assert res.detected and res.key_id == KEY.key_id
    assert res.p_value < 1e-30 and res.keys_tried == 2
    assert {s.key_id for s in res.per_key} == {KEY.key_id, OTHER.key_id}


def test_wm_dropped_half_the_rows_deleted_500_rows(marked, adult_schema):
    """The issue's bar: without `_wm`, half of 500 rows deleted, p < 1e-6 every time."""
    df = apply_watermark(marked[0], "0123456789abcdef", key=KEY)
    rng = np.random.default_rng(7)
    for _ in range(10):
        part = df.sample(500, random_state=int(rng.integers(1 << 31))).drop(columns=[WM_COLUMN])
        part = part.sample(frac=0.5, random_state=int(rng.integers(1 << 31)))
        assert detect_statistical(part, adult_schema, [KEY]).p_value < 1e-6


@pytest.mark.parametrize(
    "attack",
    ["round-integers", "round-tens", "shuffle", "numeric-only", "three-numeric-columns", "half-columns"],
)
def test_survives_attacks(marked, adult_schema, attack):
    df = marked[0].sample(1000, random_state=5).reset_index(drop=True)
    rng = np.random.default_rng(11)
    nums = [c.name for c in _numeric(adult_schema)]
    if attack == "round-integers":
        df[nums] = df[nums].round()
    elif attack == "round-tens":
        wide = [c.name for c in _numeric(adult_schema) if c.numeric_bounds()[1] - c.numeric_bounds()[0] >= 1000]
        df[wide] = (df[wide] / 10).round() * 10
    elif attack == "shuffle":
        df = df.sample(frac=1.0, random_state=1).reset_index(drop=True)
    elif attack == "numeric-only":
        df = df[nums]
    elif attack == "three-numeric-columns":
        df = df[["age", "education-num", "hours-per-week"]]
    else:  # half of the columns, at least two numeric ones among them
        df = df[["age", "capital-loss"] + list(rng.choice([c for c in df.columns if c not in ("age", "capital-loss")],
                                                       len(df.columns) // 2 - 2, replace=False))]
    res = detect_statistical(df, adult_schema, [KEY])
    assert res.detected, res.summary()
    assert set(res.columns) <= set(df.columns)


def test_wrong_keys_give_uniform_p_values(marked, adult_schema):
    """Without the key every pair's green side is a fair coin: pooled p-values are (super-)uniform."""
    df = marked[0].sample(800, random_state=3)
    rng = np.random.default_rng(0)
    pooled, final = [], []
    for _ in range(150):
        k = WatermarkKey.from_secret(rng.bytes(32))
        s = score_statistical(df, adult_schema, k)
        from scipy.special import bdtrc

        pooled.append(bdtrc(s.green_units - 1, s.units, 0.5) if s.green_units else 1.0)
        final.append(detect_statistical(df, adult_schema, [k]).p_value)
    pooled, final = np.array(pooled), np.array(final)
    assert (final >= 1e-3).all()  # a wrong key never detects
    for t in (0.1, 0.3, 0.5):
        assert np.mean(pooled <= t) <= t + 0.1
    assert np.mean(pooled <= 0.5) >= 0.3  # not degenerate either


def test_unmarked_data_with_point_masses_is_not_detected(adult_sample, adult_schema):
    """Real Adult has big point masses (capital-gain 0, hours 40); a per-value count would flag them."""
    rng = np.random.default_rng(1)
    keys = [WatermarkKey.from_secret(rng.bytes(32)) for _ in range(40)]
    res = detect_statistical(adult_sample, adult_schema, keys, alpha=1e-3)
    assert not res.detected and res.key_id is None
    assert all(s.p_value > 1e-4 for s in res.per_key)


def test_rotation_finds_the_key_that_marked(adult_sample, adult_schema):
    other_marked = embed_statistical(adult_sample, adult_schema, OTHER, random_state=0)
    res = detect_statistical(other_marked.sample(400, random_state=0), adult_schema, [KEY, OTHER])
    assert res.detected and res.key_id == OTHER.key_id
    assert not detect_statistical(other_marked.sample(400, random_state=0), adult_schema, [KEY]).detected


def test_nothing_to_score(adult_schema):
    res = detect_statistical(pd.DataFrame({"unrelated": [1, 2, 3]}), adult_schema, [KEY])
    assert not res.detected and res.p_value == 1.0 and res.units == 0
    assert not detect_statistical(pd.DataFrame({"age": [30]}), adult_schema, []).detected
    with pytest.raises(ConfigError):
        detect_statistical(pd.DataFrame({"age": [30]}), adult_schema, [KEY], alpha=0)


def test_cell_width_comes_from_public_bounds(adult_schema):
    assert cell_width(adult_schema.column("age")) == 1.0
    assert cell_width(adult_schema.column("fnlwgt")) == 1500.0
    assert cell_width(adult_schema.column("capital-loss")) == 5.0
