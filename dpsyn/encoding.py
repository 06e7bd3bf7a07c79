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

import numpy as np
import pandas as pd

from dpsyn.errors import SchemaError
from dpsyn.schema import Column, ColumnKind, TableSchema

__all__ = ["DiscreteEncoder", "EncodedColumn"]

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

    def decode(self, codes: np.ndarray, *, rng: np.random.Generator) -> pd.DataFrame:
        """Values for codes: categories by label, numbers drawn uniformly inside their public bin."""
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
            if c.decimals is not None:  # a value on the grid of 10^-decimals inside the bin, uniformly
                scale = 10.0 ** c.decimals
                ilo = np.ceil(np.round(lo * scale, 6))
                ihi = np.where(last, np.floor(np.round(hi * scale, 6)) + 1, np.ceil(np.round(hi * scale, 6)))
                ihi = np.maximum(ihi, ilo + 1)  # exclusive upper end
                x = np.floor(ilo + rng.random(len(k)) * (ihi - ilo)) / scale
            else:
                x = lo + rng.random(len(k)) * (hi - lo)
            x = np.clip(x, c.bounds[0], c.bounds[1])  # unit bins of integers end at hi + 1
            x = np.where(na, np.nan, x)
            if c.kind == ColumnKind.datetime:
                data[c.name] = _EPOCH + pd.to_timedelta(np.floor(x), unit="D")
            elif c.integer:
                data[c.name] = pd.array(np.where(na, None, x), dtype="Int64") if na.any() else x.astype("int64")
            else:
                data[c.name] = x.astype("float64")
        return pd.DataFrame(data)


def _to_float(s: pd.Series, kind: ColumnKind) -> np.ndarray:
    if kind == ColumnKind.datetime:
        dt = pd.to_datetime(s, errors="coerce")
        days = (dt - _EPOCH) / pd.Timedelta(days=1)
        return days.to_numpy(dtype=np.float64, na_value=math.nan)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=math.nan)
