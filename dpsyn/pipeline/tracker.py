"""Where a run's records go: the tracker seam between the pipeline and an experiment store.

The library never imports MLflow. A run reports to a :class:`Tracker`; ``tasks/tracking.py`` implements it on
MLflow (the one adapter), :class:`NullTracker` records nothing (a library run without a store). Every value a
tracker receives is classified in the release inventory (dpsyn/privacy/inventory.py).
"""

from __future__ import annotations

import uuid
from typing import Any, Protocol

__all__ = ["NullTracker", "Tracker"]


class Tracker(Protocol):
    def start(self, config, tags: dict[str, str]) -> str:
        """Open the run's record (params from ``config``); return its id."""

    def log_privacy(self, run_id: str, privacy: dict | None) -> None:
        """ε spent, δ and every mechanism (also for a run that stopped)."""

    def log_results(self, run_id: str, *, fit_summary: dict, batch: dict, validation: dict, watermark: dict,
                    report_html: str | None, ge_docs: str | None, extra_metrics: dict[str, float]) -> None:
        """Settings, the gate's DP statistics and reports of a run that reached the gate."""

    def log_model(self, run_id: str, model_path: str) -> str | None:
        """Log the fitted synthesizer; its URI (None: not stored)."""

    def register(self, run_id: str, name: str, tags: dict[str, Any], *, model_uri: str | None,
                 cumulative_epsilon: float | None) -> str | None:
        """A new registry version of ``name``; its version (None: no registry)."""

    def set_champion(self, name: str, version: str) -> None:
        """Point the serving alias at ``version``."""

    def mirror_lineage(self, run_id: str, code: str, lineage_url: str | None) -> None:
        """Copy the release's lineage row into the run's record."""

    def end(self, run_id: str, status: str) -> None:
        """Close the run's record (FINISHED or FAILED)."""


class NullTracker:
    """A tracker that keeps nothing: ids are fresh uuids, there is no registry."""

    def start(self, config, tags: dict[str, str]) -> str:
        return uuid.uuid4().hex

    def log_privacy(self, run_id: str, privacy: dict | None) -> None:
        return None

    def log_results(self, run_id: str, **kw) -> None:
        return None

    def log_model(self, run_id: str, model_path: str) -> str | None:
        return None

    def register(self, run_id: str, name: str, tags: dict[str, Any], *, model_uri: str | None,
                 cumulative_epsilon: float | None) -> str | None:
        return None

    def set_champion(self, name: str, version: str) -> None:
        return None

    def mirror_lineage(self, run_id: str, code: str, lineage_url: str | None) -> None:
        return None

    def end(self, run_id: str, status: str) -> None:
        return None
