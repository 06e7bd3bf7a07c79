"""k-anonymity over quasi-identifiers by global generalization, then suppression (Datafly).

Sweeney (2002), "Achieving k-anonymity privacy protection using generalization
and suppression", Int. J. Uncertainty, Fuzziness and Knowledge-Based Systems
10(5), section 4 (Datafly):

1. **Measure.** Group the rows by their quasi-identifier (QI) values; a row is
   *at risk* if its equivalence class holds fewer than k rows.
2. **Stop?** If at most ``max_suppression`` of the rows are at risk, go to 4.
3. **Generalize.** Take the QI with the most distinct values that can still
   climb its ladder, replace the whole column by the next level of its ladder
   (global recoding), and go back to 1. If no QI can climb, stop with an error.
4. **Suppress.** Drop every row that is still at risk.

Missing is a value like any other when grouping. Ladder levels are hierarchy
names (:mod:`dpsyn.masking.hierarchies`), each applied to the column's
*source* values (before any schema generalization), least general first.

**Privacy.** Unlike the hierarchies, which look at one value at a time, step 3
(which column, how far) and step 4 (which rows) depend on the other rows. With
k-anonymity on, the DP guarantee of a synthesizer fitted on the result holds
with respect to the masked table, and with respect to the raw table only through
group privacy: one person can change whether up to k-1 others are suppressed.
See docs/masking.md.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from dpsyn.errors import ConfigError
from dpsyn.masking.hierarchies import get_hierarchy

__all__ = ["KAnonymityReport", "equivalence_class_sizes", "k_anonymize"]

logger = logging.getLogger(__name__)


class KAnonymityReport(BaseModel):
    """What k-anonymity did, in names and counts only."""

    k: int
    max_suppression: float
    quasi_identifiers: list[str] = Field(default_factory=list)
    levels: dict[str, int] = Field(default_factory=dict)  # QI -> steps climbed on its ladder (0 = as masked)
    generalized: dict[str, str] = Field(default_factory=dict)  # QI -> hierarchy now applied (climbed QIs only)
    rows_in: int = 0
    rows_suppressed: int = 0
    equivalence_classes: int = 0  # after suppression
    k_achieved: int | None = None  # smallest class after suppression; None when no row is left


def equivalence_class_sizes(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    """For each row, the number of rows sharing its values in ``columns`` (missing counts as a value)."""
    n = len(frame)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if not columns:
        return np.full(n, n, dtype=np.int64)
    codes = np.column_stack([pd.factorize(frame[c], use_na_sentinel=False)[0] for c in columns])
    _, inverse, counts = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    return counts[inverse.reshape(-1)]


def k_anonymize(
    frame: pd.DataFrame,
    *,
    quasi_identifiers: Sequence[str],
    k: int,
    max_suppression: float = 0.05,
    ladders: Mapping[str, Sequence[str]] | None = None,
    source: pd.DataFrame | Mapping[str, pd.Series] | None = None,
) -> tuple[pd.DataFrame, KAnonymityReport]:
    """Make ``frame`` k-anonymous over ``quasi_identifiers``; return a new frame and a value-free report.

    ``ladders`` maps a QI to hierarchy names, least general first; a QI
    without a ladder is never generalized. ``source`` holds the values the
    ladder levels read (default: ``frame``). Raises :class:`ConfigError`
    if, with every ladder climbed to its top, more than ``max_suppression``
    of the rows would still have to be suppressed.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ConfigError("k-anonymity needs k to be a whole number of at least 2")
    if not 0 <= max_suppression <= 1:
        raise ConfigError("max_suppression must be a fraction between 0 and 1")
    qis = list(quasi_identifiers)
    missing = [q for q in qis if q not in frame.columns]
    if missing:
        raise ConfigError(f"quasi-identifier column(s) not in the table: {', '.join(missing)}")
    ladders = {q: list(ladders.get(q, [])) for q in qis} if ladders else {q: [] for q in qis}
    source = frame if source is None else source
    out = frame.copy()
    levels = dict.fromkeys(qis, 0)
    n = len(out)

    while True:
        sizes = equivalence_class_sizes(out, qis)  # 1. measure
        at_risk = int((sizes < k).sum())
        if at_risk <= max_suppression * n:  # 2. stop?
            break
        climbable = [q for q in qis if levels[q] < len(ladders[q])]
        distinct = {q: int(out[q].nunique(dropna=False)) for q in climbable}
        if not climbable:
            raise ConfigError(
                f"k-anonymity (k={k}): with every quasi-identifier generalized as far as its ladder goes, "
                f"{at_risk} of {n} rows ({at_risk / n:.1%}) are in classes smaller than k, above "
                f"max_suppression {max_suppression:.1%}; add or extend ladders (e.g. age: [age_band_5, "
                f"age_band_10, suppress]) for: {', '.join(qis) or 'no quasi-identifiers'}, or raise max_suppression"
            )
        q = max(climbable, key=lambda c: distinct[c])  # 3. generalize (first in schema order on ties)
        spec = ladders[q][levels[q]]
        out[q] = get_hierarchy(spec)(source[q]).set_axis(out.index)
        levels[q] += 1
        logger.info("k-anonymity: generalized '%s' to level %d (%s)", q, levels[q], spec)

    keep = sizes >= k  # 4. suppress
    out = out[keep]
    kept_sizes = sizes[keep]
    classes = len(out[qis].drop_duplicates()) if qis else int(len(out) > 0)
    report = KAnonymityReport(
        k=k,
        max_suppression=max_suppression,
        quasi_identifiers=qis,
        levels=levels,
        generalized={q: ladders[q][levels[q] - 1] for q in qis if levels[q] > 0},
        rows_in=n,
        rows_suppressed=int(n - len(out)),
        equivalence_classes=classes,
        k_achieved=int(kept_sizes.min()) if len(kept_sizes) else None,
    )
    logger.info(
        "k-anonymity (k=%d): %d quasi-identifier(s) generalized, %d of %d rows suppressed",
        k, len(report.generalized), report.rows_suppressed, n,
    )
    return out, report
