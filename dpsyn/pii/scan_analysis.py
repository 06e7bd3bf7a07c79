"""The analysis half of :func:`dpsyn.pii.scan.scan_paths`: texts in, findings (never values) out.

:class:`Recorder` analyzes items (a text, its location, whether PERSON is looked for there,
context words) in newline-joined chunks, drops detections inside known-safe shapes and inside
tags written by dpsyn's scrubber, and records findings, caps and skipped files in the report.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dpsyn.pii.scan import _CHUNK_CHARS, NAME_SHAPE_SCORE, Finding, ScanConfig, ScanReport, _looks_like_name
from dpsyn.pii.text import INSERTED as _INSERTED
from dpsyn.pii.text import uncovered as _uncovered

if TYPE_CHECKING:
    from dpsyn.pii.engine import PIIEngine

__all__ = ["Item", "Recorder"]


# -- one unit of text to analyze ------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    text: str
    location: str
    person: bool  # look for PERSON here
    context: tuple[str, ...] = ()



_Item = Item


class Recorder:
    """Analysis and bookkeeping shared by every file format."""

    def __init__(self, config: ScanConfig, engine: PIIEngine):
        self.config = config
        self.engine = engine
        ents = config.scan_entities()
        # PERSON: by NER where the engine has a model, and by name shape in name columns in any mode
        self.person = "PERSON" in ents and config.person_scope != "none"
        self.ner = self.person and "PERSON" in engine.supported_entities
        self.base = [e for e in ents if e != "PERSON" and e in engine.supported_entities]
        self.entities = [*self.base, "PERSON"] if self.person else list(self.base)
        self.allow = [re.compile(p) for p in config.allow_patterns]
        self.report = ScanReport(
            mode=engine.mode,
            model=engine.model_name,
            entities=self.entities,
            person_scope=config.person_scope if self.person else "none",
        )
        self._file_findings = 0

    # -- analysis --------------------------------------------------------------------------

    def _person_here(self, hinted: bool) -> bool:
        return self.ner and (self.config.person_scope == "all" or hinted)

    def _allowed(self, text: str, start: int, end: int) -> bool:
        for pat in self.allow:
            for m in pat.finditer(text, max(0, start - 64), min(len(text), end + 64)):
                if m.start() <= start and end <= m.end():
                    return True
        return False

    def _analyze_text(self, text: str, *, ner: bool, context: Sequence[str]) -> list[tuple[int, int, str, float]]:
        engine = self.engine
        entities = self.entities if ner else self.base
        if not entities or not text.strip():
            return []
        nlp = engine.analyzer.nlp_engine
        if ner:
            artifacts = nlp.process_text(text, engine.language)
        else:
            doc = nlp.nlp[engine.language].make_doc(text)
            artifacts = nlp._doc_to_nlp_artifact(doc, engine.language)
            artifacts.entities = []
        results = engine.analyzer.analyze(
            text=text,
            language=engine.language,
            entities=entities,
            score_threshold=self.config.score_threshold,
            nlp_artifacts=artifacts,
            context=list(context) or None,
        )
        out = []
        for r in results:
            if self._allowed(text, r.start, r.end):
                continue
            if "[" in text[max(0, r.start - 1) : r.end + 1]:
                inserted = [m.span() for m in _INSERTED.finditer(text, max(0, r.start - 64), min(len(text), r.end + 64))]
                if not _uncovered(text, r.start, r.end, inserted):
                    continue  # a tag dpsyn's scrubber wrote, such as [PERSON]
            out.append((r.start, r.end, r.entity_type, float(r.score)))
        return out

    def analyze(self, file: str, items: Iterable[_Item]) -> None:
        """Analyze items in newline-joined chunks (grouped by PERSON flag and context) and record findings."""
        groups: dict[tuple[bool, tuple[str, ...]], list[_Item]] = {}
        sizes: dict[tuple[bool, tuple[str, ...]], int] = {}
        for it in items:
            text = it.text.replace("\r", " ").replace("\n", " ") if "\n" in it.text or "\r" in it.text else it.text
            if not text.strip():
                continue
            it = _Item(text, it.location, it.person, it.context)
            key = (it.person, it.context)
            groups.setdefault(key, []).append(it)
            sizes[key] = sizes.get(key, 0) + len(text) + 1
            if sizes[key] >= _CHUNK_CHARS:
                self._analyze_chunk(file, groups.pop(key), key)
                sizes[key] = 0
        for key, chunk in groups.items():
            self._analyze_chunk(file, chunk, key)

    def _analyze_chunk(self, file: str, chunk: list[_Item], key: tuple[bool, tuple[str, ...]]) -> None:
        person, context = key
        text = "\n".join(it.text for it in chunk)
        starts, pos = [], 0
        for it in chunk:
            starts.append(pos)
            pos += len(it.text) + 1
        named: set[int] = set()
        for start, _end, entity, score in self._analyze_text(text, ner=self._person_here(person), context=context):
            i = bisect.bisect_right(starts, start) - 1
            self._add(entity, file, chunk[i].location, score)
            if entity == "PERSON":
                named.add(i)
        if person and self.person:
            # a name column: a value shaped like a personal name counts even where NER misses it
            for i, it in enumerate(chunk):
                if i not in named and _looks_like_name(it.text):
                    self._add("PERSON", file, it.location, NAME_SHAPE_SCORE)

    def _add(self, entity: str, file: str, location: str, score: float) -> None:
        self.report.total_findings += 1
        self.report.counts[entity] = self.report.counts.get(entity, 0) + 1
        self._file_findings += 1
        if self._file_findings <= self.config.max_findings:
            self.report.findings.append(Finding(entity=entity, file=file, location=location, score=round(score, 2)))
        elif self._file_findings == self.config.max_findings + 1:
            self._cap(file, f"more than {self.config.max_findings} findings: only the first are listed")

    def _cap(self, file: str, what: str) -> None:
        self.report.capped.append({"file": file, "what": what})

    def _skip(self, file: str, reason: str) -> None:
        self.report.skipped.append({"file": file, "reason": reason})

