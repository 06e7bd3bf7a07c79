"""The gate's statistics, exact (private: the gate noises them): per-column KS / TVD, pair TVD, histograms.

Each has two forms giving the same value bit for bit: from the real rows, and from their exact counts
(:class:`~dpsyn.validation.stats.RealStatistics`, which merge over partitions).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpsyn.schema import ColumnKind, TableSchema
from dpsyn.validation.stats import RealStatistics, ks_from_counts

__all__ = ["column_histograms", "fidelity_statistics", "pair_statistics"]


def _ks(real: np.ndarray, synth: np.ndarray) -> float:
    """Two-sample KS statistic sup_t |F_r(t) - F_s(t)|."""
    real, synth = np.sort(real), np.sort(synth)
    grid = np.concatenate([real, synth])
    fr = np.searchsorted(real, grid, side="right") / max(len(real), 1)
    fs = np.searchsorted(synth, grid, side="right") / max(len(synth), 1)
    return float(np.max(np.abs(fr - fs))) if len(grid) else 0.0


def _tvd(real: pd.Series, synth: pd.Series, categories: list[str]) -> float:
    cats = list(categories) + ["\x00<missing>"]
    pr = real.astype("string").fillna(cats[-1]).value_counts(normalize=True).reindex(cats, fill_value=0.0)
    ps = synth.astype("string").fillna(cats[-1]).value_counts(normalize=True).reindex(cats, fill_value=0.0)
    return float(0.5 * np.abs(pr.to_numpy() - ps.to_numpy()).sum())


def _numeric(s: pd.Series, col) -> np.ndarray:
    lo, hi = col.numeric_bounds()
    if col.kind == ColumnKind.datetime:
        x = ((pd.to_datetime(s, errors="coerce") - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)).to_numpy(
            dtype=np.float64, na_value=np.nan
        )
    else:
        x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    x = np.clip(x, lo, hi)  # public bounds, as the synthesizer sees them
    return np.where(np.isnan(x), hi + 1.0, x)  # missing sorts after every number


def pair_statistics(real: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema, *,
                    max_cells: int) -> list[tuple[str, str, float]]:
    """("a/b", "tvd2", exact value): TVD of each small column pair's joint distribution over the public encoding.

    Like a one-way TVD, adding or removing a real row moves it by at most 1/(n−1).
    """
    from dpsyn.encoding import DiscreteEncoder

    if max_cells <= 0:
        return []
    names = [c.name for c in schema.synthesizable_columns() if c.name in real.columns and c.name in synth.columns]
    enc = DiscreteEncoder(schema, columns=names)
    a, b = enc.encode(real[enc.names]), enc.encode(synth[enc.names])
    out = []
    for i in range(len(enc.sizes)):
        for j in range(i + 1, len(enc.sizes)):
            cells = enc.sizes[i] * enc.sizes[j]
            if cells > max_cells:
                continue
            ia = a[:, i] * enc.sizes[j] + a[:, j]
            ib = b[:, i] * enc.sizes[j] + b[:, j]
            pa = np.bincount(ia, minlength=cells) / max(len(a), 1)
            pb = np.bincount(ib, minlength=cells) / max(len(b), 1)
            out.append((f"{enc.names[i]}/{enc.names[j]}", "tvd2", float(0.5 * np.abs(pa - pb).sum())))
    return out


def fidelity_statistics(real: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema) -> list[tuple[str, str, float]]:
    """(column, statistic, exact value) for each modelled column. Exact values are private: noise them."""
    out = []
    for col in schema.synthesizable_columns():
        if col.name not in real.columns or col.name not in synth.columns:
            continue
        if col.kind == ColumnKind.categorical:
            out.append((col.name, "tvd", _tvd(real[col.name], synth[col.name], col.domain or [])))
        else:
            out.append((col.name, "ks", _ks(_numeric(real[col.name], col), _numeric(synth[col.name], col))))
    return out


def column_histograms(real: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema):
    """(encoded column, real shares, synthetic shares) per modelled column over the public encoding.

    The real shares are private (noise them): adding or removing one real row moves the share vector by at
    most √2/(n−1) in L2.
    """
    from dpsyn.encoding import DiscreteEncoder

    names = [c.name for c in schema.synthesizable_columns() if c.name in real.columns and c.name in synth.columns]
    enc = DiscreteEncoder(schema, columns=names)
    a, b = enc.encode(real[enc.names]), enc.encode(synth[enc.names])
    return [(c, np.bincount(a[:, j], minlength=c.size) / max(len(a), 1),
             np.bincount(b[:, j], minlength=c.size) / max(len(b), 1)) for j, c in enumerate(enc.columns)]


def _cells(schema: TableSchema) -> dict[str, int]:
    """Cells of each column's public encoding (categorical: domain + missing), for the sampling allowance."""
    from dpsyn.encoding import DiscreteEncoder

    enc = DiscreteEncoder(schema)
    out = dict(zip(enc.names, enc.sizes, strict=True))
    for c in schema.synthesizable_columns():
        if c.kind == ColumnKind.categorical:
            out[c.name] = len(c.domain or []) + 1
    return out


def _modelled(stats: RealStatistics, synth: pd.DataFrame, schema: TableSchema) -> list:
    return [c for c in schema.synthesizable_columns() if c.name in stats.hist and c.name in synth.columns]


def _fidelity_from_counts(stats: RealStatistics, synth: pd.DataFrame,
                          schema: TableSchema) -> list[tuple[str, str, float]]:
    """As :func:`fidelity_statistics`, with the real side given by its counts (same values, bit for bit)."""
    out = []
    n = max(stats.n, 1)
    for col in _modelled(stats, synth, schema):
        if col.kind == ColumnKind.categorical:
            cats = list(col.domain or []) + ["\x00<missing>"]
            pr = stats.counts[col.name] / n
            ps = synth[col.name].astype("string").fillna(cats[-1]).value_counts(normalize=True).reindex(
                cats, fill_value=0.0).to_numpy()
            out.append((col.name, "tvd", float(0.5 * np.abs(pr - ps).sum())))
        else:
            v, c = stats.values[col.name]
            out.append((col.name, "ks", ks_from_counts(v, c, _numeric(synth[col.name], col))))
    return out


def _pairs_from_counts(stats: RealStatistics, synth: pd.DataFrame, schema: TableSchema, *,
                       max_cells: int) -> list[tuple[str, str, float]]:
    """As :func:`pair_statistics`, with the real side given by its counts."""
    from dpsyn.encoding import DiscreteEncoder

    if max_cells <= 0:
        return []
    enc = DiscreteEncoder(schema, columns=[c.name for c in _modelled(stats, synth, schema)])
    b = enc.encode(synth[enc.names])
    out = []
    for i in range(len(enc.sizes)):
        for j in range(i + 1, len(enc.sizes)):
            cells = enc.sizes[i] * enc.sizes[j]
            if cells > max_cells:
                continue
            key = f"{enc.names[i]}/{enc.names[j]}"
            pa = stats.pairs[key] / max(stats.n, 1)
            pb = np.bincount(b[:, i] * enc.sizes[j] + b[:, j], minlength=cells) / max(len(b), 1)
            out.append((key, "tvd2", float(0.5 * np.abs(pa - pb).sum())))
    return out


def _histograms_from_counts(stats: RealStatistics, synth: pd.DataFrame, schema: TableSchema):
    """As :func:`column_histograms`, with the real side given by its counts."""
    from dpsyn.encoding import DiscreteEncoder

    enc = DiscreteEncoder(schema, columns=[c.name for c in _modelled(stats, synth, schema)])
    b = enc.encode(synth[enc.names])
    return [(c, stats.hist[c.name] / max(stats.n, 1), np.bincount(b[:, j], minlength=c.size) / max(len(b), 1))
            for j, c in enumerate(enc.columns)]
