"""Keyed per-record marks, carried in a ``_wm`` column and invisibly in text cells.

A row's mark is ``<code>-<tag>``:

* ``code``: the release's code, ``HMAC-SHA256(key, enc(batch_id, run_id, timestamp))`` truncated to 16 hex
  characters, where ``enc`` prefixes each field with its UTF-8 length (8 bytes, big-endian), so no two different
  triples encode to the same message. It names the release in the lineage ledger.
* ``tag``: ``HMAC-SHA256(key, enc(code, column names, the row's published values))`` truncated to 16 hex
  characters. It binds the mark to the row's content: a mark copied onto other rows does not verify
  (:func:`verify_rows`), so an auditor can tell a release from real rows with a pasted mark.

Values are canonical (:func:`canonical_rows`): columns by name, each value as its CSV cell reads back, numbers in
shortest round-trip form, so a published CSV, its Parquet copy and a reordering of its columns give one tag.
Nobody without the key can forge a code or a tag.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import math
import re

import pandas as pd

from dpsyn.watermark.keys import WatermarkKey

__all__ = [
    "CODE_HEX",
    "batch_digest",
    "canonical_rows",
    "row_tags",
    "split_mark",
    "verify_rows",
    "INVISIBLE_SEP",
    "WM_COLUMN",
    "apply_watermark",
    "encode_fields",
    "is_code",
    "record_code",
    "strip_text_codes",
    "text_codes",
    "verify_code",
]

WM_COLUMN = "_wm"
INVISIBLE_SEP = "\u2063"
CODE_HEX = 16
_DOMAIN = b"dpsyn-record-code-v2"
_BATCH_DOMAIN = b"dpsyn-batch-digest-v1"
_ROW_DOMAIN = b"dpsyn-row-tag-v1"
_CODE_RE = re.compile(r"[0-9a-f]{16}")
_MARK_PATTERN = r"[0-9a-f]{16}(?:-[0-9a-f]{16})?"  # code, or code-tag (a code alone: marks before row tags)
_MIDNIGHT_RE = re.compile(r"(\d{4}-\d{2}-\d{2})[ T]00:00:00(?:\.0+)?")


def encode_fields(*fields: str) -> bytes:
    """An injective encoding of a tuple of strings: each field as (8-byte length, UTF-8 bytes)."""
    out = bytearray()
    for f in fields:
        b = f.encode("utf-8")
        out += len(b).to_bytes(8, "big") + b
    return bytes(out)


def record_code(key: WatermarkKey, *, batch_id: str, run_id: str, timestamp: str) -> str:
    msg = _DOMAIN + encode_fields(batch_id, run_id, timestamp)
    return hmac.new(key.secret, msg, hashlib.sha256).hexdigest()[:CODE_HEX]


def batch_digest(key: WatermarkKey, digest: str, *, kind: str) -> str:
    """A keyed digest of a training batch (``digest``: the SHA-256 of its file or of its masked rows).

    The lineage ledger stores this, never the plain hash: a plain hash of private rows is a function of them
    that anyone can test a guess against; the HMAC under the pipeline's secret key is not (its owner can
    recompute and compare it to verify a batch)."""
    return hmac.new(key.secret, _BATCH_DOMAIN + encode_fields(kind, digest), hashlib.sha256).hexdigest()


def verify_code(key: WatermarkKey, code: str, *, batch_id: str, run_id: str, timestamp: str) -> bool:
    return hmac.compare_digest(code, record_code(key, batch_id=batch_id, run_id=run_id, timestamp=timestamp))


def is_code(text: object) -> bool:
    """Whether ``text`` has the shape of a record code (16 lowercase hex characters)."""
    return isinstance(text, str) and _CODE_RE.fullmatch(text) is not None


def split_mark(mark: object) -> tuple[str, str | None] | None:
    """(code, tag) of a row's mark (tag None for a bare code, as before row tags); None if not a mark."""
    if not isinstance(mark, str) or re.fullmatch(_MARK_PATTERN, mark) is None:
        return None
    code, _, tag = mark.partition("-")
    return code, tag or None


def _canon(cell: object) -> str:
    if cell is None or (isinstance(cell, float) and math.isnan(cell)) or cell is pd.NA:
        return "\x00"
    s = str(cell)
    try:
        f = float(s)
    except ValueError:
        m = _MIDNIGHT_RE.fullmatch(s)
        return m.group(1) if m else s
    if not math.isfinite(f):
        return s
    return str(int(f)) if f.is_integer() and abs(f) < 2**53 else repr(f)


def canonical_rows(df: pd.DataFrame) -> list[bytes]:
    """Each row's published values as one canonical byte string: the columns by name (``_wm`` left out, text marks
    stripped), each value as its CSV cell reads back (missing as one marker, numbers in shortest round-trip form
    with integral ones bare, midnight times as dates). A CSV, its Parquet copy and a reordering of its columns
    give the same bytes."""
    body = strip_text_codes(df.drop(columns=[WM_COLUMN], errors="ignore"))
    body.columns = [str(c) for c in body.columns]
    cols = sorted(body.columns)
    buf = io.StringIO()
    body[cols].to_csv(buf, index=False)
    buf.seek(0)
    cells = pd.read_csv(buf, dtype=str, keep_default_na=False, na_values=[""]) if cols else pd.DataFrame(
        index=range(len(df)))
    head = encode_fields(*cols)
    canon = [[_canon(v) for v in cells[c].tolist()] for c in cols]
    return [head + encode_fields(*vals) for vals in zip(*canon, strict=True)] if cols else [head] * len(df)


def row_tags(key: WatermarkKey, code: str, df: pd.DataFrame) -> list[str]:
    """The row tag of every row of ``df`` under release ``code`` (see the module docstring)."""
    prefix = _ROW_DOMAIN + encode_fields(code)
    return [hmac.new(key.secret, prefix + row, hashlib.sha256).hexdigest()[:CODE_HEX] for row in canonical_rows(df)]


def verify_rows(key: WatermarkKey, code: str, tags: list[str | None], df: pd.DataFrame) -> list[bool]:
    """Per row of ``df``, whether its tag is the one ``code`` gives its content (a missing tag never is)."""
    expected = row_tags(key, code, df)
    return [t is not None and hmac.compare_digest(t, e) for t, e in zip(tags, expected, strict=True)]


def apply_watermark(df: pd.DataFrame, code: str, *, key: WatermarkKey, text_columns: list[str] = ()) -> pd.DataFrame:
    """A copy of ``df`` with each row's mark (``code``-``tag``, the tag bound to the row's values) in ``_wm`` and
    appended invisibly to each text cell."""
    out = df.copy()
    marks = pd.Series([f"{code}-{t}" for t in row_tags(key, code, df)], index=out.index, dtype="string")
    for c in text_columns:
        if c in out.columns:
            out[c] = out[c].astype("string").fillna("") + INVISIBLE_SEP + marks
    out[WM_COLUMN] = marks
    return out


def strip_text_codes(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``df`` with every U+2063 + code suffix removed from its text cells (the visible text)."""
    out = df.copy()
    for c in out.columns:
        s = out[c]
        if c == WM_COLUMN or not (pd.api.types.is_string_dtype(s) or s.dtype == object):
            continue
        s = s.astype("string")
        if s.str.contains(INVISIBLE_SEP, regex=False).fillna(False).any():
            out[c] = s.str.replace(re.escape(INVISIBLE_SEP) + _MARK_PATTERN + "$", "", regex=True)
    return out


def text_codes(df: pd.DataFrame) -> pd.Series:
    """Per row, the mark found after the last U+2063 of any text cell (``<NA>`` if none)."""
    found = pd.Series(pd.NA, index=df.index, dtype="string")
    for c in df.columns:
        if c == WM_COLUMN:
            continue
        s = df[c]
        if not (pd.api.types.is_string_dtype(s) or s.dtype == object):
            continue
        s = s.astype("string")
        has = s.str.contains(INVISIBLE_SEP, regex=False).fillna(False)
        if not has.any():
            continue
        tail = s.str.rsplit(INVISIBLE_SEP, n=1).str[-1].str.strip()
        tail = tail.where(has & tail.str.fullmatch(_MARK_PATTERN).fillna(False))
        found = found.fillna(tail)
    return found
