"""The schema draft as YAML: kinds, PII classes and tiers, with placeholders where public facts must go."""

from __future__ import annotations

import json
import re

from dpsyn.schema import ColumnKind, PIIClass
from dpsyn.schema_suggest.columns import ColumnSuggestion

__all__ = ["render_yaml"]


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def render_yaml(
    suggestions: list[ColumnSuggestion],
    *,
    name: str,
    source: str,
    header: bool,
    sep: str,
    rows: int,
    na_markers: list[str] | None = None,
    skipinitialspace: bool = False,
) -> str:
    """The YAML draft: guesses, reasons and placeholders; nothing read from the data."""
    table = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.-") or "table"
    lines = [
        f"# Draft schema written by `dpsyn schema suggest` from the column names and at most {rows} rows",
        f"# of {source}. Every line is a guess: review it. Nothing read from the data is written here.",
        "# Replace each TODO with PUBLIC knowledge (a data dictionary, a coding standard, census",
        "# conventions), never with the min/max or categories of the rows (docs/privacy.md); the",
        "# schema does not load until every TODO is filled.",
        "schema_version: 1",
        f"name: {_q(table)}",
        'version: "1"',
        'description: ""',
        "# target: a categorical column to predict (optional)",
        "read:",
        f"  header: {'true' if header else 'false'}",
        f"  sep: {_q(sep)}",
    ]
    if skipinitialspace:
        lines.append("  skipinitialspace: true   # cells start with a space")
    if na_markers:
        lines.append(f"  na_values: [{', '.join(_q(m) for m in na_markers)}]   # missing-value markers seen; check")
    lines.append("columns:")
    for s in suggestions:
        lines.append(f"  - name: {_q(s.name)}")
        lines.append(f"    kind: {s.kind.value}")
        if s.kind == ColumnKind.numeric:
            if s.integer:
                lines.append("    integer: true")
            lines.append("    bounds: [TODO_low, TODO_high]   # public range (e.g. a code book or top-code), not the data's")
            lines.append("    # bins: [...]   # optional public bin edges from bounds[0] to bounds[1]")
        elif s.kind == ColumnKind.datetime:
            lines.append("    bounds: [TODO_first_date, TODO_last_date]   # ISO dates (YYYY-MM-DD) from public documentation")
        elif s.kind == ColumnKind.categorical:
            lines.append("    domain: TODO_categories   # a list, e.g. [A, B]: every public category (code book), not only those seen")
        if s.nullable and s.kind in (ColumnKind.numeric, ColumnKind.datetime, ColumnKind.categorical):
            lines.append("    nullable: true")
        if s.pii is not PIIClass.none:
            lines.append(f"    pii: {s.pii.value}")
        lines.append(f"    tier: {s.tier.value}")
        if s.quasi_identifier:
            lines.append("    quasi_identifier: true")
        if s.generalize_hint:
            lines.append(f"    # generalize: consider {s.generalize_hint} (docs/masking.md)")
        if s.kind == ColumnKind.text:
            lines.append('    # template: "..."   # optional public template for synthetic text, from synthetic columns')
        for r in s.reasons:
            lines.append(f"    # why: {r}")
    return "\n".join(lines) + "\n"
