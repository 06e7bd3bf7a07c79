"""Cut an input file into partitions and read one partition as its schema declares.

Parquet partitions are runs of whole row groups (read with
``ParquetFile.read_row_groups``: only those groups are decoded); CSV partitions
are byte ranges of whole records, found by one streaming pass over the file
that tracks quote parity, so a quoted field spanning lines is never cut. A CSV
partition is read as the file's header part followed by its own bytes, through
the same parser as a whole file (:func:`dpsyn.io.parse_csv_bytes`), and error
messages name lines of the file. The concatenation of all partitions, read
this way, equals :func:`dpsyn.io.read_table` of the whole file.

Nothing here returns or logs a value: plans hold offsets, line numbers and row
group numbers only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from dpsyn.errors import InputError, SchemaError
from dpsyn.io import check_file, coerce_to_schema, file_format, parse_csv_bytes, read_table
from dpsyn.schema import TableSchema

__all__ = ["Partition", "partition_seed", "plan_partitions", "read_partition"]


class Partition(BaseModel):
    """Where one partition lies in the input file: byte ranges or row groups, never values."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=0)
    count: int = Field(ge=1, description="Partitions of the table.")
    format: str  # "csv", "parquet" or "whole"
    rows: int = Field(default=0, ge=0, description="Data records in this partition (Parquet: exact; CSV: records).")
    start: int = 0  # csv: byte range of the partition's records
    end: int = 0
    first_line: int = 1  # csv: line number of the first record
    header_end: int = 0  # csv: bytes of the header part (leading comment lines and the header line)
    header_lines: int = 0
    row_groups: list[int] = Field(default_factory=list)  # parquet


def plan_partitions(path: str | Path, schema: TableSchema, rows: int) -> list[Partition]:
    """Partitions of about ``rows`` data rows each (``rows`` ≤ 0: one partition, the whole file).

    Raises :class:`InputError` for a missing, empty or row-less file and :class:`SchemaError` for columns that
    do not match the schema, as :func:`dpsyn.io.read_table` would.
    """
    p = Path(path)
    check_file(p)
    if rows <= 0:
        return [Partition(index=0, count=1, format="whole")]
    fmt = file_format(p, schema)
    return _plan_parquet(p, schema, rows) if fmt == "parquet" else _plan_csv(p, schema, rows)


def _plan_parquet(p: Path, schema: TableSchema, rows: int) -> list[Partition]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(p)
    except Exception as e:  # pyarrow raises many types; none of them carry cell values
        raise InputError(f"cannot read {p.name} as Parquet ({type(e).__name__})") from None
    names = pf.schema_arrow.names
    missing = [n for n in schema.column_names if n not in names]
    extra = [str(n) for n in names if n not in schema.column_names]
    if missing or extra:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unexpected {', '.join(extra)}"] if extra else [])
        raise SchemaError(f"columns of {p.name} do not match schema '{schema.name}': {'; '.join(parts)}")
    groups: list[list[int]] = []
    sizes: list[int] = []
    for g in range(pf.metadata.num_row_groups):
        n = pf.metadata.row_group(g).num_rows
        if n == 0:
            continue
        if groups and sizes[-1] + n <= rows:
            groups[-1].append(g)
            sizes[-1] += n
        else:
            groups.append([g])
            sizes.append(n)
    if not groups:
        raise InputError(f"data file has no data rows: {p}")
    return [Partition(index=i, count=len(groups), format="parquet", rows=n, row_groups=g)
            for i, (g, n) in enumerate(zip(groups, sizes, strict=True))]


def _plan_csv(p: Path, schema: TableSchema, rows: int) -> list[Partition]:
    ro = schema.read
    comment = ro.comment.encode() if ro.comment else None
    header_end, header_lines = 0, 0
    need_header = ro.header
    spans: list[list[int]] = []  # [start, end, first_line, records]
    cur: list[int] | None = None
    pos = lineno = 0
    rec_start = rec_line = 0
    in_quote = False
    saw_text = False
    with open(p, "rb") as f:
        for line in f:
            lineno += 1
            start, pos = pos, pos + len(line)
            if not in_quote:
                if not line.strip():
                    continue  # blank lines and comment lines are no records (the parser skips them too)
                saw_text = True
                if comment and line.lstrip().startswith(comment):
                    continue
                rec_start, rec_line = start, lineno
            if line.count(b'"') % 2:
                in_quote = not in_quote
            if in_quote:
                continue  # a quoted field goes on past this line
            if need_header:
                header_end, header_lines, need_header = pos, lineno, False
                continue
            if cur is None:
                cur = [rec_start, pos, rec_line, 0]
                spans.append(cur)
            cur[1] = pos
            cur[3] += 1
            if cur[3] >= rows:
                cur = None
    if not saw_text:
        raise InputError(f"data file is empty: {p}")
    if need_header:
        raise InputError(f"data file has a header but no data rows: {p}")
    if not spans:
        raise InputError(f"data file has no data rows: {p}")
    spans[-1][1] = pos  # trailing blank or comment lines belong to the last partition
    if header_end:  # the header must match the schema before any partition is read
        with open(p, "rb") as f:
            parse_csv_bytes(f.read(header_end), p, schema)
    return [Partition(index=i, count=len(spans), format="csv", rows=r, start=s, end=e, first_line=ln,
                      header_end=header_end, header_lines=header_lines)
            for i, (s, e, ln, r) in enumerate(spans)]


def read_partition(path: str | Path, schema: TableSchema, part: Partition, *, check_domains: bool = True
                   ) -> pd.DataFrame:
    """Read one partition as ``schema`` declares (dtypes and checks as :func:`dpsyn.io.read_table`).

    Errors name the file, the column, the line (CSV) and counts, never a value; a domain error counts the
    partition's rows only.
    """
    p = Path(path)
    if part.format == "whole":
        return read_table(p, schema, check_domains=check_domains)
    check_file(p)
    source = p.name if part.count == 1 else f"{p.name} (partition {part.index + 1} of {part.count})"
    if part.format == "parquet":
        import pyarrow.parquet as pq

        try:
            df = pq.ParquetFile(p).read_row_groups(part.row_groups, columns=schema.column_names).to_pandas()
        except Exception as e:
            raise InputError(f"cannot read {p.name} as Parquet ({type(e).__name__})") from None
    else:
        with open(p, "rb") as f:
            head = f.read(part.header_end)
            f.seek(part.start)
            body = f.read(part.end - part.start)
        df = parse_csv_bytes(head + body, p, schema, line_offset=part.first_line - part.header_lines - 1,
                             header_lines=part.header_lines)
    out = coerce_to_schema(df, schema, source=source, check_domains=check_domains)
    return out


def partition_seed(seed: int | None, index: int) -> int | None:
    """The seed of partition ``index``'s coins when a run is seeded (tests): ``seed`` itself for the first
    partition (an unpartitioned run draws the same coins), an independent derived seed for the others."""
    if seed is None or index == 0:
        return seed
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0] >> 1)
