"""Sensitivity masking of a scrubbed table: tier rules, schema generalizations, optional k-anonymity.

1. Identifier columns, and L1 columns without a ``generalize`` hierarchy, are dropped.
2. A column with ``generalize`` is mapped through that public hierarchy; the
   result must conform to the column's schema (kind, domain, nullability),
   else :class:`~dpsyn.errors.SchemaError` (names and counts only).
3. With ``MaskConfig.k`` set, the kept quasi-identifier columns are made
   k-anonymous (:mod:`dpsyn.masking.kanon`). Its generalizations may leave a
   column outside its schema (a numeric age now holding bands): the frame is
   still returned, for export, and the column is listed in
   ``MaskReport.nonconforming_columns``; a caller that feeds the synthesizer
   calls :meth:`MaskReport.raise_if_nonconforming`.
"""

from __future__ import annotations

import logging

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from dpsyn.errors import ConfigError, SchemaError
from dpsyn.io import domain_problems
from dpsyn.masking.hierarchies import get_hierarchy
from dpsyn.masking.kanon import KAnonymityReport, k_anonymize
from dpsyn.schema import Column, ColumnKind, TableSchema, Tier

__all__ = ["DEFAULT_K", "MaskConfig", "MaskReport", "mask_table"]

logger = logging.getLogger(__name__)

DEFAULT_K = 5  # the k used when k-anonymity is switched on with ``k: true``


class MaskConfig(BaseModel):
    """Masking settings. The default (``k=None``) applies the tier rules and schema generalizations only.

    ``k`` switches k-anonymity on over the schema's ``quasi_identifier``
    columns (``k: true`` means :data:`DEFAULT_K` = 5). ``ladders`` gives, per
    quasi-identifier, hierarchy names from least to most general, e.g.
    ``{"age": ["age_band_5", "age_band_10", "suppress"]}``; a quasi-identifier
    without a ladder is never generalized, only its rows suppressed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    k: int | None = Field(default=None, ge=2, description="k-anonymity over quasi-identifiers; None = off.")
    max_suppression: float = Field(
        default=0.05, ge=0.0, le=1.0, description="Largest fraction of rows k-anonymity may suppress."
    )
    ladders: dict[str, list[str]] = Field(
        default_factory=dict, description="Per quasi-identifier: hierarchy names, least general first."
    )

    @field_validator("k", mode="before")
    @classmethod
    def _k_switch(cls, v):
        if v is True:
            return DEFAULT_K
        if v is False:
            return None
        return v

    @field_validator("ladders")
    @classmethod
    def _known_hierarchies(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        for column, specs in v.items():
            for spec in specs:
                try:
                    get_hierarchy(spec)
                except (ConfigError, KeyError) as e:  # UnknownComponentError is a KeyError
                    raise ValueError(f"ladder of '{column}': {e}") from None
        return v


class MaskReport(BaseModel):
    """What masking did, in column names and counts only."""

    dropped_columns: list[str] = Field(default_factory=list)
    generalized_columns: dict[str, str] = Field(default_factory=dict)  # column -> schema hierarchy
    kept_columns: list[str] = Field(default_factory=list)
    # column -> non-missing values its schema hierarchy could not read (now missing); only columns with some
    unreadable_values: dict[str, int] = Field(default_factory=dict)
    k_anonymity: KAnonymityReport | None = None
    # column -> why it no longer fits its schema after k-anonymity (names and counts only)
    nonconforming_columns: dict[str, str] = Field(default_factory=dict)

    @property
    def conforms(self) -> bool:
        """Whether every kept column still fits its schema (always true without k-anonymity)."""
        return not self.nonconforming_columns

    def raise_if_nonconforming(self, schema_name: str = "") -> None:
        """Raise :class:`SchemaError` if k-anonymity left a column outside its schema (before synthesis)."""
        if self.nonconforming_columns:
            where = f" '{schema_name}'" if schema_name else ""
            raise SchemaError(
                f"after k-anonymity the table no longer conforms to schema{where}: "
                f"{'; '.join(self.nonconforming_columns.values())}; declare those columns with the generalized "
                "values as their public domain (e.g. categorical with the age bands), or change their ladders"
            )


def _conformity_problems(col: Column, s: pd.Series) -> list[str]:
    """Why ``s`` does not fit ``col`` (kind, domain, nullability): column names only, never values or counts."""
    present = s.notna()
    if col.kind == ColumnKind.categorical:
        return domain_problems(col, s)
    problems: list[str] = []
    if col.kind == ColumnKind.numeric and not (
        pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
    ):
        problems.append(f"column '{col.name}': non-numeric value(s) but the column is numeric")
    elif col.kind == ColumnKind.datetime and not pd.api.types.is_datetime64_any_dtype(s):
        problems.append(f"column '{col.name}': value(s) that are not dates but the column is datetime")
    if col.kind in (ColumnKind.numeric, ColumnKind.datetime) and not col.nullable:
        if not bool(present.all()):
            problems.append(f"column '{col.name}': missing value(s) but the column is not nullable")
    return problems


def mask_table(
    df: pd.DataFrame, schema: TableSchema, config: MaskConfig | None = None
) -> tuple[pd.DataFrame, MaskReport]:
    """Apply tier rules, generalizations and (if configured) k-anonymity; return a new frame and a report.

    The input is not modified. Without k-anonymity the index is kept; with it,
    suppressed rows are removed and the remaining rows keep their index labels.
    """
    config = config or MaskConfig()
    report = MaskReport()
    out: dict[str, pd.Series] = {}
    problems: list[str] = []
    for col in schema.columns:
        if col.name not in df.columns:
            continue  # already dropped by the scrubber
        if col.kind == ColumnKind.identifier or (col.tier == Tier.L1 and col.generalize is None):
            report.dropped_columns.append(col.name)
            continue
        s = df[col.name]
        if col.generalize is not None:
            g = get_hierarchy(col.generalize)(s)
            unreadable = int((s.notna() & g.isna()).sum())
            if unreadable:
                report.unreadable_values[col.name] = unreadable
            report.generalized_columns[col.name] = col.generalize
            problems.extend(_conformity_problems(col, g))
            s = g
        out[col.name] = s
        report.kept_columns.append(col.name)
    if problems:
        raise SchemaError(f"after generalization the table does not conform to schema '{schema.name}': {'; '.join(problems)}")
    masked = pd.DataFrame(out, index=df.index)

    if config.k is not None:
        qis = [c.name for c in schema.columns if c.quasi_identifier and c.name in masked.columns]
        if not qis:
            raise ConfigError(
                f"k-anonymity is on (k={config.k}) but schema '{schema.name}' marks no kept column "
                "as quasi_identifier: true"
            )
        stray = sorted(set(config.ladders) - set(qis))
        if stray:
            raise ConfigError(
                f"generalization ladders given for column(s) that are not kept quasi-identifiers of schema "
                f"'{schema.name}': {', '.join(stray)}; quasi-identifiers: {', '.join(qis)}"
            )
        masked, report.k_anonymity = k_anonymize(
            masked, quasi_identifiers=qis, k=config.k, max_suppression=config.max_suppression,
            ladders=config.ladders, source=df,
        )
        for name in report.k_anonymity.generalized:
            issues = _conformity_problems(schema.column(name), masked[name])
            if issues:
                report.nonconforming_columns[name] = "; ".join(issues)
        if report.nonconforming_columns:
            logger.warning(
                "masking: %d column(s) no longer conform to schema '%s' after k-anonymity: %s",
                len(report.nonconforming_columns), schema.name, ", ".join(report.nonconforming_columns),
            )
    logger.info(
        "masking: kept %d columns, dropped %d, generalized %d",
        len(report.kept_columns), len(report.dropped_columns), len(report.generalized_columns),
    )
    return masked, report
