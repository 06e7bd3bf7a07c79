"""Sensitivity masking by tier: generalize what the schema says, drop what it must not keep.

* L1 columns (very high: IDs, biometrics, exact location) are dropped, unless
  the schema gives them a public generalization hierarchy, which is applied.
* Any column with ``generalize`` is mapped through that hierarchy (e.g. an
  ICD-9 code to its 3-character category) before its domain is checked.
* Identifier columns never reach the synthesizer.

Hierarchies are a name-keyed registry of pure, data-independent functions:
they read no statistic of the private rows, so masking costs no privacy
budget. The report holds column names and counts, never values.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

import pandas as pd
from pydantic import BaseModel, Field

from dpsyn.errors import SchemaError, UnknownComponentError
from dpsyn.io import domain_problems
from dpsyn.schema import ColumnKind, TableSchema, Tier

__all__ = ["MaskReport", "list_hierarchies", "mask_table", "register_hierarchy"]

logger = logging.getLogger(__name__)

Hierarchy = Callable[[pd.Series], pd.Series]
_HIERARCHIES: dict[str, Hierarchy] = {}


def register_hierarchy(name: str, fn: Hierarchy, *, force: bool = False) -> None:
    if name in _HIERARCHIES and not force:
        raise ValueError(f"hierarchy '{name}' is already registered (pass force=True to replace it)")
    _HIERARCHIES[name] = fn


def list_hierarchies() -> list[str]:
    return sorted(_HIERARCHIES)


def get_hierarchy(name: str) -> Hierarchy:
    if name not in _HIERARCHIES:
        raise UnknownComponentError(
            f"unknown generalization hierarchy '{name}'; choose one of: {', '.join(list_hierarchies())}"
        )
    return _HIERARCHIES[name]


_ICD9 = re.compile(r"^\s*([VvEe]?\d+)")


def icd9_category(s: pd.Series) -> pd.Series:
    """ICD-9-CM code to its 3-character category: "250.83" -> "250", "V57.1" -> "V57", "E888" -> "E888"."""
    return s.astype("string").str.extract(_ICD9, expand=False).str.upper()


def year(s: pd.Series) -> pd.Series:
    return pd.to_datetime(s, errors="coerce").dt.to_period("Y").dt.to_timestamp()


def month(s: pd.Series) -> pd.Series:
    return pd.to_datetime(s, errors="coerce").dt.to_period("M").dt.to_timestamp()


def zip3(s: pd.Series) -> pd.Series:
    """US ZIP code truncated to its first three digits (HIPAA Safe Harbor style)."""
    return s.astype("string").str.extract(r"^\s*(\d{3})", expand=False)


for _name, _fn in {"icd9_category": icd9_category, "year": year, "month": month, "zip3": zip3}.items():
    register_hierarchy(_name, _fn)


class MaskReport(BaseModel):
    dropped_columns: list[str] = Field(default_factory=list)
    generalized_columns: dict[str, str] = Field(default_factory=dict)  # column -> hierarchy
    kept_columns: list[str] = Field(default_factory=list)


def mask_table(df: pd.DataFrame, schema: TableSchema) -> tuple[pd.DataFrame, MaskReport]:
    """Apply tier rules and generalizations; return a new frame and a report (no values)."""
    report = MaskReport()
    out = {}
    problems: list[str] = []
    for col in schema.columns:
        if col.name not in df.columns:
            continue  # already dropped by the scrubber
        if col.kind == ColumnKind.identifier or (col.tier == Tier.L1 and col.generalize is None):
            report.dropped_columns.append(col.name)
            continue
        s = df[col.name]
        if col.generalize is not None:
            s = get_hierarchy(col.generalize)(s)
            report.generalized_columns[col.name] = col.generalize
            if col.kind == ColumnKind.categorical:
                problems.extend(domain_problems(col, s))
        out[col.name] = s
        report.kept_columns.append(col.name)
    if problems:
        raise SchemaError(f"after generalization the table does not conform to schema '{schema.name}': {'; '.join(problems)}")
    logger.info(
        "masking: kept %d columns, dropped %d, generalized %d",
        len(report.kept_columns), len(report.dropped_columns), len(report.generalized_columns),
    )
    return pd.DataFrame(out, index=df.index), report
