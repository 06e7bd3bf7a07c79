"""Keyed per-record watermark codes.

A synthetic dataset's code is ``HMAC-SHA256(key, batch_id ‖ run_id ‖
timestamp)`` truncated to 16 hex characters. Unlike a plain hash of public
inputs (the seed's ``SHA256(batch id + timestamp)[:8]``), nobody without the
key can forge a valid code. Every record carries it in a ``_wm`` column and,
where the table has text columns, as an invisible U+2063 separator followed
by the code at the end of the text (the visible text is unchanged).

Keys come from ``DPSYN_WATERMARK_KEY`` (hex or text) or, for local use, a
key file created once under ``$DPSYN_HOME/keys`` (mode 0600). The key itself
is never logged or written beside the data; only its id (a hash prefix).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dpsyn.errors import ConfigError
from dpsyn.home import keys_dir

__all__ = ["INVISIBLE_SEP", "WM_COLUMN", "WatermarkKey", "apply_watermark", "load_key", "record_code", "verify_code"]

logger = logging.getLogger(__name__)

WM_COLUMN = "_wm"
INVISIBLE_SEP = "\u2063"
CODE_HEX = 16
KEY_ENV = "DPSYN_WATERMARK_KEY"


@dataclass(frozen=True)
class WatermarkKey:
    secret: bytes
    key_id: str

    def __repr__(self) -> str:  # never print the secret
        return f"WatermarkKey(key_id={self.key_id!r})"

    @classmethod
    def from_secret(cls, secret: bytes) -> WatermarkKey:
        if len(secret) < 16:
            raise ConfigError("watermark key must be at least 16 bytes")
        kid = hashlib.sha256(b"dpsyn-watermark-key-id\x00" + secret).hexdigest()[:8]
        return cls(secret, kid)


def load_key(*, env: str = KEY_ENV, key_file: Path | None = None, create: bool = True) -> WatermarkKey:
    """The watermark key from ``env``, else from ``key_file`` (created if missing and ``create``)."""
    raw = os.environ.get(env)
    if raw:
        try:
            secret = bytes.fromhex(raw)
        except ValueError:
            secret = raw.encode()
        return WatermarkKey.from_secret(secret)
    path = key_file or keys_dir() / "watermark.key"
    if not path.exists():
        if not create:
            raise ConfigError(f"no watermark key: set {env} or create {path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
        logger.info("created a new watermark key file under %s", path.parent)
    try:
        secret = bytes.fromhex(path.read_text().strip())
    except ValueError:  # the message never quotes the file's content
        raise ConfigError(f"watermark key file is not hex text: {path} (remove it to create a new key)") from None
    return WatermarkKey.from_secret(secret)


def record_code(key: WatermarkKey, *, batch_id: str, run_id: str, timestamp: str) -> str:
    msg = "\x1f".join([batch_id, run_id, timestamp]).encode()
    return hmac.new(key.secret, msg, hashlib.sha256).hexdigest()[:CODE_HEX]


def verify_code(key: WatermarkKey, code: str, *, batch_id: str, run_id: str, timestamp: str) -> bool:
    return hmac.compare_digest(code, record_code(key, batch_id=batch_id, run_id=run_id, timestamp=timestamp))


def apply_watermark(df: pd.DataFrame, code: str, *, text_columns: list[str] = ()) -> pd.DataFrame:
    """A copy of ``df`` with the code in ``_wm`` and appended invisibly to each text cell."""
    out = df.copy()
    for c in text_columns:
        if c in out.columns:
            out[c] = out[c].astype("string").fillna("") + INVISIBLE_SEP + code
    out[WM_COLUMN] = code
    return out
