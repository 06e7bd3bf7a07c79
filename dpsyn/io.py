"""Read tables as their schema declares; write and publish atomically.

Reading never modifies the input file. Errors name the file, the column and
the row number, never a cell value (a cell may be an identifier).

Publishing stages everything in a hidden sibling folder of the destination
and renames it into place in one step, so a reader sees either nothing or the
whole output, never a half-written one.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import logging
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from dpsyn.errors import ConfigError, InputError, OutputExistsError, SchemaError
from dpsyn.schema import ColumnKind, TableSchema

__all__ = [
    "read_mapping_file",
    "write_parquet_stream",
    "check_output_dir",
    "coerce_to_schema",
    "domain_problems",
    "file_sha256",
    "frame_sha256",
    "parse_csv_bytes",
    "publish_dir",
    "read_table",
    "staged_dir",
    "write_table",
]

logger = logging.getLogger(__name__)

_PARQUET_SUFFIXES = (".parquet", ".pq")


def check_file(p: Path) -> None:
    """Raise :class:`InputError` for a missing, folder or empty data file."""
    if not p.exists():
        raise InputError(f"data file not found: {p}")
    if p.is_dir():
        raise InputError(f"data path is a folder, not a file: {p}")
    if p.stat().st_size == 0:
        raise InputError(f"data file is empty: {p}")


def file_format(p: Path, schema: TableSchema) -> str:
    """"parquet" or "csv": the schema's ``read.format``, or guessed from the suffix when it is "auto"."""
    fmt = schema.read.format
    if fmt == "auto":
        fmt = "parquet" if p.suffix.lower() in _PARQUET_SUFFIXES else "csv"
    return fmt


def read_table(path: str | Path, schema: TableSchema, *, check_domains: bool = True) -> pd.DataFrame:
    """Read ``path`` as ``schema`` declares and return a frame with the schema's columns.

    Numeric columns come back as float64 (NaN for missing), datetimes as
    ``datetime64``, everything else as pandas strings. Raises
    :class:`InputError` for a missing, empty, non-UTF-8 or mismatched file.
    """
    p = Path(path)
    check_file(p)
    fmt = file_format(p, schema)
    df = _read_parquet(p, schema) if fmt == "parquet" else _read_csv(p, schema)
    if len(df) == 0:
        raise InputError(f"data file has no data rows: {p}")
    return coerce_to_schema(df, schema, source=p.name, check_domains=check_domains)


def _read_csv(p: Path, schema: TableSchema) -> pd.DataFrame:
    raw = p.read_bytes()
    return parse_csv_bytes(raw, p, schema)


MAX_FIELD_BYTES = 16 * 1024 * 1024  # one cell; a larger one is refused with its line (exit 2)


def _records(reader, p: Path, where):
    """(line number, fields) of a csv reader, its errors as one line naming the line (never a value)."""
    previous = csv.field_size_limit(MAX_FIELD_BYTES)
    try:
        lineno = 0
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                return
            except csv.Error as e:
                kind = "a field larger than 16 MiB" if "field larger" in str(e) else "a malformed record"
                raise InputError(f"{p.name} line {where(reader.line_num)} holds {kind}; fix the file (a cell "
                                 "must be at most 16 MiB, quotes balanced)") from None
            lineno += 1
            yield lineno, fields
    finally:
        csv.field_size_limit(previous)


def parse_csv_bytes(raw: bytes, p: Path, schema: TableSchema, *, line_offset: int = 0,
                    header_lines: int = 0) -> pd.DataFrame:
    """Parse CSV bytes of ``p`` as ``schema`` declares (raw strings; see :func:`coerce_to_schema`).

    For a part of a file (:mod:`dpsyn.pipeline.partition`), ``raw`` is the file's header lines followed by a run of
    whole records; line numbers past the first ``header_lines`` lines are shifted by ``line_offset`` so that
    messages name the line in the file.
    """
    ro = schema.read

    def where(line: int) -> int:
        return line + line_offset if line > header_lines else line

    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = where(raw[: e.start].count(b"\n") + 1)
        raise InputError(f"data file is not UTF-8 text: {p} (first bad byte on line {line}); re-encode it as UTF-8") from None
    text = text.removeprefix("\ufeff")  # a byte-order mark some editors write before the first line
    if not text.strip():
        raise InputError(f"data file is empty: {p}")
    names = schema.column_names
    expected = len(names)
    # Check the field count per line ourselves, so the error can name the line and not a value.
    reader = csv.reader(io.StringIO(text), delimiter=ro.sep, skipinitialspace=ro.skipinitialspace)
    header: list[str] | None = None
    for lineno, fields in _records(reader, p, where):
        if not fields or (len(fields) == 1 and not fields[0].strip()):
            continue
        if ro.comment and fields[0].startswith(ro.comment):
            continue
        if ro.header and header is None:
            header = [f.strip() for f in fields]
            twice = sorted({n for n in header if header.count(n) > 1})
            if twice:
                raise SchemaError(f"the header of {p.name} names {', '.join(twice)} more than once; each column of "
                                  f"schema '{schema.name}' must appear once")
            missing = [n for n in names if n not in header]
            extra = [n for n in header if n not in names]
            if len(missing) == expected:
                # No schema column found: the first line is likely a data row, so never echo it.
                raise SchemaError(
                    f"first line of {p.name} has none of the column names of schema '{schema.name}': "
                    "the file has no header or a different one (check read.header)"
                )
            if missing or extra:
                parts = []
                if missing:
                    parts.append(f"missing {', '.join(missing)}")
                if extra:
                    parts.append(f"unexpected {', '.join(extra)}")
                raise SchemaError(
                    f"columns of {p.name} do not match schema '{schema.name}': {'; '.join(parts)}"
                )
            continue
        want = len(header) if header is not None else expected
        if len(fields) != want:
            raise SchemaError(
                f"{p.name} line {where(lineno)} has {len(fields)} fields but schema '{schema.name}' declares {want} "
                "columns"
            )
    if ro.header and header is None:
        raise InputError(f"data file has a header but no data rows: {p}")
    if ro.comment:
        text = "\n".join(line for line in text.split("\n") if not line.lstrip().startswith(ro.comment))
    df = pd.read_csv(
        io.StringIO(text),
        sep=ro.sep,
        header=0 if ro.header else None,
        names=None if ro.header else names,
        skipinitialspace=ro.skipinitialspace,
        na_values=ro.na_values,
        keep_default_na=False,
        dtype=str,
        engine="c",
        skip_blank_lines=True,
    )
    if ro.header:
        df.columns = [str(c).strip() for c in df.columns]
    return df


def _read_parquet(p: Path, schema: TableSchema) -> pd.DataFrame:
    try:
        df = pd.read_parquet(p)
    except Exception as e:  # pyarrow raises many types; none of them carry cell values
        raise InputError(f"cannot read {p.name} as Parquet ({type(e).__name__})") from None
    missing = [n for n in schema.column_names if n not in df.columns]
    extra = [str(n) for n in df.columns if n not in schema.column_names]
    if missing or extra:
        parts = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unexpected {', '.join(extra)}"] if extra else []
        )
        raise SchemaError(f"columns of {p.name} do not match schema '{schema.name}': {'; '.join(parts)}")
    return df


def coerce_to_schema(
    df: pd.DataFrame, schema: TableSchema, *, source: str = "table", check_domains: bool = True
) -> pd.DataFrame:
    """Convert a raw frame to the schema's dtypes (column order as in the schema).

    Problems are gathered and raised together; messages carry column names only: never values, and no counts
    (a count of bad values is a statistic of the private rows, and the message reaches the flow's state).
    """
    out = {}
    problems: list[str] = []
    for col in schema.columns:
        s = df[col.name]
        if col.kind == ColumnKind.numeric:
            s_str = s.astype("string").str.strip()
            num = pd.to_numeric(s_str, errors="coerce")
            bad = int((num.isna() & s_str.notna() & (s_str != "")).sum())
            if bad:
                problems.append(f"column '{col.name}': non-numeric value(s)")
            out[col.name] = num.astype("float64")
            if not col.nullable and check_domains:
                if int(num.isna().sum()) - bad:
                    problems.append(f"column '{col.name}': missing value(s) but the column is not nullable")
        elif col.kind == ColumnKind.datetime:
            s_str = s.astype("string").str.strip().replace("", pd.NA)  # an empty field is a missing date
            dt = pd.to_datetime(s_str, errors="coerce")
            bad = int((dt.isna() & s_str.notna()).sum())
            if bad:
                problems.append(f"column '{col.name}': unparseable date(s)")
            out[col.name] = dt
        else:
            s_str = s.astype("string").str.strip()
            if col.name == schema.target and schema.read.label_suffixes:
                for suf in schema.read.label_suffixes:
                    ends = s_str.str.endswith(suf).fillna(False)
                    s_str = s_str.where(~ends, s_str.str.slice(0, -len(suf)))
            if col.kind == ColumnKind.categorical:
                s_str = s_str.replace("", pd.NA)
            out[col.name] = s_str
            if col.kind == ColumnKind.categorical and check_domains and col.generalize is None:
                problems.extend(domain_problems(col, s_str))
    if problems:
        raise SchemaError(f"{source} does not conform to schema '{schema.name}': {'; '.join(problems)}")
    return pd.DataFrame(out, index=pd.RangeIndex(len(df)))


def domain_problems(col, s: pd.Series) -> list[str]:
    problems = []
    known = s.isin(col.domain) | s.isna()
    if not bool(known.all()):
        problems.append(f"column '{col.name}': value(s) outside the declared domain")
    if not col.nullable and bool(s.isna().any()):
        problems.append(f"column '{col.name}': missing value(s) but the column is not nullable")
    return problems


def write_table(df: pd.DataFrame, path: str | Path) -> Path:
    """Write a frame as CSV or Parquet (by suffix), via a temporary file and a rename."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        if p.suffix.lower() in _PARQUET_SUFFIXES:
            df.to_parquet(tmp, index=False)
        else:
            df.to_csv(tmp, index=False, encoding="utf-8")
        os.replace(tmp, p)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return p


def write_parquet_stream(tables, path: str | Path, *, row_group_rows: int | None = None) -> int:
    """Write an iterable of pyarrow tables (same columns) to one Parquet file, atomically; returns the rows.

    One table is held at a time. The file appears at ``path`` only when every table was written (a
    temporary file and a rename); an error leaves nothing there. An empty iterable raises ``ValueError``.
    """
    import pyarrow.parquet as pq

    p = Path(path)
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex[:8]}.tmp")
    writer = None
    rows = 0
    try:
        for table in tables:
            if writer is None:
                writer = pq.ParquetWriter(tmp, table.schema)
            if table.num_rows:
                writer.write_table(table, row_group_size=row_group_rows or max(table.num_rows, 1))
            rows += table.num_rows
        if writer is None:
            raise ValueError("no tables to write")
        writer.close()
        writer = None
        os.replace(tmp, p)
    finally:
        if writer is not None:
            writer.close()
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return rows


@contextlib.contextmanager
def staged_dir(dest: str | Path, *, overwrite: bool = False, on_stage=None) -> Iterator[Path]:
    """Yield a staging folder; on clean exit publish it at ``dest`` in one rename.

    On any exception the staging folder is removed and ``dest`` is untouched.
    An existing non-empty ``dest`` raises :class:`OutputExistsError` unless
    ``overwrite``; then the old folder is replaced (renamed aside, then removed).
    ``on_stage(path)`` is called with the staging folder before anything is
    written to it (so that a killed process's leftover can be found and removed).
    """
    dest = Path(dest).absolute()
    check_output_dir(dest, overwrite=overwrite)
    dest.parent.mkdir(parents=True, exist_ok=True)
    stage = dest.parent / f".{dest.name}.staging-{uuid.uuid4().hex[:8]}"
    if on_stage is not None:
        on_stage(stage)
    stage.mkdir()
    try:
        yield stage
        publish_dir(stage, dest, overwrite=overwrite)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def check_output_dir(dest: Path, *, overwrite: bool) -> None:
    if dest.exists() and not dest.is_dir():
        raise OutputExistsError(f"output path exists and is not a folder: {dest}")
    if dest.is_dir() and any(dest.iterdir()) and not overwrite:
        raise OutputExistsError(f"output folder is not empty: {dest} (choose another --out, or pass --overwrite)")


def check_not_inside(data: Path, dest: Path) -> None:
    """Refuse an output folder that is the input file, or holds it (publishing replaces the folder)."""
    data, dest = Path(data).resolve(), Path(dest).resolve()
    if data == dest or dest in data.parents:
        raise InputError(f"the output folder {dest} holds the input file {data.name}: publishing replaces the folder; "
                         "choose an --out outside the input's folder")


def probe_writable(dest: Path) -> None:
    """Before anything is spent: can the output folder be created and written? (A file is created and removed in
    ``dest`` or its nearest existing parent.)"""
    probe = Path(dest)
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        if not probe.is_dir():
            raise NotADirectoryError(str(probe))
        fd, name = tempfile.mkstemp(prefix=".dpsyn-probe-", dir=probe)
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        raise InputError(f"cannot write the output folder {dest} ({type(e).__name__} in {probe}); choose another "
                         "--out or fix its permissions; nothing was spent") from None


def publish_dir(stage: Path, dest: Path, *, overwrite: bool = False) -> Path:
    """Move a fully written folder to ``dest`` atomically (same filesystem)."""
    check_output_dir(dest, overwrite=overwrite)
    old = None
    if dest.exists():
        old = dest.parent / f".{dest.name}.old-{uuid.uuid4().hex[:8]}"
        os.rename(dest, old)
    try:
        os.rename(stage, dest)
    except BaseException:
        if old is not None:
            os.rename(old, dest)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return dest


def file_sha256(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def frame_sha256(df: pd.DataFrame) -> str:
    """Content hash of a frame (column names, dtypes and values, order-sensitive)."""
    h = hashlib.sha256()
    h.update("\x1f".join(map(str, df.columns)).encode())
    h.update("\x1f".join(map(str, df.dtypes)).encode())
    hashed = pd.util.hash_pandas_object(df, index=False).to_numpy()
    h.update(np.ascontiguousarray(hashed).tobytes())
    return h.hexdigest()


def read_mapping_file(path: str | Path, what: str, *, holds: str = "a mapping", hint: str = "") -> dict:
    """The mapping in a YAML/JSON file; an empty file is {}. Errors (``ConfigError``) name the file and what it
    should hold, never its content. ``what``: e.g. "config file", "recognizer registry"; ``hint``: appended to
    the not-found message (which setting named the file); ``holds``: what the mapping is, for the error."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{what} not found: {path}{hint}")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (UnicodeDecodeError, yaml.YAMLError):
        raise ConfigError(f"{what} is not valid YAML/JSON text: {path}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{what} must hold {holds}: {path}")
    return raw
