"""Reading tables the way every stage and tool reads them: the real rows masked, a synthetic table unmarked.

* :func:`read_masked`: a private file read as its schema declares (:func:`dpsyn.io.read_table`) and masked by tier
  (:func:`dpsyn.masking.mask_table`): what the gate, the audits and the owner tools compare against.
* :func:`strip_watermark` / :func:`read_synthetic`: a published table without its record codes (the ``_wm``
  column and the invisible marks in text cells), coerced to the schema's columns it has.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpsyn.schema import TableSchema

__all__ = ["read_masked", "read_synthetic", "strip_watermark"]


def read_masked(path: str | Path, schema: TableSchema) -> pd.DataFrame:
    """The rows of ``path`` read as ``schema`` declares, then masked by tier (the file is never modified)."""
    from dpsyn.io import read_table
    from dpsyn.masking import mask_table

    masked, _ = mask_table(read_table(path, schema), schema)
    return masked


def strip_watermark(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` without the record-code column and without the codes appended to its text cells."""
    from dpsyn.watermark import WM_COLUMN, strip_text_codes

    return strip_text_codes(df.drop(columns=[WM_COLUMN], errors="ignore"))


def read_synthetic(path: str | Path, schema: TableSchema) -> pd.DataFrame:
    """A synthetic table (CSV or Parquet) as published, unmarked and coerced to the schema's columns it holds."""
    from dpsyn.io import coerce_to_schema
    from dpsyn.lineage import read_any

    syn = strip_watermark(read_any(path))
    present = schema.model_copy(update={"columns": [c for c in schema.columns if c.name in syn.columns]})
    return coerce_to_schema(syn, present, source="synthetic file", check_domains=False)
