"""Watermarks: keyed per-record codes and a robust statistical mark.

Two layers, both keyed with a :class:`WatermarkKey` (see ``keys``):

* **Per-record marks** (``codes``): the release's code ``HMAC-SHA256(key, batch_id, run_id,
  timestamp)[:16]`` and a row tag, an HMAC over the code and the row's published values, in a ``_wm`` column
  and, where the table has text columns, after an invisible U+2063 separator at the end of each text cell (the
  visible text is unchanged). Nobody without the key can forge a code, and a code copied onto other rows
  does not verify.
* **Statistical mark** (``statistical``): values nudged into keyed "green"
  cells of a public grid, within a bounded KS/TVD shift; detected by a
  binomial test from any fragment of the table, even without ``_wm``.

Keys come from ``DPSYN_WATERMARK_KEY`` (hex or text) or key files under
``$DPSYN_HOME/keys`` (``DPSYN_WATERMARK_KEYS_DIR`` for older keys kept for
verification). A key is never logged or written beside the data; only its id.
See docs/watermark.md.
"""

from __future__ import annotations

from dpsyn.watermark.codes import (
    CODE_HEX,
    INVISIBLE_SEP,
    WM_COLUMN,
    apply_watermark,
    batch_digest,
    canonical_rows,
    encode_fields,
    is_code,
    record_code,
    row_tags,
    split_mark,
    strip_text_codes,
    text_codes,
    verify_code,
    verify_rows,
)
from dpsyn.watermark.detection import ColumnScore, DetectionResult, KeyScore, detect_statistical, score_statistical
from dpsyn.watermark.keys import KEY_ENV, KEYS_DIR_ENV, WatermarkKey, load_key, load_keys, new_key_file
from dpsyn.watermark.statistical import (
    DEFAULT_ALPHA,
    DEFAULT_GRID,
    DEFAULT_STRENGTH,
    EmbedReport,
    cell_width,
    embed_statistical,
    embed_statistical_with_report,
)

__all__ = [
    "CODE_HEX",
    "DEFAULT_ALPHA",
    "DEFAULT_GRID",
    "DEFAULT_STRENGTH",
    "INVISIBLE_SEP",
    "KEYS_DIR_ENV",
    "KEY_ENV",
    "WM_COLUMN",
    "ColumnScore",
    "DetectionResult",
    "EmbedReport",
    "KeyScore",
    "WatermarkKey",
    "apply_watermark",
    "canonical_rows",
    "row_tags",
    "split_mark",
    "verify_rows",
    "cell_width",
    "detect_statistical",
    "embed_statistical",
    "embed_statistical_with_report",
    "encode_fields",
    "is_code",
    "load_key",
    "load_keys",
    "new_key_file",
    "batch_digest",
    "record_code",
    "score_statistical",
    "strip_text_codes",
    "text_codes",
    "verify_code",
]


from pydantic import BaseModel, ConfigDict, Field  # noqa: E402


class WatermarkConfig(BaseModel):
    """How the ``synthesize`` flow marks its output (per-record codes are always written)."""

    model_config = ConfigDict(extra="forbid")

    statistical: bool = Field(default=True, description="Embed the statistical (green-cell) watermark.")
    strength: float = Field(default=DEFAULT_STRENGTH, ge=0, le=0.1,
                            description="Largest KS / TVD shift the statistical mark may cause per column.")
    grid: int = Field(default=DEFAULT_GRID, ge=2, description="Cells across a numeric column's public range.")
    categorical: bool = Field(default=False, description="Also mark categorical columns (paired swaps).")
    key_block: str | None = Field(
        default=None, description="A Prefect Secret block holding the key (hex); default: DPSYN_WATERMARK_KEY or the key file."
    )


__all__ += ["WatermarkConfig"]
