"""Keyed per-record codes, carried in a ``_wm`` column and invisibly in text cells.

A synthetic dataset's code is ``HMAC-SHA256(key, enc(batch_id, run_id,
timestamp))`` truncated to 16 hex characters, where ``enc`` prefixes each field
with its UTF-8 length (8 bytes, big-endian), so no two different triples encode
to the same message (a plain separator join would let ``("a\\x1fb", "c")`` and
``("a", "b\\x1fc")`` collide). Unlike a plain hash of public inputs (the seed's
``SHA256(batch id + timestamp)[:8]``), nobody without the key can forge a code.
"""

from __future__ import annotations

import hashlib
import hmac
import re

import pandas as pd

from dpsyn.watermark.keys import WatermarkKey

__all__ = [
    "CODE_HEX",
    "batch_digest",
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
_CODE_RE = re.compile(r"[0-9a-f]{16}")


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


def apply_watermark(df: pd.DataFrame, code: str, *, text_columns: list[str] = ()) -> pd.DataFrame:
    """A copy of ``df`` with the code in ``_wm`` and appended invisibly to each text cell."""
    out = df.copy()
    for c in text_columns:
        if c in out.columns:
            out[c] = out[c].astype("string").fillna("") + INVISIBLE_SEP + code
    out[WM_COLUMN] = code
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
            out[c] = s.str.replace(re.escape(INVISIBLE_SEP) + _CODE_RE.pattern.strip("^$") + "$", "", regex=True)
    return out


def text_codes(df: pd.DataFrame) -> pd.Series:
    """Per row, the code found after the last U+2063 of any text cell (``<NA>`` if none)."""
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
        tail = tail.where(has & tail.str.fullmatch(_CODE_RE.pattern).fillna(False))
        found = found.fillna(tail)
    return found
