"""Verify that a file is the training batch of a release, with the data owner's key (``dpsyn audit batch``).

A release names its training batch by a random id; the lineage ledger keeps, for that id, the keyed digests
(HMAC-SHA256 under the pipeline's key) of the input file's SHA-256 and of the masked rows' content hash. Whoever
holds the key recomputes the file's digest and compares: equal means this file is byte for byte the input the run
read. Without the key the digests reveal nothing about the rows (docs/privacy.md, "Lineage without content
hashes").
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from dpsyn.errors import InputError
from dpsyn.io import file_sha256
from dpsyn.lineage.ledger import Ledger
from dpsyn.watermark import WatermarkKey, batch_digest

__all__ = ["BatchVerdict", "verify_batch"]


class BatchVerdict(BaseModel):
    """``match``: the file is the batch's input; ``differs``: it is not; ``no_key``: the ledger's digests were made
    with a key that is not available here; ``no_digest``: the release recorded no digest."""

    batch_id: str
    path: str
    verdict: Literal["match", "differs", "no_key", "no_digest"]
    key_id: str | None = None


def verify_batch(path: str | Path, batch_id: str, *, ledger: Ledger, keys: list[WatermarkKey]) -> BatchVerdict:
    """Compare ``path``'s keyed digest with the one recorded for training batch ``batch_id``."""
    row = ledger.batch_digests(batch_id)
    if row is None:
        raise InputError(f"training batch {batch_id} is not in the lineage ledger {ledger.path}")
    p = Path(path)
    if row.get("input_digest") is None:
        return BatchVerdict(batch_id=batch_id, path=str(p), verdict="no_digest")
    key = next((k for k in keys if k.key_id == row["key_id"]), None)
    if key is None:
        return BatchVerdict(batch_id=batch_id, path=str(p), verdict="no_key", key_id=row["key_id"])
    mine = batch_digest(key, file_sha256(p), kind="input")
    same = hmac.compare_digest(mine, row["input_digest"])
    return BatchVerdict(batch_id=batch_id, path=str(p), verdict="match" if same else "differs", key_id=key.key_id)
