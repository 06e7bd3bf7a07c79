"""Detecting the keyed statistical watermark of :mod:`dpsyn.watermark.statistical` in a table.

Per marked column, the cells that fall in the key's green half of each pair are counted; under the null (a table
never marked with this key) each is green with probability 1/2, so the one-sided binomial tail of the green
count over all columns is the p-value (docs/watermark.md).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from dpsyn.errors import ConfigError
from dpsyn.schema import ColumnKind, TableSchema
from dpsyn.watermark.keys import WatermarkKey
from dpsyn.watermark.statistical import (
    DEFAULT_ALPHA,
    DEFAULT_GRID,
    _categorical_grid,
    _CategoricalGrid,
    _marked_columns,
    _numeric_grid,
    _NumericGrid,
)

__all__ = [
    "DetectionResult",
    "ColumnScore",
    "KeyScore",
    "detect_statistical",
    "score_statistical",
]


class ColumnScore(BaseModel):
    column: str
    units: int  # (pair) units that voted
    green_units: int
    n_values: int
    p_value: float


class KeyScore(BaseModel):
    """The test of one key: every column's units pooled, and each column alone."""

    key_id: str
    z: float  # of the test that gave ``p_value``
    p_value: float  # for this key alone, adjusted over the 1 + C tests below
    test: str  # "pooled" or "column:<name>"
    units: int  # pooled units
    green_units: int
    n_values: int
    green_fraction: float  # share of scored values in green cells (about 0.5 without the mark)
    columns: list[ColumnScore] = Field(default_factory=list)


class DetectionResult(BaseModel):
    """The outcome of a statistical watermark test (no values, only counts and statistics)."""

    detected: bool
    key_id: str | None  # the key that matched, None if nothing was detected
    best_key_id: str | None = None  # the key with the smallest p-value, detected or not
    z: float  # of the test that gave the best key's p-value
    p_value: float  # of the best key, Bonferroni-adjusted over its tests and over the keys tried
    test: str = "pooled"  # that test: "pooled" (all columns) or "column:<name>"
    alpha: float
    n_values: int
    units: int
    columns: list[str] = Field(default_factory=list)
    keys_tried: int = 0
    per_key: list[KeyScore] = Field(default_factory=list)

    def summary(self) -> str:
        if self.detected:
            return f"statistical watermark matched key {self.key_id}, p={self.p_value:.3g} (z={self.z:.2f})"
        return f"no statistical watermark detected (best p={self.p_value:.3g} over {self.keys_tried} key(s))"


def _votes_numeric(s: pd.Series, g: _NumericGrid) -> tuple[int, int, int, int]:
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    x = x[np.isfinite(x)]
    c = g.cells(x)
    j, side, complete = g.locate(c)
    j, side = j[complete], side[complete]
    return _votes(j, side == g.green_side[j], len(g.green_side))


def _votes_categorical(s: pd.Series, g: _CategoricalGrid) -> tuple[int, int, int, int]:
    pos = g.positions(s)
    pos = pos[pos >= 0]
    j, side = pos // 2, pos % 2
    return _votes(j, side == g.green_side[j], len(g.green_side))


def _votes(j: np.ndarray, green: np.ndarray, n_pairs: int) -> tuple[int, int, int, int]:
    """(units voting, green votes, values scored, values green)."""
    if len(j) == 0:
        return 0, 0, 0, 0
    ng = np.bincount(j, weights=green, minlength=n_pairs)
    nr = np.bincount(j, weights=~green, minlength=n_pairs)
    return int((ng != nr).sum()), int((ng > nr).sum()), len(j), int(green.sum())


def _tail(green: int, units: int) -> float:
    """P(Binomial(units, ½) ≥ green)."""
    from scipy.special import bdtrc

    if units == 0 or green <= 0:
        return 1.0
    return float(min(1.0, max(0.0, bdtrc(green - 1, units, 0.5))))


def score_statistical(df: pd.DataFrame, schema: TableSchema, key: WatermarkKey, *, grid: int = DEFAULT_GRID,
                      categorical: bool = False, include_target: bool = False) -> KeyScore:
    """Test one key on ``df``.

    Two kinds of test, both exact under "not marked with this key": the units
    of every column pooled (the most power when the table is intact), and each
    column alone (the most power when an attack, e.g. noise, has wiped the
    fine-grained columns and left pure-chance units in them). The key's
    p-value is the smallest of these times their number (Bonferroni).
    """
    cols = _marked_columns(schema, df.columns, categorical=categorical, include_target=include_target)
    per_col: list[ColumnScore] = []
    n_green = 0
    for col in cols:
        if col.kind == ColumnKind.numeric:
            u, gu, nv, ng = _votes_numeric(df[col.name], _numeric_grid(key, col, grid))
        else:
            u, gu, nv, ng = _votes_categorical(df[col.name], _categorical_grid(key, col))
        per_col.append(ColumnScore(column=col.name, units=u, green_units=gu, n_values=nv, p_value=_tail(gu, u)))
        n_green += ng
    units = sum(c.units for c in per_col)
    green_units = sum(c.green_units for c in per_col)
    n_values = sum(c.n_values for c in per_col)
    tests = [("pooled", green_units, units, _tail(green_units, units))]
    voting = [c for c in per_col if c.units]
    if len(voting) > 1:  # with one column the pooled test is that column's test
        tests += [(f"column:{c.column}", c.green_units, c.units, c.p_value) for c in voting]
    name, g, u, p = min(tests, key=lambda t: t[3])
    return KeyScore(
        key_id=key.key_id, z=(2 * g - u) / math.sqrt(u) if u else 0.0, p_value=min(1.0, p * len(tests)), test=name,
        units=units, green_units=green_units, n_values=n_values,
        green_fraction=n_green / n_values if n_values else 0.0, columns=per_col,
    )


def detect_statistical(
    df: pd.DataFrame,
    schema: TableSchema,
    keys: list[WatermarkKey],
    *,
    alpha: float = DEFAULT_ALPHA,
    grid: int = DEFAULT_GRID,
    categorical: bool = False,
    include_target: bool = False,
) -> DetectionResult:
    """Test ``df`` for the statistical watermark of each key; report the best one.

    Columns are matched by name (a table with columns removed is scored on
    those left). ``p_value`` is the best key's p-value times the number of
    keys tried; ``detected`` means ``p_value < alpha``.
    """
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be between 0 and 1 (got {alpha:g})")
    scores = [score_statistical(df, schema, k, grid=grid, categorical=categorical, include_target=include_target)
              for k in keys]
    if not scores:
        return DetectionResult(detected=False, key_id=None, z=0.0, p_value=1.0, alpha=alpha, n_values=0, units=0)
    best = min(scores, key=lambda s: (s.p_value, -s.z))
    p_adj = min(1.0, best.p_value * len(scores))
    detected = p_adj < alpha
    return DetectionResult(
        detected=detected, key_id=best.key_id if detected else None, best_key_id=best.key_id, z=best.z,
        p_value=p_adj, test=best.test, alpha=alpha, n_values=best.n_values, units=best.units,
        columns=[c.column for c in best.columns], keys_tried=len(scores), per_key=scores,
    )
