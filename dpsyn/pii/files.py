"""Scrub a table straight from its file, so the raw frame never leaves memory."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpsyn.io import read_table
from dpsyn.pii.config import ScrubConfig
from dpsyn.pii.scrub import ScrubReport, scrub_table
from dpsyn.schema import TableSchema, load_schema

__all__ = ["scrub_file"]


def scrub_file(
    path: str | Path, schema: TableSchema | str, config: ScrubConfig | None = None
) -> tuple[pd.DataFrame, ScrubReport]:
    """Read ``path`` as ``schema`` declares and scrub it (see :func:`scrub_table`)."""
    if not isinstance(schema, TableSchema):
        schema = load_schema(schema)
    return scrub_table(read_table(path, schema, check_domains=True), schema, config)
