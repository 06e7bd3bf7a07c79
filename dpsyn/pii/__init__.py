"""PII scrubbing with Presidio, fully offline.

>>> from dpsyn.pii import ScrubConfig, scrub_table
>>> clean, report = scrub_table(df, schema, ScrubConfig())        # doctest: +SKIP

Importing this package is cheap: Presidio and spaCy are imported when the
first engine is built (:func:`build_engine`, cached). With no spaCy model
installed the engine runs in *pattern* mode (regex recognizers on a blank
spaCy tokenizer); names and places in free text are then caught only through
the same-row deny-list. See :mod:`dpsyn.pii.engine` and :mod:`dpsyn.pii.scrub`;
structured columns in :mod:`dpsyn.pii.structured`; searching files and stores
for PII in :mod:`dpsyn.pii.scan`; docs/pii.md.
"""

from __future__ import annotations

from dpsyn.pii.config import DEFAULT_TEXT_ENTITIES, PII_CLASS_ENTITY, ScrubConfig, known_entities, text_entities
from dpsyn.pii.deny import deny_spans, row_terms
from dpsyn.pii.engine import MODEL_CANDIDATES, PIIEngine, build_engine, clear_engine_cache, resolve_mode
from dpsyn.pii.files import scrub_file
from dpsyn.pii.operators import HMAC_KEY_ENV, OPERATORS
from dpsyn.pii.scan import ScanConfig, ScanReport, scan_paths
from dpsyn.pii.scrub import DENY_LIST_CLASSES, ScrubReport, scrub_table, scrub_texts

__all__ = [
    "DEFAULT_TEXT_ENTITIES",
    "DENY_LIST_CLASSES",
    "HMAC_KEY_ENV",
    "MODEL_CANDIDATES",
    "OPERATORS",
    "PII_CLASS_ENTITY",
    "PIIEngine",
    "ScanConfig",
    "ScanReport",
    "ScrubConfig",
    "ScrubReport",
    "build_engine",
    "clear_engine_cache",
    "deny_spans",
    "known_entities",
    "resolve_mode",
    "row_terms",
    "scan_paths",
    "scrub_table",
    "scrub_file",
    "scrub_texts",
    "text_entities",
]
