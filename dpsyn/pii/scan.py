"""Search files and folders for PII, reporting where, never what.

>>> report = scan_paths(["out/", "~/.dpsyn/mlflow.db"])     # doctest: +SKIP
>>> [(f.entity, f.file, f.location) for f in report.findings]  # doctest: +SKIP

What is searched (:func:`scan_paths`), each with bounded work:

* **CSV/TSV** (``row R, column C``), **Parquet** (string columns), **JSON** and
  JSON Lines (every string, and object keys; ``$.path[i]``), **text and log
  files** (``line N``), at most ``max_rows`` rows or lines per file;
* **SQLite databases** (by their header, whatever the suffix): every text
  value of every column of every table (``table.column.rowid``), at most
  ``max_rows`` rows per table. This covers an MLflow store (``mlflow.db``)
  and Prefect's database (``prefect.db``);
* **folders**, recursively (an MLflow artifact folder, a dpsyn home, an
  output folder); symbolic links are not followed. Binary files are skipped,
  except pickles and torch files (``.pkl``, ``.pickle``, ``.pt``, ``.pth``),
  which are searched as bytes decoded as Latin-1 (``byte N``), at most
  ``max_bytes`` per file.

Findings hold the entity type, the file, the location and the score. The
report says which files were skipped (and why) and where a cap was hit.

**False positives.** The stores of MLflow and Prefect are full of hex run
ids, UUIDs, timestamps, version strings and JSON; Presidio's defaults flag
some of them (weak-pattern entities such as US bank, driver licence and
passport numbers match any 8-9 digit run; NER calls flow-run names like
``crimson-quokka`` persons). The scan therefore uses

1. the validated or well-formed entities only (:data:`SCAN_ENTITIES`: emails,
   phones, SSNs, cards (Luhn), CN resident IDs (check digit), IBANs
   (checksum), labelled MRNs, dates of birth with context), with a score
   threshold of 0.5, so weak-pattern matches without context do not count;
2. PERSON (NER) only in columns or JSON keys whose name says they hold a
   person's name (``first_name``, ``patient_name``, ``full_name``, or a bare
   ``name`` in a data file but not in a tool's database). ``person_scope="text"``
   adds free-text columns of data files (``note``, ``comment``, ``text``, ...)
   and ``"all"`` every text, log lines included: en_core_web_sm calls
   "Female" and "Assoc" in the demo's templated synthetic notes persons (764
   findings in 2,000 notes), so free text is not searched for names by
   default (the scrubber's own re-scan covers free text at scrub time). Tags
   written by dpsyn's scrubber (``[PERSON]``) never count;
3. an allow-list of known-safe shapes (:data:`DEFAULT_ALLOW_PATTERNS`): a
   detection lying entirely inside a UUID, a hex id (16+ hex characters with a
   letter), an ISO timestamp, a version string or a long decimal fraction is
   dropped.
"""

from __future__ import annotations

import bisect
import csv
import io
import json
import logging
import re
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dpsyn.errors import InputError, UnknownComponentError
from dpsyn.pii.config import ScrubConfig, text_entities
from dpsyn.pii.text import INSERTED as _INSERTED
from dpsyn.pii.text import uncovered as _uncovered
from dpsyn.pii.structured import column_tokens, header_hint

if TYPE_CHECKING:
    from dpsyn.pii.engine import PIIEngine

__all__ = ["DEFAULT_ALLOW_PATTERNS", "DEFAULT_SKIP_TABLES", "SCAN_ENTITIES", "Finding", "ScanConfig", "ScanReport", "scan_paths"]

logger = logging.getLogger(__name__)

SCAN_ENTITIES: tuple[str, ...] = (
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "US_SSN",
    "CREDIT_CARD",
    "CN_RESIDENT_ID",
    "IBAN_CODE",
    "MEDICAL_RECORD_NUMBER",
    "DATE_OF_BIRTH",
    "PERSON",
)
DEFAULT_ALLOW_PATTERNS: tuple[str, ...] = (
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",  # UUID
    r"\b(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{16,}\b",  # hex ids and digests (with at least one letter)
    r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",  # ISO timestamps
    r"(?<![\d.])v?\d{1,2}\.\d{1,3}\.\d{1,4}(?:\.\d{1,4})?(?:[+-][0-9A-Za-z.]+)?(?![\d.])",  # version strings
    r"(?<![\d.])\d+\.\d{5,}(?:[eE][+-]?\d+)?(?![\d.])",  # long decimal fractions (metrics, scores)
)
# SQLite tables skipped by default: Prefect's block registry (the JSON schemas and docs of
# Prefect's block types, identical on every installation; they quote example addresses).
DEFAULT_SKIP_TABLES: tuple[str, ...] = ("block_schema", "block_type")
PICKLE_SUFFIXES = (".pkl", ".pickle", ".pt", ".pth")
TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t"}
PARQUET_SUFFIXES = (".parquet", ".pq")
JSON_SUFFIXES = (".json",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")
_FREE_TEXT_TOKENS = frozenset(
    {"note", "notes", "comment", "comments", "text", "narrative", "remark", "remarks", "memo", "observation", "observations"}
)
# A value of a name column shaped like a personal name: 1-4 capitalized words of letters
# (apostrophes, hyphens, a trailing dot for initials), e.g. "Adaeze Okafor", "O'Neil-Smith J.".
_NAME_SHAPE = re.compile(r"(?:[^\W\d_][^\W\d_'’.\-]*(?:['’\-][^\W\d_]+)*\.?)(?:[ ,]+[^\W\d_][^\W\d_'’.\-]*(?:['’\-][^\W\d_]+)*\.?){0,3}")
NAME_SHAPE_SCORE = 0.6


def _looks_like_name(value: str) -> bool:
    v = value.strip()
    return bool(_NAME_SHAPE.fullmatch(v)) and all(w[0].isupper() for w in re.split(r"[ ,]+", v) if w)
_SQLITE_MAGIC = b"SQLite format 3\x00"
_CHUNK_CHARS = 200_000  # texts are analyzed in newline-joined chunks of about this size
_BINARY_CHUNK = 1 << 20


class ScanConfig(BaseModel):
    """How :func:`scan_paths` searches.

    ``entities``: what to look for (default :data:`SCAN_ENTITIES`).
    ``person_scope``: where PERSON (NER) is looked for: ``"columns"`` (only
    values of name-like columns and JSON keys), ``"text"`` (also free-text
    columns of data files), ``"all"`` (every text) or ``"none"``. ``max_rows``: rows (tables, CSV, Parquet, JSON Lines) or lines
    (text) read per file or table; ``max_bytes``: bytes read per file;
    ``max_findings``: findings recorded per file (all are counted).
    ``allow_patterns``: regexes of known-safe shapes; a detection inside a
    match is dropped (default :data:`DEFAULT_ALLOW_PATTERNS`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    entities: list[str] | None = None
    score_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    person_scope: Literal["columns", "text", "all", "none"] = "columns"
    max_rows: int = Field(default=20_000, ge=1)
    max_bytes: int = Field(default=64 * 1024 * 1024, ge=1024)
    max_findings: int = Field(default=1_000, ge=1)
    allow_patterns: list[str] = Field(default_factory=lambda: list(DEFAULT_ALLOW_PATTERNS))
    skip_tables: list[str] = Field(default_factory=lambda: list(DEFAULT_SKIP_TABLES))
    scrub: ScrubConfig = Field(default_factory=ScrubConfig)  # engine settings (mode, model, language)

    @field_validator("allow_patterns")
    @classmethod
    def _check_patterns(cls, v: list[str]) -> list[str]:
        for p in v:
            try:
                re.compile(p)
            except re.error as e:
                raise ValueError(f"allow pattern is not a valid regular expression ({e.msg})") from None
        return v

    def scan_entities(self) -> list[str]:
        ents = list(self.entities) if self.entities is not None else list(SCAN_ENTITIES)
        valid = text_entities()
        bad = sorted({e for e in ents if e not in valid})
        if bad:
            raise UnknownComponentError(f"unknown PII entity name(s) {', '.join(bad)}; valid: {', '.join(valid)}")
        if not ents:
            raise InputError("no entity to scan for: give at least one entity name")
        return ents


class Finding(BaseModel):
    """One detection: entity type, file, location and score (never the value)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    entity: str
    file: str
    location: str
    score: float


class ScanReport(BaseModel):
    """What :func:`scan_paths` found and how much it searched (no values)."""

    model_config = ConfigDict(extra="forbid")

    mode: str
    model: str | None
    entities: list[str]
    person_scope: str
    files_scanned: list[str] = Field(default_factory=list)
    skipped: list[dict[str, str]] = Field(default_factory=list)  # {file, reason}
    capped: list[dict[str, str]] = Field(default_factory=list)  # {file, what}
    findings: list[Finding] = Field(default_factory=list)
    total_findings: int = 0  # all detections, including those over max_findings per file
    counts: dict[str, int] = Field(default_factory=dict)  # entity -> all detections

    @property
    def clean(self) -> bool:
        return self.total_findings == 0

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# -- one unit of text to analyze ------------------------------------------------------------


@dataclass(frozen=True)
class _Item:
    text: str
    location: str
    person: bool  # look for PERSON here
    context: tuple[str, ...] = ()


class _Scanner:
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

    # -- files ------------------------------------------------------------------------------

    def scan_path(self, path: Path) -> None:
        if path.is_symlink():
            self._skip(str(path), "symbolic link (not followed)")
        elif path.is_dir():
            for p in sorted(path.iterdir()):
                self.scan_path(p)
        elif path.is_file():
            self._file_findings = 0
            try:
                handled = self.scan_file(path)
            except (OSError, ValueError, sqlite3.Error, csv.Error) as e:
                self._skip(str(path), f"could not be read ({type(e).__name__})")
                return
            if handled:
                self.report.files_scanned.append(str(path))
        else:
            self._skip(str(path), "not a regular file")

    def scan_file(self, path: Path) -> bool:
        name = path.name.lower()
        with path.open("rb") as fh:
            head = fh.read(8192)
        if not head:
            self._skip(str(path), "empty")
            return False
        if head.startswith(_SQLITE_MAGIC):
            self.scan_sqlite(path)
        elif name.endswith(PICKLE_SUFFIXES):
            self.scan_bytes(path)
        elif name.endswith(PARQUET_SUFFIXES) or head.startswith(b"PAR1"):
            self.scan_parquet(path)
        elif name.endswith(("-wal", "-shm", "-journal")) and _is_sqlite(path.with_name(path.name.rsplit("-", 1)[0])):
            self._skip(str(path), "SQLite side file (read through its database)")
            return False
        elif b"\x00" in head:
            self._skip(str(path), "binary file")
            return False
        elif name.endswith(tuple(TABLE_SUFFIXES)):
            self.scan_csv(path, TABLE_SUFFIXES[Path(name).suffix])
        elif name.endswith(JSONL_SUFFIXES):
            self.scan_jsonl(path)
        elif name.endswith(JSON_SUFFIXES):
            self.scan_json(path)
        else:
            self.scan_text(path)
        return True

    def _read_text(self, path: Path) -> str:
        with path.open("rb") as fh:
            raw = fh.read(self.config.max_bytes + 1)
        if len(raw) > self.config.max_bytes:
            self._cap(str(path), f"only the first {self.config.max_bytes} bytes searched")
            raw = raw[: self.config.max_bytes]
        return raw.decode("utf-8", errors="replace")

    def scan_text(self, path: Path) -> None:
        file = str(path)
        text = self._read_text(path)
        lines = text.splitlines()
        if len(lines) > self.config.max_rows:
            self._cap(file, f"only the first {self.config.max_rows} of {len(lines)} lines searched")
            lines = lines[: self.config.max_rows]
        self.analyze(file, (_Item(line, f"line {i}", False) for i, line in enumerate(lines, start=1)))

    def scan_bytes(self, path: Path) -> None:
        file = str(path)
        size = path.stat().st_size
        if size > self.config.max_bytes:
            self._cap(file, f"only the first {self.config.max_bytes} of {size} bytes searched")
        with path.open("rb") as fh:
            offset = 0
            while offset < min(size, self.config.max_bytes):
                block = fh.read(min(_BINARY_CHUNK, self.config.max_bytes - offset))
                if not block:
                    break
                text = block.decode("latin-1")
                # patterns only (NER on binary noise only yields noise), offsets kept exact
                for start, _end, entity, score in self._analyze_text(text, ner=False, context=()):
                    self._add(entity, file, f"byte {offset + start}", score)
                offset += len(block)

    def scan_csv(self, path: Path, default_sep: str) -> None:
        file = str(path)
        text = self._read_text(path)
        try:
            dialect: Any = csv.Sniffer().sniff(text[:8192], delimiters=",\t;|")
        except csv.Error:
            dialect = "excel-tab" if default_sep == "\t" else "excel"
        rows = csv.reader(io.StringIO(text), dialect)
        header = next(rows, None)
        if header is None:
            return
        header = [h.strip() for h in header]
        self.analyze(file, (_Item(h, f"header, column {i + 1}", False) for i, h in enumerate(header)))
        cols = [self._column_meta(h or f"column {i + 1}", bare_name=True) for i, h in enumerate(header)]
        items: list[_Item] = []
        n = 0
        for n, row in enumerate(rows, start=1):  # noqa: B007
            if n > self.config.max_rows:
                self._cap(file, f"only the first {self.config.max_rows} rows searched")
                break
            for j, value in enumerate(row):
                name, hinted, ctx = cols[j] if j < len(cols) else (f"column {j + 1}", False, ())
                items.append(_Item(value, f"row {n}, column {name}", hinted, ctx))
        self.analyze(file, items)

    def _column_meta(self, name: str, *, bare_name: bool) -> tuple[str, bool, tuple[str, ...]]:
        """Column name, whether PERSON is looked for in it, and its tokens (context words).

        PERSON: columns whose name says they hold a person's name; in data files
        (``bare_name``), also a bare ``name``, and with ``person_scope="text"`` free-text
        columns (note, comment, ...).
        """
        toks = column_tokens(name)
        hinted = header_hint(name, bare_name_is_person=bare_name) == "PERSON"
        if bare_name and not hinted and self.config.person_scope == "text":
            hinted = bool(set(toks) & _FREE_TEXT_TOKENS)
        return name, hinted, tuple(toks)

    def scan_parquet(self, path: Path) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        file = str(path)
        pf = pq.ParquetFile(path)
        schema = pf.schema_arrow
        cols = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
        if not cols:
            return
        total = pf.metadata.num_rows
        if total > self.config.max_rows:
            self._cap(file, f"only the first {self.config.max_rows} of {total} rows searched")
        items: list[_Item] = []
        row0 = 0
        for batch in pf.iter_batches(batch_size=min(self.config.max_rows, 10_000), columns=cols):
            take = min(batch.num_rows, self.config.max_rows - row0)
            for name in cols:
                cname, hinted, ctx = self._column_meta(name, bare_name=True)
                values = batch.column(name).to_pylist()[:take]
                items.extend(
                    _Item(v, f"row {row0 + i + 1}, column {cname}", hinted, ctx)
                    for i, v in enumerate(values)
                    if isinstance(v, str)
                )
            row0 += take
            if row0 >= self.config.max_rows:
                break
        self.analyze(file, items)

    def _walk_json(self, obj: Any, path: str, key: str | None) -> Iterator[_Item]:
        if isinstance(obj, str):
            name, hinted, ctx = self._column_meta(key or "", bare_name=True) if key else ("", False, ())
            yield _Item(obj, path, hinted, ctx)
        elif isinstance(obj, dict):
            for k, v in obj.items():
                ks = str(k)
                yield _Item(ks, f"{path} (key)", False)
                yield from self._walk_json(v, f"{path}.{ks}" if re.fullmatch(r"\w+", ks) else f"{path}[{json.dumps(ks)}]", ks)
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                yield from self._walk_json(v, f"{path}[{i}]", key)

    def scan_json(self, path: Path) -> None:
        file = str(path)
        text = self._read_text(path)
        try:
            obj = json.loads(text)
        except ValueError:
            self.scan_text(path)  # not valid (or cut) JSON: search it as text
            return
        items = []
        for n, it in enumerate(self._walk_json(obj, "$", None), start=1):
            if n > self.config.max_rows:
                self._cap(file, f"only the first {self.config.max_rows} strings searched")
                break
            items.append(it)
        self.analyze(file, items)

    def scan_jsonl(self, path: Path) -> None:
        file = str(path)
        lines = self._read_text(path).splitlines()
        if len(lines) > self.config.max_rows:
            self._cap(file, f"only the first {self.config.max_rows} of {len(lines)} lines searched")
            lines = lines[: self.config.max_rows]
        items: list[_Item] = []
        for i, line in enumerate(lines, start=1):
            try:
                obj = json.loads(line)
            except ValueError:
                items.append(_Item(line, f"line {i}", False))
                continue
            items.extend(self._walk_json(obj, f"line {i}: $", None))
        self.analyze(file, items)

    def scan_sqlite(self, path: Path) -> None:
        """Every table; a database in WAL mode is read from a private copy with its -wal file, so that
        recent (not yet checkpointed) rows are searched too, and the original is never written."""
        import shutil
        import tempfile

        file = str(path)
        wal = path.with_name(path.name + "-wal")
        with tempfile.TemporaryDirectory(prefix="dpsyn-scan-") as tmp:
            if wal.is_file() and wal.stat().st_size > 0:
                copy = Path(tmp) / "db.sqlite"
                shutil.copyfile(path, copy)
                shutil.copyfile(wal, Path(tmp) / "db.sqlite-wal")
                con = sqlite3.connect(f"{copy.as_uri()}?mode=rw", uri=True)
            else:
                con = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
            try:
                tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
                for table in tables:
                    if table in self.config.skip_tables:
                        self._skip(f"{file} table {table}", "known static table (ScanConfig.skip_tables)")
                        continue
                    self._scan_table(con, file, table)
            finally:
                con.close()

    def _scan_table(self, con: sqlite3.Connection, file: str, table: str) -> None:
        q = '"' + table.replace('"', '""') + '"'
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({q})")]
        try:
            con.execute(f"SELECT rowid FROM {q} LIMIT 1").fetchall()
            rowid = "rowid"
        except sqlite3.Error:  # WITHOUT ROWID tables: number the rows instead
            rowid = None
        total = con.execute(f"SELECT count(*) FROM {q}").fetchone()[0]
        if total > self.config.max_rows:
            self._cap(file, f"table {table}: only the first {self.config.max_rows} of {total} rows searched")
        items: list[_Item] = []
        for col in cols:
            c = '"' + col.replace('"', '""') + '"'
            name, hinted, ctx = self._column_meta(col, bare_name=False)
            sel = f"SELECT {rowid}, {c} FROM {q}" if rowid else f"SELECT NULL, {c} FROM {q}"
            sql = f"{sel} WHERE typeof({c}) = 'text' LIMIT ?"
            for n, (rid, value) in enumerate(con.execute(sql, (self.config.max_rows,)), start=1):
                where = rid if rid is not None else f"row{n}"
                items.append(_Item(value, f"{table}.{col}.{where}", hinted, ctx))
        self.analyze(file, items)


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16) == _SQLITE_MAGIC
    except OSError:
        return False


def scan_paths(
    paths: Sequence[str | Path],
    *,
    engine: PIIEngine | None = None,
    config: ScanConfig | None = None,
) -> ScanReport:
    """Search files and folders for PII; see the module docstring for what and how.

    Raises :class:`InputError` for a path that does not exist (checked before
    anything is read) and :class:`UnknownComponentError` for unknown entity
    names. Findings never hold a value.
    """
    from dpsyn.pii.engine import build_engine

    config = config or ScanConfig()
    config.scan_entities()
    missing = [str(p) for p in paths if not Path(p).exists() and not Path(p).is_symlink()]
    if missing:
        raise InputError(f"path(s) to scan not found: {', '.join(missing)}")
    if not paths:
        raise InputError("no path to scan")
    engine = engine or build_engine(config.scrub)
    scanner = _Scanner(config, engine)
    for p in paths:
        scanner.scan_path(Path(p))
    rep = scanner.report
    rep.counts = dict(sorted(rep.counts.items()))
    logger.info(
        "PII scan (%s mode): %d file(s) searched, %d skipped, %d finding(s)",
        rep.mode,
        len(rep.files_scanned),
        len(rep.skipped),
        rep.total_findings,
    )
    return rep
