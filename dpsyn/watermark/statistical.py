"""A distribution-level watermark that survives losing ``_wm``, columns, rows, rounding and noise.

Idea (after He et al. 2024, "Watermarking Generative Tabular Data", and
TabularMark, Zheng et al. 2024): each numeric column's public value range is
cut into a grid of cells; neighbouring cells are grouped in *pairs*, and a
keyed pseudo-random function picks, in every pair, which cell is *green*.
Embedding moves synthetic values from the red cell of a pair into its green
cell by exactly one cell width (integers stay integers, values stay within
the public bounds). Categorical columns may carry the mark too: their public
domain is paired by a keyed permutation and some values swap to the green
category of their pair.

**Bounded distortion.** Within a pair at most ``strength · n`` values move,
and only between the pair's two cells, so the empirical CDF changes by at most
``strength`` anywhere: the KS statistic between the table before and after
embedding is ≤ ``strength`` for every numeric column (and the TVD ≤
``strength`` for every categorical one, whose moves are capped per column).
By the triangle inequality the watermark then costs at most ``strength`` on
the validation gate's KS/TVD against the real data.

**Detection** needs only the key, the schema and whatever is left of the
table: columns are matched by name. Each (column, pair) that holds values is
one unit; it votes *green* if more of its values sit in its green cell than in
its red cell (ties do not vote). Without the key the green side of every pair
is an independent fair coin, whatever the data, so for data not watermarked
with that key the number of green votes is exactly Binomial(units, ½): the
p-value is the binomial tail, valid for any data (point masses included,
which a per-value count would not survive), and a wrong key gives a uniform
p-value. When several keys are tried, the best p-value is multiplied by the
number of keys (Bonferroni).

**Privacy.** Embedding is a function of the DP synthetic table, the public
schema and a key that is independent of the private data: it is
post-processing and costs no ε.
"""

from __future__ import annotations

import hashlib
import hmac
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from dpsyn.errors import ConfigError
from dpsyn.schema import Column, ColumnKind, TableSchema
from dpsyn.watermark.codes import WM_COLUMN, encode_fields
from dpsyn.watermark.keys import WatermarkKey

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_GRID",
    "DEFAULT_STRENGTH",
    "EmbedReport",
    "cell_width",
    "embed_statistical",
    "embed_statistical_with_report",
]

DEFAULT_STRENGTH = 0.005  # largest KS / TVD shift per column
DEFAULT_GRID = 1000  # cells across a wide column's public range
DEFAULT_ALPHA = 1e-3
_DOMAIN = b"dpsyn-statistical-watermark-v1"


# -- keyed pseudo-random bits ---------------------------------------------------------------


@lru_cache(maxsize=1024)
def _bits(secret: bytes, label: bytes, n: int) -> np.ndarray:
    """n keyed pseudo-random bits, in counter mode: block b = HMAC-SHA256(secret, label ‖ b), 256 bits each."""
    base = hmac.new(secret, _DOMAIN + label, hashlib.sha256)
    blocks = []
    for b in range((n + 255) // 256):
        h = base.copy()
        h.update(b.to_bytes(8, "big"))
        blocks.append(h.digest())
    out = np.unpackbits(np.frombuffer(b"".join(blocks), dtype=np.uint8))[:n].astype(bool)
    out.flags.writeable = False
    return out


def _ranks(secret: bytes, label: bytes, items: tuple[str, ...]) -> list[str]:
    """``items`` in a keyed pseudo-random order."""
    def score(s: str) -> bytes:
        return hmac.new(secret, _DOMAIN + label + encode_fields(s), hashlib.sha256).digest()

    return sorted(items, key=score)


# -- grids ---------------------------------------------------------------------------------


def cell_width(col: Column, grid: int = DEFAULT_GRID) -> float:
    """The cell width of a numeric column, from its public bounds only.

    Integer columns get an integer width (at least 1, so integers stay integers
    and rounding to integers keeps every value in its cell); other columns
    ``range / grid``.
    """
    lo, hi = col.numeric_bounds()
    if col.integer:
        return float(max(1, round((hi - lo) / grid)))
    return (hi - lo) / grid


@dataclass(frozen=True)
class _NumericGrid:
    """Cells of width ``width`` centred on ``lo + c·width``; cells ``2j+phase`` and ``2j+1+phase`` form pair j.

    A pair is usable only if both cell centres fall in the same public bin of
    the column, so that moving a value to its partner cell never changes its
    public bin (the synthesizers' encoding): the mark lives below the public
    resolution.
    """

    name: str
    lo: float
    hi: float
    width: float
    integer: bool
    n_cells: int
    phase: int
    edges: np.ndarray = field(repr=False)
    usable: np.ndarray = field(repr=False)  # per pair (index j + 1)
    green_side: np.ndarray = field(repr=False)  # per pair (index j + 1): 0 or 1

    def cells(self, x: np.ndarray) -> np.ndarray:
        return np.floor((np.clip(x, self.lo, self.hi) - self.lo) / self.width + 0.5).astype(np.int64)

    def bins(self, x: np.ndarray) -> np.ndarray:
        return np.clip(np.searchsorted(self.edges, x, side="right") - 1, 0, len(self.edges) - 2)

    def locate(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(pair index + 1, side 0/1, whether the pair is usable) for cells ``c``."""
        rel = c - self.phase
        j = np.floor_divide(rel, 2)
        side = rel - 2 * j
        ok = (c >= 0) & (c < self.n_cells)
        ok[ok] = self.usable[j[ok] + 1]
        return j + 1, side, ok


def _numeric_grid(key: WatermarkKey, col: Column, grid: int) -> _NumericGrid:
    lo, hi = col.numeric_bounds()
    w = cell_width(col, grid)
    n_cells = int(math.floor((hi - lo) / w + 0.5)) + 1
    label = encode_fields("numeric", col.name, str(grid))
    phase = int(_bits(key.secret, label + b"phase", 1)[0])
    n_pairs = n_cells // 2 + 2
    edges = np.asarray(col.bin_edges(), dtype=np.float64)
    first = 2 * (np.arange(n_pairs) - 1) + phase  # the first cell of pair index j + 1
    both = (first >= 0) & (first + 1 < n_cells)
    centres = lo + first * w
    g = _NumericGrid(col.name, lo, hi, w, col.integer, n_cells, phase, edges, both,
                     _bits(key.secret, label + b"pairs", n_pairs))
    usable = both & (g.bins(centres) == g.bins(np.minimum(centres + w, hi)))
    usable.flags.writeable = False
    return _NumericGrid(col.name, lo, hi, w, col.integer, n_cells, phase, edges, usable, g.green_side)


@dataclass(frozen=True)
class _CategoricalGrid:
    """The domain in a keyed order; positions 2j and 2j+1 form pair j (an odd last category is unpaired)."""

    name: str
    order: tuple[str, ...]
    green_side: np.ndarray = field(repr=False)

    @property
    def n_paired(self) -> int:
        return 2 * (len(self.order) // 2)

    def positions(self, s: pd.Series) -> np.ndarray:
        """Each value's position in ``order`` (-1 for missing, unknown or unpaired)."""
        codes, uniques = pd.factorize(s, use_na_sentinel=True)
        where = {c: i for i, c in enumerate(self.order[: self.n_paired])}
        lut = np.array([where.get(str(u).strip(), -1) for u in uniques] + [-1], dtype=np.int64)
        return lut[codes]  # code -1 (missing) picks the trailing -1


def _categorical_grid(key: WatermarkKey, col: Column) -> _CategoricalGrid:
    label = encode_fields("categorical", col.name)
    order = tuple(_ranks(key.secret, label + b"order", tuple(col.domain or ())))
    return _CategoricalGrid(col.name, order, _bits(key.secret, label + b"pairs", max(1, len(order) // 2)))


def _marked_columns(schema: TableSchema, present, *, categorical: bool, include_target: bool) -> list[Column]:
    cols = []
    for c in schema.columns:
        if c.name not in present or c.name == WM_COLUMN:
            continue
        if c.name == schema.target and not include_target:
            continue
        if c.kind == ColumnKind.numeric or (categorical and c.kind == ColumnKind.categorical and c.domain):
            cols.append(c)
    return cols


# -- embedding -----------------------------------------------------------------------------


class EmbedReport(BaseModel):
    """What embedding changed: counts per column, no values."""

    key_id: str
    strength: float
    grid: int
    categorical: bool
    rows: int
    moved: dict[str, int] = Field(default_factory=dict)


def _capped(groups: np.ndarray, cap: int | np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A mask keeping at most ``cap`` randomly chosen members of each group (cap per element if an array)."""
    if len(groups) == 0:
        return np.zeros(0, dtype=bool)
    order = np.lexsort((rng.random(len(groups)), groups))
    g = groups[order]
    starts = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
    rank = np.arange(len(g)) - np.repeat(starts, np.diff(np.r_[starts, len(g)]))
    caps = cap[order] if isinstance(cap, np.ndarray) else cap
    keep = np.zeros(len(groups), dtype=bool)
    keep[order] = rank < caps
    return keep


def _embed_numeric(s: pd.Series, g: _NumericGrid, cap: int, rng: np.random.Generator) -> tuple[pd.Series, int]:
    x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    ok = np.isfinite(x)
    idx = np.flatnonzero(ok)
    c = g.cells(x[idx])
    j, side, complete = g.locate(c)
    red = complete & (side != g.green_side[j])
    cand = idx[red]
    if cap <= 0 or len(cand) == 0:
        return s, 0
    keep = _capped(j[red], cap, rng)
    cand, c_from, side_from = cand[keep], c[red][keep], side[red][keep]
    target = c_from + 1 - 2 * side_from
    new = np.clip(x[cand] + (target - c_from) * g.width, g.lo, g.hi)
    if g.integer:
        new = np.round(new)
    landed = (g.cells(new) == target) & (g.bins(new) == g.bins(x[cand]))  # same public bin
    cand, new = cand[landed], new[landed]
    out = x.copy()
    out[cand] = new
    if pd.api.types.is_integer_dtype(s.dtype):
        res = pd.Series(out, index=s.index).round().astype(s.dtype)
    else:
        res = pd.Series(out, index=s.index, dtype=s.dtype if pd.api.types.is_float_dtype(s.dtype) else "float64")
    return res, len(cand)


def _embed_categorical(s: pd.Series, g: _CategoricalGrid, budget: int, rng: np.random.Generator) -> tuple[pd.Series, int]:
    """Swap some red categories to their green partner: per pair at most half its red values, ≤ budget in all."""
    if budget <= 0 or g.n_paired == 0:
        return s, 0
    pos = g.positions(s)
    idx = np.flatnonzero(pos >= 0)
    j, side = pos[idx] // 2, pos[idx] % 2
    red = side != g.green_side[j]
    ridx, rj = idx[red], j[red]
    if len(ridx) == 0:
        return s, 0
    # pairs with fewer red values first, so the budget reaches as many pairs as it can
    counts = np.bincount(rj, minlength=len(g.green_side))
    order = np.argsort(counts + rng.random(len(counts)), kind="stable")
    allowed = np.zeros_like(counts)
    left = budget
    for p in order:
        allowed[p] = min(counts[p] // 2, left)  # never empty a category
        left -= allowed[p]
        if left <= 0:
            break
    chosen = ridx[_capped(rj, allowed[rj], rng)]
    if len(chosen) == 0:
        return s, 0
    out = s.astype("string")
    partner = np.asarray(g.order, dtype=object)[pos[chosen] ^ 1]
    out.iloc[chosen] = partner
    return out, len(chosen)


def embed_statistical_with_report(
    df: pd.DataFrame,
    schema: TableSchema,
    key: WatermarkKey,
    *,
    strength: float = DEFAULT_STRENGTH,
    grid: int = DEFAULT_GRID,
    categorical: bool = False,
    include_target: bool = False,
    random_state: int | np.random.Generator | None = None,
) -> tuple[pd.DataFrame, EmbedReport]:
    """Embed the statistical watermark; return the marked copy and what moved (counts only)."""
    if not 0 <= strength <= 0.1:
        raise ConfigError(f"watermark strength must be between 0 and 0.1 (got {strength:g})")
    if grid < 2:
        raise ConfigError(f"watermark grid must be at least 2 cells (got {grid})")
    rng = random_state if isinstance(random_state, np.random.Generator) else np.random.default_rng(random_state)
    out = df.copy()
    rep = EmbedReport(key_id=key.key_id, strength=strength, grid=grid, categorical=categorical, rows=len(df))
    for col in _marked_columns(schema, df.columns, categorical=categorical, include_target=include_target):
        n = int(df[col.name].notna().sum())
        cap = int(math.floor(strength * n))
        if col.kind == ColumnKind.numeric:
            out[col.name], moved = _embed_numeric(df[col.name], _numeric_grid(key, col, grid), cap, rng)
        else:
            out[col.name], moved = _embed_categorical(df[col.name], _categorical_grid(key, col), cap, rng)
        rep.moved[col.name] = moved
    return out, rep


def embed_statistical(
    df: pd.DataFrame,
    schema: TableSchema,
    key: WatermarkKey,
    *,
    strength: float = DEFAULT_STRENGTH,
    grid: int = DEFAULT_GRID,
    categorical: bool = False,
    include_target: bool = False,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """A copy of ``df`` carrying the statistical watermark of ``key`` (KS/TVD shift ≤ ``strength`` per column)."""
    return embed_statistical_with_report(
        df, schema, key, strength=strength, grid=grid, categorical=categorical,
        include_target=include_target, random_state=random_state,
    )[0]
