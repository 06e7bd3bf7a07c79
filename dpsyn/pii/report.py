"""The scrub report: what scrubbing did, in counts only (no values)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ScrubReport"]


class ScrubReport(BaseModel):
    """What scrubbing did, in counts only (no values)."""

    model_config = ConfigDict(extra="forbid")

    mode: str
    model: str | None
    rows: int
    dropped_columns: list[str] = Field(default_factory=list)
    transformed_columns: list[str] = Field(default_factory=list)  # structured columns replaced by an operator
    scrubbed_columns: list[str] = Field(default_factory=list)
    kept_pii_columns: list[str] = Field(default_factory=list)  # PII columns below tier L1, passed through
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)  # column -> entity -> count
    # structured column -> {hint, detected, fraction, sampled, entity, operator} (no values)
    columns: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(sum(c.values()) for c in self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
