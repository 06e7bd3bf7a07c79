"""Draft a table schema for a person to review (``dpsyn schema suggest``).

From the column names and a bounded sample of rows (at most ``rows``, read
once, kept nowhere), propose for each column a kind, a PII class, a sensitivity
tier and a quasi-identifier flag, and write them as a YAML draft.

The draft never holds anything read from the data: no bounds, bins, domains,
example values or counts. Those must come from public documentation (a data
dictionary, a coding standard); taken from the rows they would leak them into
a file people share (docs/privacy.md). The draft writes placeholders instead
(``bounds: [TODO_low, TODO_high]``, ``domain: TODO_categories``), so it does
not load as a schema until a person has filled them in.

Guesses come from header hints (``email``, ``dob``, ``diag``, ``age``, ...)
and from light patterns over the sampled values (email addresses, US SSNs,
phone numbers, card numbers with a Luhn check, Chinese resident IDs with their
check digit, IPv4 addresses, dates). No NER model is loaded, so person names
are found by header only: a column that is nearly all distinct text is
proposed as an identifier.
"""

from __future__ import annotations

from pathlib import Path

from dpsyn.errors import InputError
from dpsyn.schema_suggest.columns import ColumnSuggestion, read_sample, suggest_column, suggest_columns
from dpsyn.schema_suggest.hints import _SHOWN_MARKERS, DEFAULT_ROWS, MAX_ROWS
from dpsyn.schema_suggest.render import render_yaml

__all__ = ["DEFAULT_ROWS", "MAX_ROWS", "ColumnSuggestion", "read_sample", "render_yaml", "suggest_column",
           "suggest_columns", "suggest_schema"]


def suggest_schema(
    path: str | Path, *, header: bool = True, sep: str = ",", rows: int = DEFAULT_ROWS
) -> str:
    """Read at most ``rows`` rows of ``path`` and return a YAML schema draft (nothing is stored)."""
    p = Path(path)
    df = read_sample(p, header=header, sep=sep, rows=rows)
    if df.shape[1] == 0:
        raise InputError(f"no columns found in {p.name} (check --sep)")
    cells = df.astype("string")
    leading = cells.apply(lambda s: s.str.match(r"^\s+\S").fillna(False)).to_numpy().mean() if len(df) else 0.0
    stripped = cells.apply(lambda s: s.str.strip())
    seen = {m for m in _SHOWN_MARKERS if stripped.isin([m]).to_numpy().any()}
    return render_yaml(
        suggest_columns(stripped),
        name=p.stem,
        source=p.name,
        header=header,
        sep=sep,
        rows=rows,
        na_markers=[m for m in _SHOWN_MARKERS if m in seen],
        skipinitialspace=leading >= 0.5,
    )
