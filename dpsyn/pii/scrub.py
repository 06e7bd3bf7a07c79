"""Scrubbing tables and texts: the entry points, kept here for a stable import path.

The work is split by job: planning and column-wise operators for tables
(:mod:`dpsyn.pii.table`), free-text scrubbing and the residual re-scan (:mod:`dpsyn.pii.text`,
worker processes in :mod:`dpsyn.pii.workers`), the same-row deny-list (:mod:`dpsyn.pii.deny`)
and the report (:mod:`dpsyn.pii.report`).
"""

from __future__ import annotations

from dpsyn.pii.deny import DENY_LIST_CLASSES
from dpsyn.pii.deny import row_terms as _row_terms
from dpsyn.pii.report import ScrubReport
from dpsyn.pii.table import scrub_table
from dpsyn.pii.text import INSERTED as _INSERTED
from dpsyn.pii.text import bind_operators as _bind_operators
from dpsyn.pii.text import scrub_checked as _scrub_checked
from dpsyn.pii.text import scrub_texts
from dpsyn.pii.text import uncovered as _uncovered

__all__ = ["DENY_LIST_CLASSES", "ScrubReport", "scrub_table", "scrub_texts"]
# older private names, used by the worker protocol and tests
__all__ += ["_INSERTED", "_bind_operators", "_row_terms", "_scrub_checked", "_uncovered"]
