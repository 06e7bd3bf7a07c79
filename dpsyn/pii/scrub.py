"""Scrubbing a table (and lists of texts) with Presidio, fail closed.

:func:`scrub_table` classifies every structured column (header hint and a
bounded sample, :mod:`dpsyn.pii.structured`) and applies its operator
column-wise (drop, redact, replace, keyed hash, pseudonym); a column declared
``pii: none`` that looks like PII stops the run. It scrubs every free-text
column (Presidio analyze + anonymize, batched through spaCy's ``nlp.pipe``;
worker processes for large inputs, :mod:`dpsyn.pii._worker`), replaces values
of the same row's PII columns wherever they appear in that row's text (the
deny-list; in pattern mode the only way names are caught), then re-scans the
result and raises :class:`PIIResidualError` if anything is left. Reports and
messages hold entity types, column names and counts, never a value.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from dpsyn.errors import PIIResidualError, SchemaError, UnknownComponentError
from dpsyn.pii.config import PII_CLASS_ENTITY, ScrubConfig
from dpsyn.pii.engine import PIIEngine, build_engine, cached_engine
from dpsyn.pii.operators import get_operator
from dpsyn.pii.structured import ColumnClass, apply_operator, classify_sample, column_tokens, header_hint, sample_values
from dpsyn.schema import Column, ColumnKind, PIIClass, TableSchema, Tier

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
    transformed_columns: list[str] = Field(default_factory=list)  # structured columns replaced by an operator
    scrubbed_columns: list[str] = Field(default_factory=list)
    kept_pii_columns: list[str] = Field(default_factory=list)  # PII columns below tier L1, passed through
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)  # column -> entity -> count
    # structured column -> {hint, detected, fraction, sampled, entity, operator} (no values)
    columns: dict[str, dict[str, Any]] = Field(default_factory=dict)

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


_DIGIT_GAP = frozenset(" \t\n\r\f\v-.()/")
_ASCII_DIGITS = frozenset("0123456789")


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _digit_projection(text: str) -> tuple[str, list[int]]:
    pos = [i for i, ch in enumerate(text) if ch in _ASCII_DIGITS]
    return "".join(text[i] for i in pos), pos


def _lower_projection(text: str) -> tuple[str, list[int]]:
    """``text`` lower-cased with whitespace runs collapsed to one space, and each char's original index."""
    chars: list[str] = []
    pos: list[int] = []
    prev_space = False
    for i, ch in enumerate(text):
        if ch.isspace():
            if not prev_space:
                chars.append(" ")
                pos.append(i)
            prev_space = True
            continue
        prev_space = False
        low = ch.lower()
        chars.append(low if len(low) == 1 else ch)
        pos.append(i)
    return "".join(chars), pos


def _bounded(text: str, start: int, end: int) -> bool:
    """No word character directly before ``start`` or at ``end`` (regex ``(?<!\\w)...(?!\\w)``)."""
    return (start == 0 or not _is_word(text[start - 1])) and (end >= len(text) or not _is_word(text[end]))


def _find_all(hay: str, needle: str):
    i = hay.find(needle)
    while i >= 0:
        yield i
        i = hay.find(needle, i + 1)


def _deny_spans(terms: list[_Term], text: str) -> list[tuple[int, int, str]]:
    """``(start, end, entity)`` of every occurrence of the row's deny-list terms in ``text``.

    Equivalent to matching each term's regex (whole words, case-insensitive,
    any whitespace run for a space; digits with up to three separators between
    them), but done with substring searches on projections of the text so that
    no regex is compiled per row. Terms without an ASCII needle fall back to
    their compiled regex.
    """
    if not terms:
        return []
    out: list[tuple[int, int, str]] = []
    digits: tuple[str, list[int]] | None = None
    low: tuple[str, list[int]] | None = None
    fallback: dict[str, set[str]] = {}
    for t in terms:
        if t.digits:
            if digits is None:
                digits = _digit_projection(text)
            proj, pos = digits
            n = len(t.needle)
            for p in _find_all(proj, t.needle):
                idx = pos[p : p + n]
                gaps_ok = all(
                    b - a - 1 <= 3 and all(text[k] in _DIGIT_GAP for k in range(a + 1, b))
                    for a, b in zip(idx, idx[1:], strict=False)
                )
                if gaps_ok and _bounded(text, idx[0], idx[-1] + 1):
                    out.append((idx[0], idx[-1] + 1, t.entity))
        elif t.needle:
            if low is None:
                low = _lower_projection(text)
            proj, pos = low
            n = len(t.needle)
            for p in _find_all(proj, t.needle):
                a, b = pos[p], pos[p + n - 1] + 1
                if _bounded(text, a, b):
                    out.append((a, b, t.entity))
        else:
            fallback.setdefault(t.entity, set()).add(t.source)
    for entity, alts in sorted(fallback.items()):
        pat = _compile_alternation("|".join(sorted(alts, key=lambda a: (-len(a), a))))
        out.extend((m.start(), m.end(), entity) for m in pat.finditer(text))
    return out


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
    """Analyzer results per text, batched through the NLP pipeline.

    Each distinct text is analyzed once (the analyzer is deterministic: equal
    texts get equal results); repeated notes ("No change since last visit.")
    and the re-scan of scrubbed texts, which mostly differ only in the values
    their tags replaced, cost one analysis each.
    """
    if not entities or not texts:
        return [[] for _ in texts]
    first: dict[str, int] = {}
    unique: list[str] = []
    slot = []
    for text in texts:
        k = first.get(text)
        if k is None:
            k = first[text] = len(unique)
            unique.append(text)
        slot.append(k)
    nlp = engine.analyzer.nlp_engine
    results = []
    for text, artifacts in nlp.process_batch(unique, language=engine.language, batch_size=config.batch_size):
        results.append(
            engine.analyzer.analyze(
                text=text,
                language=engine.language,
                entities=entities,
                score_threshold=config.score_threshold,
                nlp_artifacts=artifacts,
            )
        )
    return [results[k] for k in slot]


def _scrub(
    texts: list[str],
    deny: list[list[_Term]],
    *,
    engine: PIIEngine,
    config: ScrubConfig,
    entities: list[str],
    ops: dict[str, Callable[[str], str]],
) -> tuple[list[str], Counter, list[bool]]:
    """Scrubbed texts, counts per entity, and per text whether anything was found in it."""
    from presidio_anonymizer.entities import OperatorConfig
    from presidio_anonymizer.entities import RecognizerResult as AnonResult

    counts: Counter = Counter()
    analyzed = _analyze(engine, texts, entities, config)
    out: list[str] = []
    touched: list[bool] = []
    for text, found, row_deny in zip(texts, analyzed, deny, strict=True):
        spans = [(r.start, r.end, r.entity_type, r.score) for r in found]
        spans.extend((a, b, entity, 1.0) for a, b, entity in _deny_spans(row_deny, text))
        merged = _merge(spans)
        touched.append(bool(merged))
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
    return out, counts, touched


def _uncovered(text: str, start: int, end: int, inserted: list[tuple[int, int]]) -> bool:
    """Whether ``text[start:end]`` has a word character outside the operators' inserted tags."""
    for i in range(start, end):
        ch = text[i]
        if (ch.isalnum() or ch == "_") and not any(a <= i < b for a, b in inserted):
            return True
    return False


def _residuals(
    texts: list[str],
    deny: list[list[_Term]],
    touched: list[bool],
    *,
    engine: PIIEngine,
    config: ScrubConfig,
    entities: list[str],
) -> tuple[Counter, list[bool]]:
    """Entities still found after scrubbing (inserted tags excluded), by type, and which texts hold them.

    A text in which the first pass found nothing is returned unchanged; the
    analyzer is deterministic, so re-scanning it would find nothing again and
    it is skipped. Every other text is analyzed afresh. A detection counts
    unless all of its word characters lie inside tags, pseudonyms or digests
    the operators wrote (NER may tag the word PHONE_NUMBER inside
    ``[PHONE_NUMBER]`` as a name: that is not a residual).
    """
    left: Counter = Counter()
    dirty = [False] * len(texts)
    idx = [i for i, t in enumerate(touched) if t]
    if not idx:
        return left, dirty
    sub = [texts[i] for i in idx]
    for i, text, found in zip(idx, sub, _analyze(engine, sub, entities, config), strict=True):
        inserted = [m.span() for m in _INSERTED.finditer(text)]
        for r in found:
            if _uncovered(text, r.start, r.end, inserted):
                left[r.entity_type] += 1
                dirty[i] = True
        if deny[i]:
            for _, _, entity in _merge([(a, b, e, 1.0) for a, b, e in _deny_spans(deny[i], _INSERTED.sub(" ", text))]):
                left[f"{entity} (deny-list)"] += 1
                dirty[i] = True
    return left, dirty


def _scrub_checked(
    texts: list[str],
    deny: list[list[_Term]],
    *,
    engine: PIIEngine,
    config: ScrubConfig,
    entities: list[str],
    ops: dict[str, Callable[[str], str]],
) -> tuple[list[str], Counter, Counter]:
    """Scrub, then (with ``config.residual_check``) re-scan: ``(texts, counts, residual counts)``.

    A text whose re-scan still finds something is scrubbed once more (a name
    NER only recognizes once its neighbours are tags, say) and re-scanned;
    what the last re-scan finds is returned as residual. Nothing is ever put
    back, so a second pass can only remove more.
    """
    new, counts, touched = _scrub(texts, deny, engine=engine, config=config, entities=entities, ops=ops)
    if not config.residual_check:
        return new, counts, Counter()
    left, dirty = _residuals(new, deny, touched, engine=engine, config=config, entities=entities)
    if not left:
        return new, counts, left
    idx = [i for i, d in enumerate(dirty) if d]
    again, more, touched2 = _scrub(
        [new[i] for i in idx], [deny[i] for i in idx], engine=engine, config=config, entities=entities, ops=ops
    )
    for i, t in zip(idx, again, strict=True):
        new[i] = t
    counts.update(more)
    left, _ = _residuals(
        again, [deny[i] for i in idx], [True] * len(idx), engine=engine, config=config, entities=entities
    )
    return new, counts, left


# -- worker processes (large inputs) ------------------------------------------------------


def _run_workers(
    texts: list[str], deny: list[list[_Term]], *, config: ScrubConfig, entities: list[str], n: int
) -> tuple[list[str], Counter, Counter]:
    """Split the texts over ``n`` worker processes (``python -m dpsyn.pii._worker``), in order."""
    import pickle
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    from dpsyn.pii import operators

    size = -(-len(texts) // n)
    parts = [(texts[i : i + size], deny[i : i + size]) for i in range(0, len(texts), size)]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    key = operators._process_key
    config_json = config.model_dump_json()
    logger.info("PII scrub: %d texts in %d worker processes", len(texts), len(parts))

    def run(part: tuple[list[str], list[list[_Term]]]):
        payload = pickle.dumps((config_json, key, part[0], part[1], entities), protocol=pickle.HIGHEST_PROTOCOL)
        proc = subprocess.run(
            [sys.executable, "-m", "dpsyn.pii._worker"],
            input=payload,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            check=False,
        )
        try:
            status, result = pickle.loads(proc.stdout)
        except Exception:
            status, result = "error", f"no result (exit code {proc.returncode})"
        if status != "ok":
            raise RuntimeError(f"a PII worker process failed ({result}); nothing was scrubbed")
        return result

    out: list[str] = []
    counts: Counter = Counter()
    left: Counter = Counter()
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        for new, c, rest in pool.map(run, parts):
            out.extend(new)
            counts.update(c)
            left.update(rest)
    return out, counts, left


def _run_texts(
    texts: list[str],
    deny: list[list[_Term]],
    *,
    engine: PIIEngine,
    config: ScrubConfig,
    entities: list[str],
    ops: dict[str, Callable[[str], str]],
) -> tuple[list[str], Counter, Counter]:
    """:func:`_scrub_checked`, split over worker processes for large inputs.

    Workers (see :mod:`dpsyn.pii._worker`) each build the same engine from
    ``config`` (a few seconds), so they are used only from
    ``config.parallel_min_texts`` texts on, and only when ``engine`` is the
    cached engine of ``config`` (a caller's own engine object cannot be sent
    to another process).
    """
    n = config.workers_for(len(texts))
    if n <= 1 or cached_engine(config) is not engine:
        return _scrub_checked(texts, deny, engine=engine, config=config, entities=entities, ops=ops)
    return _run_workers(texts, deny, config=config, entities=entities, n=n)


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
    new, counts, left = _run_texts(vals, deny, engine=engine, config=config, entities=entities, ops=ops)
    if left:
        raise _residual_error({"<texts>": left})
    out: list[str | None] = [None if _is_missing(v) else v for v in texts]
    for i, v in zip(idx, new, strict=True):
        out[i] = v
    return out, counts


# -- tables ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """What happens to one structured column."""

    entity: str | None  # None: nothing says the column holds PII
    operator: str | None  # None = kept as is
    source: str  # "column_operators", "operators", "default" (drop), "kept"


def _check_column_names(config: ScrubConfig, schema: TableSchema) -> None:
    names = set(schema.column_names)
    for field in ("column_operators", "allow_columns"):
        bad = sorted({c for c in getattr(config, field) if c not in names})
        if bad:
            raise UnknownComponentError(
                f"unknown column(s) {', '.join(bad)} in PII config '{field}'; columns of schema "
                f"'{schema.name}': {', '.join(schema.column_names)}"
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
            detected, frac = classify_sample(
                values,
                engine=engine,
                config=config,
                context=column_tokens(c.name),
                use_ner=string_like and engine.mode == "ner",
            )
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


def scrub_table(
    df: pd.DataFrame,
    schema: TableSchema,
    config: ScrubConfig | None = None,
    *,
    engine: PIIEngine | None = None,
) -> tuple[pd.DataFrame, ScrubReport]:
    """Scrub a table column-wise and its free text cell-wise; returns a new frame and a report.

    Structured (non-text) columns are classified from their header and a
    sample of their values (see :mod:`dpsyn.pii.structured`), then:

    * a column in ``config.column_operators`` gets that operator;
    * an identifier or PII column whose entity is in ``config.operators`` gets
      that operator;
    * other ``identifier`` columns and PII columns at tier L1 are dropped
      (counted as their class's entity, one per non-missing cell);
    * PII columns below L1 are kept (a directly identifying class with a
      warning; listed in ``kept_pii_columns``);
    * a column declared ``pii: none`` whose sample looks like PII stops the
      run with :class:`PIIResidualError` (fail closed) unless it is in
      ``config.allow_columns``.

    ``text`` columns are scrubbed cell by cell (batched; worker processes for
    large tables), plus the same-row deny-list built from the row's
    person/email/phone/ssn/national_id/medical_record/credit_card/address and
    identifier columns, then re-scanned.

    The input frame is never modified. Raises :class:`SchemaError` for a frame
    column the schema does not declare, :class:`UnknownComponentError` for
    unknown entity, operator or column names, and :class:`PIIResidualError`
    if PII is left.
    """
    import pandas as pd

    config = config or ScrubConfig()
    config.validate_names()
    _check_column_names(config, schema)
    undeclared = [str(c) for c in df.columns if c not in set(schema.column_names)]
    if undeclared:
        raise SchemaError(
            f"column(s) not declared in schema '{schema.name}': {', '.join(undeclared)} "
            "(undeclared columns could hold PII; declare them or remove them before scrubbing)"
        )
    engine = engine or build_engine(config)
    cols = [schema.column(str(c)) for c in df.columns]
    text_cols = [c for c in cols if c.kind == ColumnKind.text]
    struct_cols = [c for c in cols if c.kind != ColumnKind.text]

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

    kept_pii = [c for c in struct_cols if c.pii != PIIClass.none and plans[c.name].operator is None]
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
            new, col_counts, rest = _run_texts(vals, deny, engine=engine, config=config, entities=entities, ops=ops)
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
        dropped_columns=dropped,
        transformed_columns=transformed,
        scrubbed_columns=[c.name for c in text_cols],
        kept_pii_columns=[c.name for c in kept_pii],
        counts=counts,
        columns={
            c.name: {**classes[c.name].to_dict(), "entity": plans[c.name].entity, "operator": plans[c.name].operator}
            for c in struct_cols
        },
    )
    logger.info(
        "PII scrub (%s mode): %d rows, dropped %d column(s), transformed %d, scrubbed %d text column(s), "
        "%d replacement(s) in text",
        engine.mode,
        report.rows,
        len(report.dropped_columns),
        len(report.transformed_columns),
        len(report.scrubbed_columns),
        sum(sum(v.values()) for k, v in counts.items() if k in report.scrubbed_columns),
    )
    return out, report
