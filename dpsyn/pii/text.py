"""Scrubbing free text, then re-scanning it, fail closed.

:func:`scrub_texts` analyzes each distinct text once (batched through spaCy's ``nlp.pipe``),
adds the same-row deny-list (:mod:`dpsyn.pii.deny`), merges overlapping detections and lets
Presidio's anonymizer apply the operators. The result is re-scanned; a detection counts as a
residual unless all its word characters lie inside what the operators wrote (tracked by
position, so a shifted date or a pseudonym is never mistaken for a leak). A text with a residual
is scrubbed once more and re-scanned; anything still found raises :class:`PIIResidualError`.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from dpsyn.errors import PIIResidualError
from dpsyn.pii.config import ScrubConfig, known_entities
from dpsyn.pii.deny import Term, deny_spans, is_missing, row_terms
from dpsyn.pii.engine import PIIEngine, build_engine, cached_engine
from dpsyn.pii.operators import get_operator

__all__ = ["INSERTED", "residual_error", "run_texts", "scrub_checked", "scrub_texts", "uncovered"]

logger = logging.getLogger(__name__)

# The shapes our operators write: tags, pseudonyms, HMAC hex digests (also used by dpsyn.pii.scan).
INSERTED = re.compile(r"\[([A-Z][A-Z0-9_]*)\]|\b([A-Z][A-Z0-9_]*)_[0-9a-f]{8}\b|\b[0-9a-f]{64}\b")
Spans = list[tuple[int, int]]


def bind_operators(config: ScrubConfig, entities: set[str]) -> dict[str, Callable[[str], str]]:
    """value -> replacement per entity; checks prerequisites (e.g. the HMAC key) up front."""
    return {e: get_operator(config.operator_for(e)).bind(e) for e in sorted(entities)}


# catch-all entities: on spans of equal length a specific entity names the union
_GENERIC = frozenset({"ID_NUMBER", "DATE_TIME"})


def merge(spans: list[tuple[int, int, str, float]]) -> list[tuple[int, int, str]]:
    """Union overlapping spans (so no part of any detection survives); the longest member names the union
    (then a specific entity before a catch-all one, then the higher score)."""
    out: list[tuple[int, int, str]] = []
    cur: list | None = None
    for start, end, entity, score in sorted(spans):
        rank = (end - start, entity not in _GENERIC, score, entity)
        if cur is not None and start < cur[1]:
            cur[1] = max(cur[1], end)
            cur[2].append(rank)
            continue
        if cur is not None:
            out.append((cur[0], cur[1], max(cur[2])[3]))
        cur = [start, end, [rank]]
    if cur is not None:
        out.append((cur[0], cur[1], max(cur[2])[3]))
    return out


def analyze(engine: PIIEngine, texts: list[str], entities: list[str], config: ScrubConfig):
    """Analyzer results per text, batched through the NLP pipeline.

    Each distinct text is analyzed once (the analyzer is deterministic: equal texts get equal
    results); repeated notes and the re-scan of scrubbed texts that differ only in the values
    their tags replaced cost one analysis each.
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
            engine.analyzer.analyze(text=text, language=engine.language, entities=entities,
                                    score_threshold=config.score_threshold, nlp_artifacts=artifacts)
        )  # fmt: skip
    return [results[k] for k in slot]


def uncovered(text: str, start: int, end: int, inserted: Spans) -> bool:
    """Whether ``text[start:end]`` has a word character outside the operators' inserted spans."""
    for i in range(start, end):
        ch = text[i]
        if (ch.isalnum() or ch == "_") and not any(a <= i < b for a, b in inserted):
            return True
    return False


def _tags(text: str, names: frozenset[str]) -> Spans:
    """Tags, pseudonyms and digests already in ``text`` whose entity dpsyn knows (written by an earlier scrub)."""
    out = []
    for m in INSERTED.finditer(text):
        name = m.group(1) or m.group(2)
        if name is None or name in names:
            out.append(m.span())
    return out


def _outside(text: str, span: tuple[int, int, str, float], keep: Spans) -> list[tuple[int, int, str, float]]:
    """The parts of a detection outside the protected spans that hold a word character (a tag is never re-tagged)."""
    start, end, entity, score = span
    pieces, pos = [], start
    for a, b in sorted(keep):
        if b <= pos or a >= end:
            continue
        if a > pos:
            pieces.append((pos, a))
        pos = max(pos, b)
    if pos < end:
        pieces.append((pos, end))
    return [(a, b, entity, score) for a, b in pieces if uncovered(text, a, b, [])]


def _carry(spans: Spans, replaced: list[tuple[int, int, int, int]]) -> Spans:
    """Positions of earlier inserted ``spans`` after replacing ``(in_start, in_end, out_start, out_end)`` regions."""
    out = []
    for a, b in spans:
        shift, keep = 0, True
        for s, e, os_, oe in replaced:
            if e <= a:
                shift += (oe - os_) - (e - s)
            elif s < b:
                keep = False  # replaced again: the new replacement covers it
                break
        if keep:
            out.append((a + shift, b + shift))
    return out


def _replace(engine: PIIEngine, text: str, merged, ops) -> tuple[str, list[tuple[int, int, int, int]]]:
    from presidio_anonymizer.entities import OperatorConfig
    from presidio_anonymizer.entities import RecognizerResult as AnonResult

    result = engine.anonymizer.anonymize(
        text=text,
        analyzer_results=[AnonResult(entity_type=e, start=s, end=t, score=1.0) for s, t, e in merged],
        operators={e: OperatorConfig("custom", {"lambda": ops[e]}) for e in {e for _, _, e in merged}},
    )
    items = sorted(getattr(result, "items", None) or [], key=lambda it: it.start)
    pairs = [(s, t, it.start, it.end) for (s, t, _), it in zip(merged, items, strict=False)] if len(items) == len(merged) else []
    return result.text, pairs


def scrub_pass(texts: list[str], deny: list[list[Term]], protected: list[Spans], *, engine: PIIEngine,
               config: ScrubConfig, entities: list[str], ops: dict[str, Callable[[str], str]]):  # fmt: skip
    """One pass: ``(texts, counts, touched, inserted spans)``; detections inside ``protected`` spans are left alone."""
    counts: Counter = Counter()
    out, touched, inserted = [], [], []
    for text, found, row_deny, keep in zip(texts, analyze(engine, texts, entities, config), deny, protected, strict=True):
        spans = [(r.start, r.end, r.entity_type, r.score) for r in found]
        spans.extend((a, b, entity, 1.0) for a, b, entity in deny_spans(row_deny, text))
        if keep:
            spans = [piece for sp in spans for piece in _outside(text, sp, keep)]
        merged = merge(spans)
        touched.append(bool(merged))
        if not merged:
            out.append(text)
            inserted.append(list(keep))
            continue
        for entity in {e for _, _, e in merged} - ops.keys():
            ops[entity] = get_operator(config.operator_for(entity)).bind(entity)
        counts.update(e for _, _, e in merged)
        new, pairs = _replace(engine, text, merged, ops)
        out.append(new)
        inserted.append(_carry(keep, pairs) + [(a, b) for _, _, a, b in pairs])
    return out, counts, touched, inserted


def residuals(texts: list[str], deny: list[list[Term]], touched: list[bool], inserted: list[Spans], *,
              engine: PIIEngine, config: ScrubConfig, entities: list[str]) -> tuple[Counter, list[bool]]:  # fmt: skip
    """Entities still found after scrubbing (inserted spans excluded), by type, and which texts hold them.

    A text in which the first pass found nothing is returned unchanged; the analyzer is
    deterministic, so re-scanning it would find nothing again and it is skipped.
    """
    left: Counter = Counter()
    dirty = [False] * len(texts)
    idx = [i for i, t in enumerate(touched) if t]
    if not idx:
        return left, dirty
    for i, found in zip(idx, analyze(engine, [texts[i] for i in idx], entities, config), strict=True):
        text, ins = texts[i], inserted[i]
        for r in found:
            if uncovered(text, r.start, r.end, ins):
                left[r.entity_type] += 1
                dirty[i] = True
        if deny[i]:
            blanked = list(text)
            for a, b in ins:
                blanked[a:b] = " " * (b - a)
            for _, _, entity in merge([(a, b, e, 1.0) for a, b, e in deny_spans(deny[i], "".join(blanked))]):
                left[f"{entity} (deny-list)"] += 1
                dirty[i] = True
    return left, dirty


def scrub_checked(texts: list[str], deny: list[list[Term]], *, engine: PIIEngine, config: ScrubConfig,
                  entities: list[str], ops: dict[str, Callable[[str], str]]) -> tuple[list[str], Counter, Counter]:  # fmt: skip
    """Scrub, then (with ``config.residual_check``) re-scan: ``(texts, counts, residual counts)``.

    A text whose re-scan still finds something is scrubbed once more (a name NER only
    recognizes once its neighbours are tags, say) and re-scanned; what the last re-scan finds is
    returned as residual. Nothing is ever put back, so a second pass can only remove more.
    """
    names = frozenset(known_entities()) | frozenset(entities) | frozenset(ops) | {"PII"}
    protected = [_tags(t, names) if "[" in t or "_" in t or len(t) >= 64 else [] for t in texts]
    kw = {"engine": engine, "config": config, "entities": entities}
    new, counts, touched, inserted = scrub_pass(texts, deny, protected, ops=ops, **kw)
    if not config.residual_check:
        return new, counts, Counter()
    left, dirty = residuals(new, deny, touched, inserted, **kw)
    if not left:
        return new, counts, left
    idx = [i for i, d in enumerate(dirty) if d]
    sub_deny = [deny[i] for i in idx]
    again, more, _, ins2 = scrub_pass([new[i] for i in idx], sub_deny, [inserted[i] for i in idx], ops=ops, **kw)
    for i, t in zip(idx, again, strict=True):
        new[i] = t
    counts.update(more)
    left, _ = residuals(again, sub_deny, [True] * len(idx), ins2, **kw)
    return new, counts, left


def run_texts(texts: list[str], deny: list[list[Term]], *, engine: PIIEngine, config: ScrubConfig,
              entities: list[str], ops: dict[str, Callable[[str], str]]) -> tuple[list[str], Counter, Counter]:  # fmt: skip
    """:func:`scrub_checked`, split over worker processes (:mod:`dpsyn.pii.workers`) for large inputs.

    Workers each build the same engine from ``config`` (a few seconds), so they are used only
    from ``config.parallel_min_texts`` texts on, and only when ``engine`` is the cached engine of
    ``config`` (a caller's own engine object cannot be sent to another process).
    """
    from dpsyn.pii import workers

    n = config.workers_for(len(texts))
    if n <= 1 or cached_engine(config) is not engine:
        return scrub_checked(texts, deny, engine=engine, config=config, entities=entities, ops=ops)
    return workers.run_workers(texts, deny, config=config, entities=entities, n=n)


def residual_error(left: dict[str, Counter]) -> PIIResidualError:
    total = sum(sum(c.values()) for c in left.values())
    parts = [f"column '{col}': " + ", ".join(f"{e}={n}" for e, n in sorted(c.items())) for col, c in left.items() if c]
    return PIIResidualError(
        f"PII residual check failed: {total} detection(s) remain after scrubbing ({'; '.join(parts)}); "
        "nothing should be published from this table. Check the operators and recognizers, or mark the "
        "column(s) L1 to drop them"
    )


def prepare(texts: Sequence[Any]) -> tuple[list[int], list[str]]:
    idx, vals = [], []
    for i, v in enumerate(texts):
        if not is_missing(v):
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
    ops = bind_operators(config, set(config.text_entities()))
    idx, vals = prepare(texts)
    deny = [row_terms(deny_lists[i]) if deny_lists is not None else [] for i in idx]
    new, counts, left = run_texts(vals, deny, engine=engine, config=config, entities=entities, ops=ops)
    if left:
        raise residual_error({"<texts>": left})
    out: list[str | None] = [None if is_missing(v) else v for v in texts]
    for i, v in zip(idx, new, strict=True):
        out[i] = v
    return out, counts
