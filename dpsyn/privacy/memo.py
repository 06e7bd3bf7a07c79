"""A memo of composed ε values for the σ searches, kept across processes in ``$DPSYN_HOME/cache/accountant.sqlite``.

A σ search composes the same mechanisms run after run: a schedule's runs share their configuration, and the
gate's DP-SGD plan on a small table is the same composition every time. One PRV composition costs up to a second,
and a search about eight of them, so a run spent 7-10 s re-deriving numbers it had derived before.

**Only the searches read it** (:meth:`dpsyn.privacy.PrivacyAccountant.calibrate` and ``sigma_for_share`` for
DP-SGD). Every check of the budget (``plan``, ``record``, ``check``, ``epsilon``) composes afresh in the process.
So a wrong value here (a damaged file, another Opacus) can only move the search's answer: too high an ε makes σ
larger than needed (utility, not privacy), too low an ε makes σ smaller, and then the fresh check refuses the
mechanism (``PrivacyBudgetExceededError``) before any noise is drawn: the memo cannot make a run overspend.

What it stores is public: noise multipliers, sampling rates and step counts (configuration, or functions of the
run's noisy counts, DP outputs), δ, and ε. Keys carry Opacus' version and :data:`VERSION`. Any database error
skips the memo. ``DPSYN_ACCOUNTANT_MEMO=0`` turns it off.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

__all__ = ["VERSION", "memo_path", "memoised"]

#: Bump when the composition code (dpsyn.privacy.accountant) changes what it returns.
VERSION = 2
ENV = "DPSYN_ACCOUNTANT_MEMO"


def memo_path() -> Path | None:
    if os.environ.get(ENV, "1") == "0":
        return None
    from dpsyn.home import dpsyn_home

    return dpsyn_home() / "cache" / "accountant.sqlite"


def _key(name: str, entries: tuple, delta: float) -> str:
    from importlib.metadata import version

    try:
        opacus = version("opacus")
    except Exception:  # noqa: BLE001 - an unknown version is a key of its own
        opacus = "?"
    return json.dumps([VERSION, opacus, name, [list(e) for e in entries], delta])  # floats as repr: exact


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=1.0, isolation_level=None)
    conn.execute("CREATE TABLE IF NOT EXISTS epsilon (key TEXT PRIMARY KEY, value REAL NOT NULL)")
    return conn


def memoised(compute: Callable[[str, tuple, float], float], name: str, entries: tuple, delta: float) -> float:
    """``compute(name, entries, delta)``, or its memoised value from an earlier process."""
    path = memo_path()
    if path is None or not entries:
        return compute(name, entries, delta)
    key = _key(name, entries, delta)
    try:
        with closing(_connect(path)) as conn:
            row = conn.execute("SELECT value FROM epsilon WHERE key = ?", (key,)).fetchone()
    except sqlite3.Error:
        return compute(name, entries, delta)
    if row is not None:
        return float(row[0])
    value = compute(name, entries, delta)
    try:
        with closing(_connect(path)) as conn:
            conn.execute("INSERT OR REPLACE INTO epsilon (key, value) VALUES (?, ?)", (key, float(value)))
    except sqlite3.Error:
        pass
    return value
