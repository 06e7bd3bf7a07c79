"""Hard rules held by construction: synthetic rows that break one are redrawn from the rows that break none.

A hard rule (``hard: true``) states a combination that cannot exist (male ⇒ not pregnant, a documented range).
A generator that models columns jointly but approximately can still emit such rows; replacing each of them by a
compliant synthetic row, drawn uniformly at random, is post-processing of the DP output: it reads no real row
and costs no ε. The gate then checks the same rules on the published table (tolerance 0 by default), so a
synthesizer that emits nothing but impossible rows still fails, by name.

The masks here restate the rule language's meaning in pandas (missing values violate nothing, as in Great
Expectations); ``tests/unit/validation/test_repair.py`` checks them against the Great Expectations counts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpsyn.schema import TableSchema
from dpsyn.validation.rules import Rule, RuleSet, _values, expectation_mask

__all__ = ["broken_rows", "enforce_hard_rules", "violations"]


def _in(s: pd.Series, values: list) -> pd.Series:
    return s.astype("string").isin([str(v) for v in values])


def _mask(rule: Rule, df: pd.DataFrame, schema: TableSchema) -> pd.Series:
    """Rows that break ``rule`` (missing values break nothing)."""
    if rule.range:
        x = pd.to_numeric(df[rule.range.column], errors="coerce")
        bad = pd.Series(False, index=df.index)
        if rule.range.min is not None:
            bad |= x < rule.range.min
        if rule.range.max is not None:
            bad |= x > rule.range.max
        return bad.fillna(False)
    if rule.allowed:
        s = df[rule.allowed.column]
        return (~_in(s, rule.allowed.in_) & s.notna()).fillna(False)
    if rule.expect:
        return expectation_mask(df, rule, schema)
    if rule.order:
        o = rule.order
        a, b = pd.to_numeric(df[o.left], errors="coerce"), pd.to_numeric(df[o.right], errors="coerce")
        ok = {">=": a >= b, ">": a > b, "<=": a <= b, "<": a < b}[o.op]
        return (~ok & a.notna() & b.notna()).fillna(False)
    (then_col,) = rule.then.names
    mode, allowed = _values(rule.then, then_col, schema)
    cond = pd.Series(False, index=df.index)
    for c in rule.if_.names:
        _, codes = _values(rule.if_, c, schema)
        cond |= _in(df[c], codes).fillna(False)
    t = df[then_col]
    hit = _in(t, allowed).fillna(False)
    broken = ~hit if mode == "in" else hit
    return (cond & broken & t.notna()).fillna(False)


def violations(df: pd.DataFrame, rules: RuleSet, schema: TableSchema) -> dict[str, pd.Series]:
    """Per hard rule, the boolean mask of the rows that break it."""
    return {f"rule:{r.name}": _mask(r, df, schema) for r in rules.rules if r.hard}


def broken_rows(df: pd.DataFrame, rules: RuleSet | None, schema: TableSchema) -> np.ndarray | None:
    """The rows of ``df`` that break any hard rule (a boolean array); None when there is no hard rule."""
    if rules is None or not any(r.hard for r in rules.rules):
        return None
    bad = np.zeros(len(df), dtype=bool)
    for m in violations(df, rules, schema).values():
        bad |= m.to_numpy(dtype=bool)
    return bad


def enforce_hard_rules(df: pd.DataFrame, rules: RuleSet | None, schema: TableSchema,
                       rng: np.random.Generator) -> tuple[pd.DataFrame, int]:
    """``df`` with every row that breaks a hard rule replaced by a compliant row of ``df`` drawn at random, and the
    number replaced (public: a function of the synthetic table). Unchanged when no row complies."""
    bad = broken_rows(df, rules, schema)
    if bad is None:
        return df, 0
    k = int(bad.sum())
    good = np.flatnonzero(~bad)
    if k == 0 or len(good) == 0:
        return df, 0
    out = df.copy()
    picks = rng.choice(good, size=k, replace=True)
    out.iloc[np.flatnonzero(bad)] = df.iloc[picks].to_numpy()
    return out.reset_index(drop=True), k
