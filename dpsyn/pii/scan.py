"""Search files and folders for PII, reporting where, never what.

>>> report = scan_paths(["out/", "~/.dpsyn/mlflow.db"])     # doctest: +SKIP
>>> [(f.entity, f.file, f.location) for f in report.findings]  # doctest: +SKIP

What is searched (:func:`scan_paths`): everything, unless ``max_rows`` / ``max_bytes`` set caps (a cap that stops
a file early is reported, and ``dpsyn scan`` then exits 3, not 0):

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
   letter), a watermark mark (two 16-hex HMACs joined by a hyphen), an ISO timestamp, a version string or a long decimal fraction is
   dropped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from dpsyn.errors import InputError, UnknownComponentError
from dpsyn.pii.config import ScrubConfig, text_entities
from dpsyn.progress import report

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
    r"\b[0-9a-f]{16}-[0-9a-f]{16}\b",  # dpsyn's watermark marks (record code - row tag: HMACs, digits only by chance)
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
    (text) read per file or table, and ``max_bytes``: bytes read per file (None, the default: all of them;
    a cap that stops the scan early is reported in ``capped``);
    ``max_findings``: findings recorded per file (all are counted).
    ``allow_patterns``: regexes of known-safe shapes; a detection inside a
    match is dropped (default :data:`DEFAULT_ALLOW_PATTERNS`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    entities: list[str] | None = None
    score_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    person_scope: Literal["columns", "text", "all", "none"] = "columns"
    max_rows: int | None = Field(default=None, ge=1)  # None: every row (a whole store is searched by default)
    max_bytes: int | None = Field(default=None, ge=1024)  # None: every byte
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

    @property
    def row_cap(self) -> int:
        return self.max_rows if self.max_rows is not None else 2**62

    @property
    def byte_cap(self) -> int:
        return self.max_bytes if self.max_bytes is not None else 2**62

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
    from dpsyn.pii.scan_formats import Scanner

    scanner = Scanner(config, engine)
    for i, p in enumerate(paths):
        scanner.scan_path(Path(p))
        report("scan: paths", i + 1, len(paths))
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

