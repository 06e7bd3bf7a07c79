"""The file-format half of :func:`dpsyn.pii.scan.scan_paths`: each format turned into located items.

Text-like formats (text and log files, pickles as Latin-1 bytes, JSON, JSON Lines) and tabular
ones (CSV/TSV, Parquet, SQLite) are mixins over :class:`~dpsyn.pii.scan_analysis.Recorder`;
:class:`Scanner` walks folders and dispatches each file by its header and suffix.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dpsyn.pii.scan import (
    _BINARY_CHUNK,
    _FREE_TEXT_TOKENS,
    _SQLITE_MAGIC,
    JSON_SUFFIXES,
    JSONL_SUFFIXES,
    PARQUET_SUFFIXES,
    PICKLE_SUFFIXES,
    TABLE_SUFFIXES,
)
from dpsyn.pii.scan_analysis import Recorder, _Item
from dpsyn.pii.structured import column_tokens, header_hint

__all__ = ["Scanner"]


class _TextFormats(Recorder):
    """Text and log files, pickles (as bytes), JSON and JSON Lines."""

    def _read_text(self, path: Path) -> str:
        with path.open("rb") as fh:
            raw = fh.read() if self.config.max_bytes is None else fh.read(self.config.byte_cap + 1)
        if len(raw) > self.config.byte_cap:
            self._cap(str(path), f"only the first {self.config.byte_cap} bytes searched")
            raw = raw[: self.config.byte_cap]
        return raw.decode("utf-8", errors="replace")

    def scan_text(self, path: Path) -> None:
        file = str(path)
        text = self._read_text(path)
        lines = text.splitlines()
        if len(lines) > self.config.row_cap:
            self._cap(file, f"only the first {self.config.row_cap} of {len(lines)} lines searched")
            lines = lines[: self.config.row_cap]
        self.analyze(file, (_Item(line, f"line {i}", False) for i, line in enumerate(lines, start=1)))

    def scan_bytes(self, path: Path) -> None:
        file = str(path)
        size = path.stat().st_size
        if size > self.config.byte_cap:
            self._cap(file, f"only the first {self.config.byte_cap} of {size} bytes searched")
        with path.open("rb") as fh:
            offset = 0
            while offset < min(size, self.config.byte_cap):
                block = fh.read(min(_BINARY_CHUNK, self.config.byte_cap - offset))
                if not block:
                    break
                text = block.decode("latin-1")
                # patterns only (NER on binary noise only yields noise), offsets kept exact
                for start, _end, entity, score in self._analyze_text(text, ner=False, context=()):
                    self._add(entity, file, f"byte {offset + start}", score)
                offset += len(block)


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
            if n > self.config.row_cap:
                self._cap(file, f"only the first {self.config.row_cap} strings searched")
                break
            items.append(it)
        self.analyze(file, items)

    def scan_jsonl(self, path: Path) -> None:
        file = str(path)
        lines = self._read_text(path).splitlines()
        if len(lines) > self.config.row_cap:
            self._cap(file, f"only the first {self.config.row_cap} of {len(lines)} lines searched")
            lines = lines[: self.config.row_cap]
        items: list[_Item] = []
        for i, line in enumerate(lines, start=1):
            try:
                obj = json.loads(line)
            except ValueError:
                items.append(_Item(line, f"line {i}", False))
                continue
            items.extend(self._walk_json(obj, f"line {i}: $", None))
        self.analyze(file, items)



class _TableFormats(_TextFormats):
    """CSV/TSV, Parquet and SQLite tables."""

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
            if n > self.config.row_cap:
                self._cap(file, f"only the first {self.config.row_cap} rows searched")
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
        if total > self.config.row_cap:
            self._cap(file, f"only the first {self.config.row_cap} of {total} rows searched")
        items: list[_Item] = []
        row0 = 0
        for batch in pf.iter_batches(batch_size=min(self.config.row_cap, 10_000), columns=cols):
            take = min(batch.num_rows, self.config.row_cap - row0)
            for name in cols:
                cname, hinted, ctx = self._column_meta(name, bare_name=True)
                values = batch.column(name).to_pylist()[:take]
                items.extend(
                    _Item(v, f"row {row0 + i + 1}, column {cname}", hinted, ctx)
                    for i, v in enumerate(values)
                    if isinstance(v, str)
                )
            row0 += take
            if row0 >= self.config.row_cap:
                break
        self.analyze(file, items)


    def scan_sqlite(self, path: Path) -> None:
        """Every table; a database in WAL mode is read from a private copy with its -wal file, so that
        recent (not yet checkpointed) rows are searched too, and the original is never written."""
        import shutil

        from dpsyn.home import scratch_dir

        file = str(path)
        wal = path.with_name(path.name + "-wal")
        with scratch_dir("scan-copy") as tmp:  # a copy of the rows: private, swept if the process is killed
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
        if total > self.config.row_cap:
            self._cap(file, f"table {table}: only the first {self.config.row_cap} of {total} rows searched")
        items: list[_Item] = []
        for col in cols:
            c = '"' + col.replace('"', '""') + '"'
            name, hinted, ctx = self._column_meta(col, bare_name=False)
            sel = f"SELECT {rowid}, {c} FROM {q}" if rowid else f"SELECT NULL, {c} FROM {q}"
            sql = f"{sel} WHERE typeof({c}) = 'text' LIMIT ?"
            for n, (rid, value) in enumerate(con.execute(sql, (self.config.row_cap,)), start=1):
                where = rid if rid is not None else f"row{n}"
                items.append(_Item(value, f"{table}.{col}.{where}", hinted, ctx))
        self.analyze(file, items)




def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16) == _SQLITE_MAGIC
    except OSError:
        return False



class Scanner(_TableFormats):
    """Walks paths and dispatches each file to its format."""

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

