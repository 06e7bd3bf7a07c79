"""Scrubbing a table (and lists of texts) with Presidio, fail closed.

:func:`scrub_table` drops identifier columns and L1 PII columns, scrubs every
free-text column (Presidio analyze + anonymize, batched through spaCy's
``nlp.pipe``), replaces values of the same row's PII columns wherever they
appear in that row's text (the deny-list; in pattern mode the only way names
are caught), then re-scans the result and raises :class:`PIIResidualError` if
anything is left. Reports and messages hold entity types, column names and
counts, never a value.
"""

from __future__ import annotations

import functools
import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from dpsyn.errors import PIIResidualError, SchemaError
from dpsyn.pii.config import PII_CLASS_ENTITY, ScrubConfig
from dpsyn.pii.engine import PIIEngine, build_engine
from dpsyn.pii.operators import get_operator
from dpsyn.schema import ColumnKind, PIIClass, TableSchema, Tier

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DENY_LIST_CLASSES", "ScrubReport", "scrub_table", "scrub_texts"]

logger = logging.getLogger(__name__)

# PII classes whose values, when they occur in the same row's free text, are replaced.
DENY_LIST_CLASSES: frozenset[PIIClass] = frozenset(
    {
        PIIClass.person,
        PIIClass.email,
        PIIClass.phone,
        PIIClass.ssn,
        PIIClass.national_id,
        PIIClass.medical_record,
        PIIClass.credit_card,
        PIIClass.address,
    }
)
# Classes that directly identify someone: kept below tier L1 only with a warning.
_DIRECT_CLASSES = DENY_LIST_CLASSES | {PIIClass.ip_address, PIIClass.date_of_birth}
_DIGIT_ENTITIES = frozenset({"PHONE_NUMBER", "US_SSN", "CREDIT_CARD", "NATIONAL_ID", "MEDICAL_RECORD_NUMBER"})
GENERIC_DENY_ENTITY = "PII"  # entity of deny-list terms given as plain strings
MIN_NAME_TOKEN = 3
MIN_TERM = 2
MIN_IDENTIFIER_TERM = 4
_NAME_STOPWORDS = frozenset({"the", "and", "mrs", "miss", "von", "van", "der", "den", "del", "iii", "phd"})
# What our operators write: tags, pseudonyms, HMAC hex digests. Excluded from the re-scan.
_INSERTED = re.compile(r"\[[A-Z][A-Z0-9_]*\]|\b[A-Z][A-Z0-9_]*_[0-9a-f]{8}\b|\b[0-9a-f]{64}\b")


class ScrubReport(BaseModel):
    """What scrubbing did, in counts only (no values)."""

    model_config = ConfigDict(extra="forbid")

    mode: str
    model: str | None
    rows: int
    dropped_columns: list[str] = Field(default_factory=list)
    scrubbed_columns: list[str] = Field(default_factory=list)
    kept_pii_columns: list[str] = Field(default_factory=list)  # PII columns below tier L1, passed through
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)  # column -> entity -> count

    @property
    def total(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# -- deny-list ----------------------------------------------------------------------------


def _flex(value: str) -> str:
    """Escaped value with any whitespace run matching any whitespace run."""
    return r"\s+".join(re.escape(p) for p in value.split())


@dataclass(frozen=True)
class _Term:
    """One deny-list alternative: its regex source and a needle for a cheap pre-check."""

    entity: str
    source: str
    needle: str  # lower-cased words (or the digit string when ``digits``); "" = no pre-check
    digits: bool = False


def _needle(value: str) -> str:
    value = " ".join(value.split())
    # lower() only approximates re.IGNORECASE outside ASCII: no pre-check there (never skip a real match)
    return value.lower() if value.isascii() else ""


def _terms(entity: str, value: str) -> list[_Term]:
    """Deny-list alternatives for one value of one entity."""
    value = value.strip()
    minimum = MIN_IDENTIFIER_TERM if entity == "IDENTIFIER" else MIN_TERM
    if len(value) < minimum:
        return []
    out = [_Term(entity, _flex(value), _needle(value))]
    if entity == "PERSON":
        for tok in re.split(r"[^\w'’-]+", value):
            for part in {tok, *tok.split("-")}:
                part = part.strip("'’-")
                if len(part) >= MIN_NAME_TOKEN and part.casefold() not in _NAME_STOPWORDS:
                    out.append(_Term(entity, re.escape(part), _needle(part)))
    if entity in _DIGIT_ENTITIES or entity == "IDENTIFIER":
        digits = re.sub(r"\D", "", value)
        if len(digits) >= 7 and digits.isascii():
            forms = {digits}
            if entity == "PHONE_NUMBER" and len(digits) == 11 and digits.startswith("1"):
                forms.add(digits[1:])
            if entity == "PHONE_NUMBER" and len(digits) >= 10:
                forms.add(digits[-7:])  # the local part, written without the area code
            for d in sorted(forms):
                out.append(_Term(entity, r"(?<!\d)" + r"[\s\-.()/]{0,3}".join(d) + r"(?!\d)", d, digits=True))
    return out


def _row_terms(items: Sequence[str | tuple[str, str]] | None) -> list[_Term]:
    """The deny-list terms of one row, from plain strings or ``(entity, value)`` pairs."""
    out: list[_Term] = []
    for item in items or ():
        entity, value = (GENERIC_DENY_ENTITY, item) if isinstance(item, str) else item
        if not _is_missing(value):
            out.extend(_terms(entity, str(value)))
    return out


@functools.lru_cache(maxsize=4096)
def _compile_alternation(body: str) -> re.Pattern:
    return re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE)


def _row_patterns(terms: list[_Term], text: str) -> list[tuple[str, re.Pattern]]:
    """Compiled patterns (one per entity) of the terms that may occur in ``text``.

    A term is skipped only when its needle is certainly absent (lower-cased,
    whitespace-collapsed substring; digits-only substring for digit terms).
    """
    if not terms:
        return []
    low = " ".join(text.split()).lower() if text.isascii() else None
    digits = re.sub(r"\D", "", text) if any(t.digits for t in terms) else ""
    by_entity: dict[str, set[str]] = {}
    for t in terms:
        if t.needle and low is not None and t.needle not in (digits if t.digits else low):
            continue
        by_entity.setdefault(t.entity, set()).add(t.source)
    return [
        (entity, _compile_alternation("|".join(sorted(alts, key=lambda a: (-len(a), a)))))
        for entity, alts in sorted(by_entity.items())
    ]


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    try:
        import pandas as pd

        res = pd.isna(value)
        return bool(res) if isinstance(res, bool) or getattr(res, "ndim", 1) == 0 else False
    except (TypeError, ValueError):
        return False


# -- core --------------------------------------------------------------------------------


def _bind_operators(config: ScrubConfig, entities: set[str]) -> dict[str, Callable[[str], str]]:
    """value -> replacement per entity; checks prerequisites (e.g. the HMAC key) up front."""
    return {e: get_operator(config.operator_for(e)).bind(e) for e in sorted(entities)}


def _merge(spans: list[tuple[int, int, str, float]]) -> list[tuple[int, int, str]]:
    """Union overlapping spans (so no part of any detection survives); the longest member names the union."""
    out: list[tuple[int, int, str]] = []
    cur: list | None = None
    for start, end, entity, score in sorted(spans):
        if cur is not None and start < cur[1]:
            cur[1] = max(cur[1], end)
            cur[2].append((end - start, score, entity))
            continue
        if cur is not None:
            out.append((cur[0], cur[1], max(cur[2])[2]))
        cur = [start, end, [(end - start, score, entity)]]
    if cur is not None:
        out.append((cur[0], cur[1], max(cur[2])[2]))
    return out


def _analyze(engine: PIIEngine, texts: list[str], entities: list[str], config: ScrubConfig):
    """Analyzer results per text, batched through the NLP pipeline."""
    if not entities or not texts:
        return [[] for _ in texts]
    nlp = engine.analyzer.nlp_engine
    results = []
    for text, artifacts in nlp.process_batch(texts, language=engine.language, batch_size=config.batch_size):
        results.append(
            engine.analyzer.analyze(
                text=text,
                language=engine.language,
                entities=entities,
                score_threshold=config.score_threshold,
                nlp_artifacts=artifacts,
            )
        )
    return results


def _scrub(
    texts: list[str],
    deny: list[list[_Term]],
    *,
    engine: PIIEngine,
    config: ScrubConfig,
    entities: list[str],
    ops: dict[str, Callable[[str], str]],
) -> tuple[list[str], Counter]:
    from presidio_anonymizer.entities import OperatorConfig
    from presidio_anonymizer.entities import RecognizerResult as AnonResult

    counts: Counter = Counter()
    analyzed = _analyze(engine, texts, entities, config)
    out = []
    for text, found, row_deny in zip(texts, analyzed, deny, strict=True):
        spans = [(r.start, r.end, r.entity_type, r.score) for r in found]
        for entity, pat in _row_patterns(row_deny, text):
            spans.extend((m.start(), m.end(), entity, 1.0) for m in pat.finditer(text))
        merged = _merge(spans)
        if not merged:
            out.append(text)
            continue
        for entity in {e for _, _, e in merged} - ops.keys():
            ops[entity] = get_operator(config.operator_for(entity)).bind(entity)
        counts.update(e for _, _, e in merged)
        result = engine.anonymizer.anonymize(
            text=text,
            analyzer_results=[AnonResult(entity_type=e, start=s, end=t, score=1.0) for s, t, e in merged],
            operators={e: OperatorConfig("custom", {"lambda": ops[e]}) for e in {e for _, _, e in merged}},
        )
        out.append(result.text)
    return out, counts


def _residuals(
    texts: list[str],
    deny: list[list[_Term]],
    *,
    engine: PIIEngine,
    config: ScrubConfig,
    entities: list[str],
) -> Counter:
    """Entities still found after scrubbing (inserted tags excluded), by type."""
    left: Counter = Counter()
    for text, found, row_deny in zip(texts, _analyze(engine, texts, entities, config), deny, strict=True):
        for r in found:
            if re.search(r"\w", _INSERTED.sub(" ", text[r.start : r.end])):
                left[r.entity_type] += 1
        if row_deny:
            stripped = _INSERTED.sub(" ", text)
            for entity, pat in _row_patterns(row_deny, stripped):
                n = sum(1 for _ in pat.finditer(stripped))
                if n:
                    left[f"{entity} (deny-list)"] += n
    return left


def _residual_error(left: dict[str, Counter]) -> PIIResidualError:
    total = sum(sum(c.values()) for c in left.values())
    parts = [f"column '{col}': " + ", ".join(f"{e}={n}" for e, n in sorted(c.items())) for col, c in left.items() if c]
    return PIIResidualError(
        f"PII residual check failed: {total} detection(s) remain after scrubbing ({'; '.join(parts)}); "
        "nothing should be published from this table. Check the operators and recognizers, or mark the "
        "column(s) L1 to drop them"
    )


def _prepare(texts: Sequence[Any]) -> tuple[list[int], list[str]]:
    idx, vals = [], []
    for i, v in enumerate(texts):
        if not _is_missing(v):
            idx.append(i)
            vals.append(v if isinstance(v, str) else str(v))
    return idx, vals


def scrub_texts(
    texts: Sequence[str | None],
    *,
    engine: PIIEngine | None = None,
    config: ScrubConfig | None = None,
    deny_lists: Sequence[Sequence[str | tuple[str, str]]] | None = None,
) -> tuple[list[str | None], Counter]:
    """Scrub a list of texts; missing entries stay missing.

    ``deny_lists[i]`` holds values to replace wherever they occur (whole-word,
    case-insensitive) in ``texts[i]``: plain strings (tagged ``[PII]``) or
    ``(entity, value)`` pairs such as ``("PERSON", "Jane Roe")`` (tagged with
    the entity; person names also by each token of 3+ characters). Returns the
    scrubbed texts and counts per entity. With ``config.residual_check`` the
    result is re-scanned and :class:`PIIResidualError` raised if anything is left.
    """
    config = config or ScrubConfig()
    config.validate_names()
    engine = engine or build_engine(config)
    if deny_lists is not None and len(deny_lists) != len(texts):
        raise ValueError(f"deny_lists has {len(deny_lists)} entries for {len(texts)} texts")
    entities = engine.analyzable(config.text_entities())
    ops = _bind_operators(config, set(config.text_entities()))
    idx, vals = _prepare(texts)
    deny = [_row_terms(deny_lists[i]) if deny_lists is not None else [] for i in idx]
    new, counts = _scrub(vals, deny, engine=engine, config=config, entities=entities, ops=ops)
    if config.residual_check:
        left = _residuals(new, deny, engine=engine, config=config, entities=entities)
        if left:
            raise _residual_error({"<texts>": left})
    out: list[str | None] = [None if _is_missing(v) else v for v in texts]
    for i, v in zip(idx, new, strict=True):
        out[i] = v
    return out, counts


def scrub_table(
    df: pd.DataFrame,
    schema: TableSchema,
    config: ScrubConfig | None = None,
    *,
    engine: PIIEngine | None = None,
) -> tuple[pd.DataFrame, ScrubReport]:
    """Drop identifiers and L1 PII columns and scrub free text; returns a new frame and a report.

    * ``identifier`` columns, and non-text columns with a PII class at tier L1,
      are dropped (counted as their class's entity, one per non-missing cell);
    * ``text`` columns are scrubbed cell by cell (batched), plus the same-row
      deny-list built from the row's person/email/phone/ssn/national_id/
      medical_record/credit_card/address columns and identifier columns;
    * other columns pass through; a directly identifying class below tier L1
      is kept with a warning (listed in ``kept_pii_columns``).

    The input frame is never modified. Raises :class:`SchemaError` for a frame
    column the schema does not declare and :class:`PIIResidualError` if the
    re-scan still finds PII.
    """
    import pandas as pd

    config = config or ScrubConfig()
    config.validate_names()
    undeclared = [str(c) for c in df.columns if c not in set(schema.column_names)]
    if undeclared:
        raise SchemaError(
            f"column(s) not declared in schema '{schema.name}': {', '.join(undeclared)} "
            "(undeclared columns could hold PII; declare them or remove them before scrubbing)"
        )
    engine = engine or build_engine(config)
    cols = [schema.column(str(c)) for c in df.columns]

    text_cols = [c for c in cols if c.kind == ColumnKind.text]
    drop_cols = [
        c
        for c in cols
        if c.kind == ColumnKind.identifier
        or (c.kind != ColumnKind.text and c.pii != PIIClass.none and c.tier == Tier.L1)
    ]
    kept_pii = [c for c in cols if c.kind != ColumnKind.text and c.pii != PIIClass.none and c not in drop_cols]
    for c in kept_pii:
        if c.pii in _DIRECT_CLASSES:
            logger.warning(
                "column '%s' has PII class %s but tier %s: kept as is (only L1 PII columns are dropped)",
                c.name,
                c.pii.value,
                c.tier.value,
            )
    deny_cols = [c for c in cols if c.pii in DENY_LIST_CLASSES or c.kind == ColumnKind.identifier]

    counts: dict[str, dict[str, int]] = {}
    for c in drop_cols:
        n = int(df[c.name].notna().sum())
        if n:
            counts[c.name] = {PII_CLASS_ENTITY[c.pii]: n}

    out = df.drop(columns=[c.name for c in drop_cols]).copy(deep=True)
    if text_cols:
        # per-row deny-list, from the input frame (before identifiers are dropped)
        n_rows = len(df)
        row_items: list[list[tuple[str, str]]] = [[] for _ in range(n_rows)]
        for c in deny_cols:
            entity = PII_CLASS_ENTITY[c.pii]
            for i, v in enumerate(df[c.name].tolist()):
                if not _is_missing(v):
                    row_items[i].append((entity, str(v)))
        deny_rows = [_row_terms(items) for items in row_items]
        entities = engine.analyzable(config.text_entities())
        ops = _bind_operators(config, set(config.text_entities()))
        left: dict[str, Counter] = {}
        for c in text_cols:
            idx, vals = _prepare(df[c.name].tolist())
            deny = [deny_rows[i] for i in idx]
            new, col_counts = _scrub(vals, deny, engine=engine, config=config, entities=entities, ops=ops)
            if config.residual_check:
                rest = _residuals(new, deny, engine=engine, config=config, entities=entities)
                if rest:
                    left[c.name] = rest
            values: list[Any] = [None] * n_rows
            for i, v in zip(idx, new, strict=True):
                values[i] = v
            try:
                out[c.name] = pd.Series(values, index=df.index, dtype=df[c.name].dtype)
            except (TypeError, ValueError):
                out[c.name] = pd.Series(values, index=df.index, dtype=object)
            if col_counts:
                counts[c.name] = dict(sorted(col_counts.items()))
        if left:
            raise _residual_error(left)

    report = ScrubReport(
        mode=engine.mode,
        model=engine.model_name,
        rows=len(df),
        dropped_columns=[c.name for c in drop_cols],
        scrubbed_columns=[c.name for c in text_cols],
        kept_pii_columns=[c.name for c in kept_pii],
        counts=counts,
    )
    logger.info(
        "PII scrub (%s mode): %d rows, dropped %d column(s), scrubbed %d text column(s), %d replacement(s)",
        engine.mode,
        report.rows,
        len(report.dropped_columns),
        len(report.scrubbed_columns),
        sum(sum(v.values()) for k, v in counts.items() if k in report.scrubbed_columns),
    )
    return out, report
