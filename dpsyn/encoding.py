"""Discrete encoding of a table over its *public* schema domains.

Every modelled column becomes a small integer code: categorical columns by
their declared domain, numeric and datetime columns by their declared public
bins. Missing values of a nullable column get one extra code. The encoder is
built from the schema alone, so it holds no statistic of the private rows and
a pickled synthesizer carries none of their values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from dpsyn.errors import ConfigError, SchemaError
from dpsyn.schema import Column, ColumnKind, TableSchema

__all__ = ["DiscreteEncoder", "EncodedColumn", "within_bin_positions"]

_EPOCH = pd.Timestamp("1970-01-01")


@dataclass(frozen=True)
class EncodedColumn:
    name: str
    kind: ColumnKind
    size: int  # number of codes, missing code included
    labels: tuple[str, ...]  # human-readable label per code (public)
    edges: tuple[float, ...] | None  # numeric/datetime bin edges
    integer: bool
    nullable: bool
    bounds: tuple[float, float] | None = None  # public bounds (numeric/datetime)
    decimals: int | None = None  # public resolution: values decode onto a grid of 10^-decimals (integer: 0)

    @property
    def missing_code(self) -> int | None:
        return self.size - 1 if self.nullable else None


def _encoded(col: Column) -> EncodedColumn:
    if col.kind == ColumnKind.categorical:
        labels = tuple(col.domain or ())
        edges = None
    else:
        edges = tuple(col.bin_edges())
        labels = tuple(f"[{edges[i]:g}, {edges[i + 1]:g})" for i in range(len(edges) - 1))
    if col.nullable:
        labels = labels + ("<missing>",)
    bounds = None if col.kind == ColumnKind.categorical else col.numeric_bounds()
    return EncodedColumn(col.name, col.kind, len(labels), labels, edges, col.integer, col.nullable, bounds,
                         0 if col.integer else col.decimals)


class DiscreteEncoder:
    """Encode a frame to integer codes and decode codes back to values.

    Parameters
    ----------
    schema : TableSchema
        Only its public declarations are used.
    columns : list of str, optional
        Which columns to model; default: the schema's synthesizable columns (target last).
    """

    def __init__(self, schema: TableSchema, columns: list[str] | None = None):
        cols = schema.synthesizable_columns() if columns is None else [schema.column(c) for c in columns]
        self.columns: list[EncodedColumn] = [_encoded(c) for c in cols]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def sizes(self) -> list[int]:
        return [c.size for c in self.columns]

    def encode(self, df: pd.DataFrame) -> np.ndarray:
        """Codes of shape (n_rows, n_columns), int64. Numeric values are clipped to public bounds."""
        out = np.empty((len(df), len(self.columns)), dtype=np.int64)
        for j, c in enumerate(self.columns):
            if c.name not in df.columns:
                raise SchemaError(f"column '{c.name}' is missing from the table to encode")
            s = df[c.name]
            if c.kind == ColumnKind.categorical:
                cat = pd.Categorical(s, categories=list(c.labels[: len(c.labels) - c.nullable]))
                codes = np.asarray(cat.codes, dtype=np.int64)
                unknown = (codes < 0) & s.notna().to_numpy()
                if unknown.any():
                    raise SchemaError(f"column '{c.name}': value(s) outside the declared domain")
                na = codes < 0
            else:
                x = _to_float(s, c.kind)
                na = np.isnan(x)
                edges = np.asarray(c.edges)
                xc = np.clip(np.where(na, edges[0], x), edges[0], edges[-1])
                codes = np.searchsorted(edges, xc, side="right") - 1
                codes = np.clip(codes, 0, len(edges) - 2)
            if na.any():
                if not c.nullable:
                    raise SchemaError(f"column '{c.name}': missing value(s) but the column is not nullable")
                codes = np.where(na, c.missing_code, codes)
            out[:, j] = codes
        return out

    def decode(self, codes: np.ndarray, *, rng: np.random.Generator,
               within_bin: Literal["uniform", "shaped"] = "uniform") -> pd.DataFrame:
        """Values for codes: categories by label, numbers drawn inside their public bin.

        ``within_bin``: where in its bin a number lands. ``"uniform"`` (default): uniformly. ``"shaped"``: from a
        density that follows the bins' own trend (:func:`within_bin_positions`, read from the bin counts of
        ``codes`` themselves: post-processing), so a wide tail bin such as visits in [40, 365) decays from its
        denser neighbour instead of filling up to the public bound. Both consume the same random draws, so the same
        generator state decodes the same codes into the same bins either way."""
        if within_bin not in ("uniform", "shaped"):
            raise ConfigError(f"within_bin must be 'uniform' or 'shaped', not {within_bin!r}")
        data = {}
        for j, c in enumerate(self.columns):
            k = codes[:, j]
            na = (k == c.missing_code) if c.nullable else np.zeros(len(k), dtype=bool)
            if c.kind == ColumnKind.categorical:
                labels = np.asarray(c.labels[: len(c.labels) - c.nullable], dtype=object)
                vals = labels[np.where(na, 0, k)]
                data[c.name] = pd.array(np.where(na, None, vals), dtype="string")
                continue
            edges = np.asarray(c.edges, dtype=np.float64)
            kk = np.where(na, 0, k)
            lo, hi = edges[kk], edges[kk + 1]
            last = kk == len(edges) - 2
            t = rng.random(len(k))  # the position inside the bin, in [0, 1)
            if within_bin == "shaped":
                t = within_bin_positions(t, kk[~na], kk, edges)  # shaped by the non-missing codes
            if c.decimals is not None:  # a value on the grid of 10^-decimals inside the bin
                scale = 10.0 ** c.decimals
                ilo = np.ceil(np.round(lo * scale, 6))
                ihi = np.where(last, np.floor(np.round(hi * scale, 6)) + 1, np.ceil(np.round(hi * scale, 6)))
                ihi = np.maximum(ihi, ilo + 1)  # exclusive upper end
                x = np.floor(ilo + t * (ihi - ilo)) / scale
            else:
                x = lo + t * (hi - lo)
            x = np.clip(x, c.bounds[0], c.bounds[1])  # unit bins of integers end at hi + 1
            x = np.where(na, np.nan, x)
            if c.kind == ColumnKind.datetime:
                data[c.name] = _EPOCH + pd.to_timedelta(np.floor(x), unit="D")
            elif c.integer:
                data[c.name] = pd.array(np.where(na, None, x), dtype="Int64") if na.any() else x.astype("int64")
            else:
                data[c.name] = x.astype("float64")
        return pd.DataFrame(data)


def _decay_rate(r: float) -> float:
    """s > 0 with (1 − e^(−s))/s = r for 0 < r < 1: the rate of the truncated exponential on [0, 1) whose mean
    density is r times its density at 0 (bisection; the left side falls from 1 to 0 as s grows)."""
    lo, hi = 0.0, 1.0
    while (1 - math.exp(-hi)) / hi > r:
        hi *= 2
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        if (1 - math.exp(-mid)) / mid > r:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def within_bin_positions(u: np.ndarray, counted: np.ndarray, bins: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Positions in [0, 1) inside each row's bin (``bins``) for uniform draws ``u``, from a density that follows
    the bins' trend: post-processing of ``counted`` (the bin codes whose counts set the shape) and the public
    ``edges``.

    A bin's density is its count over its width; the density at each inner edge is the mean of the two bins'
    densities (a bin at either end of the range keeps its own density at its outer edge). Inside a bin the density
    is a truncated exponential that starts at the value of its denser edge and holds the bin's count: the rate s
    solves (1 − e^(−s))/s = density / edge density. A bin at least as dense as both its edges (a mode, a flat
    run) stays uniform. So a wide last bin after a falling run ([40, 365) visits after [20, 40)) holds its values
    near its lower edge, as the run it continues, rather than spread up to the public bound."""
    nb = len(edges) - 1
    width = np.diff(np.asarray(edges, dtype=np.float64))
    dens = np.bincount(counted, minlength=nb)[:nb] / np.where(width > 0, width, 1.0)
    left = np.r_[dens[0], 0.5 * (dens[:-1] + dens[1:])]
    right = np.r_[0.5 * (dens[:-1] + dens[1:]), dens[-1]]
    out = np.array(u, dtype=np.float64)
    for b in np.unique(bins):
        edge = max(left[b], right[b])
        if dens[b] <= 0 or edge <= dens[b] * (1 + 1e-9):
            continue
        s = _decay_rate(dens[b] / edge)
        rows = bins == b
        t = -np.log1p(-u[rows] * -np.expm1(-s)) / s  # inverse cdf of e^(−s·t) on [0, 1)
        out[rows] = np.clip(t if left[b] >= right[b] else 1.0 - t, 0.0, np.nextafter(1.0, 0.0))
    return out


def _to_float(s: pd.Series, kind: ColumnKind) -> np.ndarray:
    if kind == ColumnKind.datetime:
        dt = pd.to_datetime(s, errors="coerce")
        days = (dt - _EPOCH) / pd.Timedelta(days=1)
        return days.to_numpy(dtype=np.float64, na_value=math.nan)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=math.nan)
