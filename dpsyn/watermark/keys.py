"""Watermark keys: the current key, older keys kept for verification, key ids.

The current key comes from ``DPSYN_WATERMARK_KEY`` (hex or text) or, for local
use, a key file created once under ``$DPSYN_HOME/keys`` (mode 0600). Rotating
keys means adding a new key file: verification tries every known key, so
datasets released under an older key still trace. A key is only ever named by
its id (a hash prefix); the secret is never logged, printed or written beside
the data.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from dpsyn.errors import ConfigError
from dpsyn.home import keys_dir

__all__ = ["KEYS_DIR_ENV", "KEY_ENV", "WatermarkKey", "load_key", "load_keys", "new_key_file"]

logger = logging.getLogger(__name__)

KEY_ENV = "DPSYN_WATERMARK_KEY"
KEYS_DIR_ENV = "DPSYN_WATERMARK_KEYS_DIR"
KEY_SUFFIX = ".key"


@dataclass(frozen=True)
class WatermarkKey:
    secret: bytes = field(repr=False)
    key_id: str

    def __repr__(self) -> str:  # never print the secret
        return f"WatermarkKey(key_id={self.key_id!r})"

    @classmethod
    def from_secret(cls, secret: bytes) -> WatermarkKey:
        if len(secret) < 16:
            raise ConfigError("watermark key must be at least 16 bytes")
        kid = hashlib.sha256(b"dpsyn-watermark-key-id\x00" + secret).hexdigest()[:8]
        return cls(secret, kid)


def _from_text(raw: str) -> WatermarkKey:
    try:
        secret = bytes.fromhex(raw)
    except ValueError:
        secret = raw.encode()
    return WatermarkKey.from_secret(secret)


def _read_key_file(path: Path) -> WatermarkKey:
    try:
        secret = bytes.fromhex(path.read_text().strip())
    except (ValueError, UnicodeDecodeError):  # the message never quotes the file's content
        raise ConfigError(f"watermark key file is not hex text: {path} (remove it to create a new key)") from None
    return WatermarkKey.from_secret(secret)


def new_key_file(path: Path) -> WatermarkKey:
    """Create a fresh random key at ``path`` (mode 0600) and return the key the file holds.

    The key is written to a private temporary file and hard-linked into place, so the file appears complete or
    not at all; if another process created it first (processes starting together in one home), its key is the
    one returned and used by all."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # atomic, and fails if the key file exists
            logger.info("created a new watermark key file under %s", path.parent)
        except FileExistsError:
            pass  # another process won: use its key
    finally:
        tmp.unlink(missing_ok=True)
    return _read_key_file(path)


def load_key(*, env: str = KEY_ENV, key_file: Path | None = None, create: bool = True) -> WatermarkKey:
    """The current watermark key from ``env``, else from ``key_file`` (created if missing and ``create``)."""
    raw = os.environ.get(env)
    if raw:
        return _from_text(raw)
    path = key_file or keys_dir() / "watermark.key"
    if not path.exists():
        if not create:
            raise ConfigError(f"no watermark key: set {env} or create {path}")
        return new_key_file(path)
    return _read_key_file(path)


def load_keys(*, env: str = KEY_ENV, keys_dir_env: str = KEYS_DIR_ENV, extra: list[WatermarkKey] = ()) -> list[WatermarkKey]:
    """Every key known here, for verification: ``extra`` first, then the env key, then key files.

    Key files are the ``*.key`` files of ``$DPSYN_WATERMARK_KEYS_DIR`` (if set)
    and of ``$DPSYN_HOME/keys``. Nothing is created. Duplicates (same key id)
    are dropped; an unreadable key file raises :class:`ConfigError` naming it.
    """
    found: list[WatermarkKey] = list(extra)
    raw = os.environ.get(env)
    if raw:
        found.append(_from_text(raw))
    folders = [Path(os.environ[keys_dir_env]).expanduser()] if os.environ.get(keys_dir_env) else []
    folders.append(keys_dir())
    for folder in folders:
        if folder.is_dir():
            found.extend(_read_key_file(p) for p in sorted(folder.glob(f"*{KEY_SUFFIX}")) if p.is_file())
    out: dict[str, WatermarkKey] = {}
    for k in found:
        out.setdefault(k.key_id, k)
    return list(out.values())
