"""Exact sufficient statistics of a real table, for the validation gate and the drift check.

Everything the gate (and the drift check) reads from real rows is a count:

* per numeric or datetime column, the count of each distinct value (clipped to the
  public bounds, missing sorted after every number): the empirical CDF, hence KS;
* per categorical column, the count of each public category and of missing: TVD;
* per modelled column, the counts over its public encoding: the report's histograms;
* per small column pair, the joint counts over the public encoding: pair TVD;
* per rule check, (violating rows, rows it applies to).

Counts over disjoint parts of a table add up, so a table can be read partition by
partition (:func:`real_statistics` on each, then :meth:`RealStatistics.merge`) and
the merged statistics are *exactly* those of the whole table: the gate then adds its
noise once, to statistics computed from the merged counts, and the privacy argument
(docs/privacy.md) is unchanged. These counts are private: they never leave the run's
work folder and are never logged; only the gate's noisy release is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dpsyn.schema import ColumnKind, TableSchema

__all__ = ["RealStatistics", "ks_between_counts", "ks_from_counts", "real_statistics"]

_MISSING = "\x00<missing>"


@dataclass
class RealStatistics:
    """Exact counts of one real table (or a merge of disjoint partitions of it). Private: noise before release."""

    n: int = 0
    values: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # sorted distinct values, counts
    counts: dict[str, np.ndarray] = field(default_factory=dict)  # categorical: domain order, then missing
    hist: dict[str, np.ndarray] = field(default_factory=dict)  # counts over the column's public encoding
    pairs: dict[str, np.ndarray] = field(default_factory=dict)  # "a/b": joint counts over the encoded cells
    rules: dict[str, tuple[int, int]] = field(default_factory=dict)  # check: (violations, applicable rows)

    def merge(self, other: RealStatistics) -> RealStatistics:
        """The statistics of the union of two disjoint tables (same schema and settings)."""
        if set(self.values) != set(other.values) or set(self.counts) != set(other.counts) \
                or set(self.hist) != set(other.hist) or set(self.pairs) != set(other.pairs) \
                or set(self.rules) != set(other.rules):
            raise ValueError("statistics of different column sets cannot be merged")
        values = {}
        for name, (v1, c1) in self.values.items():
            v2, c2 = other.values[name]
            v, inv = np.unique(np.concatenate([v1, v2]), return_inverse=True)
            c = np.zeros(len(v), dtype=np.int64)
            np.add.at(c, inv, np.concatenate([c1, c2]))
            values[name] = (v, c)
        return RealStatistics(
            n=self.n + other.n, values=values,
            counts={k: self.counts[k] + other.counts[k] for k in self.counts},
            hist={k: self.hist[k] + other.hist[k] for k in self.hist},
            pairs={k: self.pairs[k] + other.pairs[k] for k in self.pairs},
            rules={k: (self.rules[k][0] + other.rules[k][0], self.rules[k][1] + other.rules[k][1]) for k in self.rules},
        )

    @classmethod
    def merge_all(cls, parts: list[RealStatistics]) -> RealStatistics:
        if not parts:
            raise ValueError("no statistics to merge")
        out = parts[0]
        for p in parts[1:]:
            out = out.merge(p)
        return out

    def save(self, path: str | Path) -> Path:
        """Write to ``path`` (``.npz``, no pickle), in the run's private work folder."""
        arrays: dict[str, np.ndarray] = {"n": np.asarray([self.n], dtype=np.int64)}
        for i, (v, c) in enumerate(self.values.values()):
            arrays[f"values/{i}/v"], arrays[f"values/{i}/c"] = v, c
        for kind in ("counts", "hist", "pairs"):
            for i, arr in enumerate(getattr(self, kind).values()):
                arrays[f"{kind}/{i}"] = arr
        arrays["rules"] = np.asarray(list(self.rules.values()), dtype=np.int64).reshape(-1, 2)
        names = {"values": list(self.values), "counts": list(self.counts), "hist": list(self.hist),
                 "pairs": list(self.pairs), "rules": list(self.rules)}
        arrays["names"] = np.frombuffer(json.dumps(names).encode(), dtype=np.uint8)
        path = Path(path)
        tmp = path.with_name(f".{path.name}.tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
        tmp.replace(path)
        return path

    @classmethod
    def load(cls, path: str | Path) -> RealStatistics:
        with np.load(path, allow_pickle=False) as z:
            names = json.loads(z["names"].tobytes().decode())
            out = cls(n=int(z["n"][0]))
            for i, name in enumerate(names["values"]):
                out.values[name] = (z[f"values/{i}/v"], z[f"values/{i}/c"])
            for kind in ("counts", "hist", "pairs"):
                for i, name in enumerate(names[kind]):
                    getattr(out, kind)[name] = z[f"{kind}/{i}"]
            for name, (v, m) in zip(names["rules"], z["rules"].tolist(), strict=True):
                out.rules[name] = (int(v), int(m))
        return out


def _categorical_counts(s: pd.Series, categories: list[str]) -> np.ndarray:
    cats = list(categories) + [_MISSING]
    vc = s.astype("string").fillna(_MISSING).value_counts()
    return vc.reindex(cats, fill_value=0).to_numpy(dtype=np.int64)


def real_statistics(real: pd.DataFrame, schema: TableSchema, *, pair_max_cells: int, rules=None) -> RealStatistics:
    """Exact counts of ``real`` (masked as the schema declares) over every modelled column it holds.

    Pairs are counted for every column pair whose joint public encoding has at most
    ``pair_max_cells`` cells (the gate later keeps those its row count allows);
    ``rules`` (a :class:`~dpsyn.validation.rules.RuleSet`) adds each rule check's counts.
    """
    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.validation.fidelity import _numeric

    out = RealStatistics(n=len(real))
    cols = [c for c in schema.synthesizable_columns() if c.name in real.columns]
    for col in cols:
        if col.kind == ColumnKind.categorical:
            out.counts[col.name] = _categorical_counts(real[col.name], col.domain or [])
        else:
            v, c = np.unique(_numeric(real[col.name], col), return_counts=True)
            out.values[col.name] = (v, c.astype(np.int64))
    enc = DiscreteEncoder(schema, columns=[c.name for c in cols])
    codes = enc.encode(real[enc.names])
    for j, c in enumerate(enc.columns):
        out.hist[c.name] = np.bincount(codes[:, j], minlength=c.size).astype(np.int64)
    if pair_max_cells > 0:
        for i in range(len(enc.sizes)):
            for j in range(i + 1, len(enc.sizes)):
                cells = enc.sizes[i] * enc.sizes[j]
                if cells <= pair_max_cells:
                    joint = codes[:, i] * enc.sizes[j] + codes[:, j]
                    out.pairs[f"{enc.names[i]}/{enc.names[j]}"] = np.bincount(joint, minlength=cells).astype(np.int64)
    if rules is not None:
        from dpsyn.validation.rules import rule_counts

        out.rules = {k: (int(v), int(m)) for k, (v, m) in rule_counts(real, rules, schema).items()}
    return out


def ks_from_counts(values: np.ndarray, counts: np.ndarray, other: np.ndarray) -> float:
    """Two-sample KS statistic between a table given by its value counts and the sample ``other``.

    Equal, bit for bit, to :func:`dpsyn.validation._ks` on the expanded values: the CDFs are the same integer
    counts divided by the same sizes, evaluated at the same points.
    """
    n = int(counts.sum())
    other = np.sort(other)
    grid = np.concatenate([values, other])
    cum = np.concatenate([[0], np.cumsum(counts)])
    fr = cum[np.searchsorted(values, grid, side="right")] / max(n, 1)
    fs = np.searchsorted(other, grid, side="right") / max(len(other), 1)
    return float(np.max(np.abs(fr - fs))) if len(grid) else 0.0


def ks_between_counts(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Two-sample KS statistic between two tables given by their value counts (drift: both sides private)."""
    (va, ca), (vb, cb) = a, b
    grid = np.concatenate([va, vb])
    cum_a = np.concatenate([[0], np.cumsum(ca)])
    cum_b = np.concatenate([[0], np.cumsum(cb)])
    fa = cum_a[np.searchsorted(va, grid, side="right")] / max(int(ca.sum()), 1)
    fb = cum_b[np.searchsorted(vb, grid, side="right")] / max(int(cb.sum()), 1)
    return float(np.max(np.abs(fa - fb))) if len(grid) else 0.0
