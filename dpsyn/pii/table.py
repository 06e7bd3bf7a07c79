"""Scrubbing a table: plan each structured column, apply its operator column-wise, scrub the text.

:func:`scrub_table` classifies every structured column (header hint and a bounded sample,
:mod:`dpsyn.pii.structured`) and applies its operator column-wise (drop, redact, replace, keyed
hash, pseudonym); a column declared ``pii: none`` that looks like PII stops the run. Every
free-text column is scrubbed cell by cell (:mod:`dpsyn.pii.text`) with the same-row deny-list
(:mod:`dpsyn.pii.deny`). Reports and messages hold entity types, column names and counts only.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dpsyn.errors import PIIResidualError, SchemaError, UnknownComponentError
from dpsyn.pii.config import PII_CLASS_ENTITY, ScrubConfig
from dpsyn.pii.deny import DENY_LIST_CLASSES, GENERIC_DENY_ENTITY, is_missing, row_terms
from dpsyn.pii.engine import PIIEngine, build_engine
from dpsyn.pii.operators import get_operator
from dpsyn.pii.report import ScrubReport
from dpsyn.pii.structured import ColumnClass, apply_operator, classify_sample, column_tokens, header_hint, sample_values
from dpsyn.pii.text import bind_operators, prepare, residual_error, run_texts
from dpsyn.schema import Column, ColumnKind, PIIClass, TableSchema, Tier

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["scrub_table"]

logger = logging.getLogger(__name__)

# Classes that directly identify someone: kept below tier L1 only with a warning.
_DIRECT_CLASSES = DENY_LIST_CLASSES | {PIIClass.ip_address, PIIClass.date_of_birth}


@dataclass(frozen=True)
class _Plan:
    """What happens to one structured column."""

    entity: str | None  # None: nothing says the column holds PII
    operator: str | None  # None = kept as is
    source: str  # "column_operators", "operators", "default" (drop), "kept"


def _check_inputs(df: pd.DataFrame, schema: TableSchema, config: ScrubConfig) -> None:
    names = set(schema.column_names)
    for field in ("column_operators", "allow_columns"):
        bad = sorted({c for c in getattr(config, field) if c not in names})
        if bad:
            raise UnknownComponentError(
                f"unknown column(s) {', '.join(bad)} in PII config '{field}'; columns of schema "
                f"'{schema.name}': {', '.join(schema.column_names)}"
            )
    undeclared = [str(c) for c in df.columns if c not in names]
    if undeclared:
        raise SchemaError(
            f"column(s) not declared in schema '{schema.name}': {', '.join(undeclared)} "
            "(undeclared columns could hold PII; declare them or remove them before scrubbing)"
        )


def _classify(df: pd.DataFrame, cols: list[Column], *, engine: PIIEngine, config: ScrubConfig) -> dict[str, ColumnClass]:
    """Header hint and sampled entity of every structured column (one analyzer call per column)."""
    out: dict[str, ColumnClass] = {}
    for c in cols:
        hint = header_hint(c.name)
        values = sample_values(df[c.name], config.sample_size)
        # NER only where it can change the outcome: a categorical column declared pii: none (names
        # there stop the run). Identifier and declared PII columns are handled by their declaration.
        string_like = c.kind == ColumnKind.categorical and c.pii == PIIClass.none
        if c.kind == ColumnKind.datetime:
            # dates cannot be told apart by their values: a birth-date header is the evidence
            detected, frac = ("DATE_OF_BIRTH", 1.0) if hint == "DATE_OF_BIRTH" and values else (None, 0.0)
        else:
            detected, frac = classify_sample(values, engine=engine, config=config, context=column_tokens(c.name),
                                             use_ner=string_like and engine.mode == "ner")  # fmt: skip
        out[c.name] = ColumnClass(hint=hint, detected=detected, fraction=frac, sampled=len(values))
    return out


def _plan(c: Column, cls: ColumnClass, config: ScrubConfig) -> _Plan:
    if c.pii != PIIClass.none:
        entity = PII_CLASS_ENTITY[c.pii]
    elif c.kind == ColumnKind.identifier:
        entity = cls.detected or (cls.hint if cls.hint not in (None, "IDENTIFIER") else None) or "IDENTIFIER"
    else:  # not declared PII: an entity only if the sample or the header says so
        entity = cls.detected or (cls.hint if cls.hint != "IDENTIFIER" else None)
    if c.name in config.column_operators:
        return _Plan(entity or GENERIC_DENY_ENTITY, config.column_operators[c.name], "column_operators")
    declared_pii = c.kind == ColumnKind.identifier or c.pii != PIIClass.none
    if declared_pii and entity in config.operators:
        return _Plan(entity, config.operators[entity], "operators")
    if c.kind == ColumnKind.identifier or (c.pii != PIIClass.none and c.tier == Tier.L1):
        return _Plan(entity, "drop", "default")
    return _Plan(entity, None, "kept")


def _undeclared_pii(c: Column, cls: ColumnClass, config: ScrubConfig) -> str | None:
    """Why a column declared ``pii: none`` looks like PII, or ``None``."""
    if c.pii != PIIClass.none or c.kind == ColumnKind.identifier or c.name in config.allow_columns:
        return None
    if c.name in config.column_operators or cls.detected is None:
        return None
    threshold = config.detect_fraction / 2 if cls.hint == cls.detected else config.detect_fraction
    if cls.fraction > threshold or (cls.fraction >= 1.0 and cls.sampled):
        return f"column '{c.name}': {round(100 * cls.fraction)}% of {cls.sampled} sampled values look like {cls.detected}"
    return None


def _plan_columns(df, struct_cols, *, engine, config) -> tuple[dict[str, ColumnClass], dict[str, _Plan]]:
    """Classify and plan every structured column; fail closed on undeclared PII and missing prerequisites."""
    classes = _classify(df, struct_cols, engine=engine, config=config)
    problems = [p for c in struct_cols if (p := _undeclared_pii(c, classes[c.name], config))]
    if problems:
        raise PIIResidualError(
            "PII check failed: column(s) declared pii: none look like PII (" + "; ".join(problems) + "); declare "
            "their PII class in the schema, give them a column operator, or list them in allow_columns"
        )
    plans = {c.name: _plan(c, classes[c.name], config) for c in struct_cols}
    for c in struct_cols:  # check prerequisites (e.g. the HMAC key) before any work
        if plans[c.name].operator is not None:
            get_operator(plans[c.name].operator).bind(plans[c.name].entity)
    return classes, plans


def _apply_structured(df, struct_cols, plans, counts) -> tuple[pd.DataFrame, list[str], list[str]]:
    """A copy of ``df`` with each planned operator applied to its whole column."""
    new_cols: dict[str, pd.Series] = {}
    dropped: list[str] = []
    transformed: list[str] = []
    for c in struct_cols:
        plan = plans[c.name]
        if plan.operator is None:
            continue
        n = int(df[c.name].notna().sum())
        if n:
            counts[c.name] = {plan.entity: n}
        res = apply_operator(df[c.name], operator=plan.operator, entity=plan.entity)
        if res is None:
            dropped.append(c.name)
        else:
            new_cols[c.name] = res
            transformed.append(c.name)
    out = df.drop(columns=dropped).copy(deep=True)
    for name, series in new_cols.items():
        out[name] = series
    return out, dropped, transformed


def _scrub_text_columns(df, out, cols, text_cols, counts, *, engine, config) -> None:
    """Scrub every free-text column of ``df`` into ``out``, with the same-row deny-list; raise on residuals."""
    import pandas as pd

    deny_cols = [c for c in cols if c.pii in DENY_LIST_CLASSES or c.kind == ColumnKind.identifier]
    row_items: list[list[tuple[str, str]]] = [[] for _ in range(len(df))]
    for c in deny_cols:  # from the input frame, before identifiers are dropped
        entity = PII_CLASS_ENTITY[c.pii]
        for i, v in enumerate(df[c.name].tolist()):
            if not is_missing(v):
                row_items[i].append((entity, str(v)))
    deny_rows = [row_terms(items) for items in row_items]
    entities = engine.analyzable(config.text_entities())
    ops = bind_operators(config, set(config.text_entities()))
    left: dict[str, Counter] = {}
    for c in text_cols:
        idx, vals = prepare(df[c.name].tolist())
        new, col_counts, rest = run_texts(vals, [deny_rows[i] for i in idx], engine=engine, config=config,
                                          entities=entities, ops=ops)  # fmt: skip
        if rest:
            left[c.name] = rest
        values: list[Any] = [None] * len(df)
        for i, v in zip(idx, new, strict=True):
            values[i] = v
        try:
            out[c.name] = pd.Series(values, index=df.index, dtype=df[c.name].dtype)
        except (TypeError, ValueError):
            out[c.name] = pd.Series(values, index=df.index, dtype=object)
        if col_counts:
            counts[c.name] = dict(sorted(col_counts.items()))
    if left:
        raise residual_error(left)


def _warn_kept(kept_pii: list[Column]) -> None:
    for c in kept_pii:
        if c.pii in _DIRECT_CLASSES:
            logger.warning("column '%s' has PII class %s but tier %s: kept as is (only L1 PII columns are dropped)",
                           c.name, c.pii.value, c.tier.value)  # fmt: skip


def scrub_table(
    df: pd.DataFrame,
    schema: TableSchema,
    config: ScrubConfig | None = None,
    *,
    engine: PIIEngine | None = None,
) -> tuple[pd.DataFrame, ScrubReport]:
    """Scrub a table column-wise and its free text cell-wise; returns a new frame and a report.

    Structured (non-text) columns are classified from their header and a sample of their
    values (see :mod:`dpsyn.pii.structured`), then: a column in ``config.column_operators`` gets
    that operator; an identifier or PII column whose entity is in ``config.operators`` gets that
    operator; other ``identifier`` columns and PII columns at tier L1 are dropped (counted as
    their class's entity, one per non-missing cell); PII columns below L1 are kept (a directly
    identifying class with a warning; listed in ``kept_pii_columns``); a column declared ``pii:
    none`` whose sample looks like PII stops the run with :class:`PIIResidualError` (fail
    closed) unless it is in ``config.allow_columns``. ``text`` columns are scrubbed cell by cell
    (batched; worker processes for large tables), plus the same-row deny-list built from the
    row's person/email/phone/ssn/national_id/medical_record/credit_card/address and identifier
    columns, then re-scanned. A table may consist of text columns only.

    The input frame is never modified. Raises :class:`SchemaError` for a frame column the
    schema does not declare, :class:`UnknownComponentError` for unknown entity, operator or
    column names, and :class:`PIIResidualError` if PII is left.
    """
    config = config or ScrubConfig()
    config.validate_names()
    _check_inputs(df, schema, config)
    engine = engine or build_engine(config)
    cols = [schema.column(str(c)) for c in df.columns]
    text_cols = [c for c in cols if c.kind == ColumnKind.text]
    struct_cols = [c for c in cols if c.kind != ColumnKind.text]
    classes, plans = _plan_columns(df, struct_cols, engine=engine, config=config)
    kept_pii = [c for c in struct_cols if c.pii != PIIClass.none and plans[c.name].operator is None]
    _warn_kept(kept_pii)
    counts: dict[str, dict[str, int]] = {}
    out, dropped, transformed = _apply_structured(df, struct_cols, plans, counts)
    if text_cols:
        _scrub_text_columns(df, out, cols, text_cols, counts, engine=engine, config=config)
    report = ScrubReport(
        mode=engine.mode, model=engine.model_name, rows=len(df), dropped_columns=dropped,
        transformed_columns=transformed, scrubbed_columns=[c.name for c in text_cols],
        kept_pii_columns=[c.name for c in kept_pii], counts=counts,
        columns={c.name: {**classes[c.name].to_dict(), "entity": plans[c.name].entity,
                          "operator": plans[c.name].operator} for c in struct_cols},
    )  # fmt: skip
    logger.info(
        "PII scrub (%s mode): %d rows, dropped %d column(s), transformed %d, scrubbed %d text column(s), "
        "%d replacement(s) in text", engine.mode, report.rows, len(dropped), len(transformed), len(text_cols),
        sum(sum(v.values()) for k, v in counts.items() if k in report.scrubbed_columns),
    )  # fmt: skip
    return out, report
