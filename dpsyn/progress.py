"""A process-wide progress hook, so long work can drive a progress bar.

dpsyn never draws anything itself: stages call :func:`report` and whoever
runs them (the CLI shows a rich progress display) installs a reporter with
:func:`set_reporter`. With no reporter, reports go to the debug log only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

__all__ = ["Reporter", "report", "set_reporter"]

logger = logging.getLogger(__name__)

Reporter = Callable[[str, int, int], None]
_reporter: Reporter | None = None


def set_reporter(reporter: Reporter | None) -> Reporter | None:
    """Install ``reporter(stage, done, total)``; returns the previous one."""
    global _reporter
    previous, _reporter = _reporter, reporter
    return previous


def report(stage: str, done: int, total: int) -> None:
    """Tell the reporter that ``done`` of ``total`` units of ``stage`` are finished."""
    if _reporter is not None:
        try:
            _reporter(stage, done, total)
        except Exception:  # a broken progress bar must never break a run
            logger.debug("progress reporter failed", exc_info=True)
    else:
        logger.debug("%s: %d/%d", stage, done, total)
