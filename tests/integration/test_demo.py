"""`dpsyn demo` as a user runs it: no seeded identifier may survive anywhere it writes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_noise import noise_lines

pytestmark = pytest.mark.slow


def _files(root: Path):
    for p in root.rglob("*"):
        if p.is_file():
            yield p


def test_noise_lines_catches_what_demo_printed():
    """The lines a successful demo printed before issue 23's fix are caught; dpsyn's own notes are not."""
    seen = (
        "2026/12/03 13:00:42 INFO mlflow.store.db.utils: Creating initial MLflow database tables...\n"
        ".venv/lib/python3.11/site-packages/mlflow/pyfunc/utils/data_validation.py:187: UserWarning: Add type hints "
        "to the `predict` method to enable data validation\n"
        "  color_warning(\n"
        "13:05:54.130 | ERROR   | prefect.server.services.task_run_recorder - Error flushing 1 events (1 to retry, "
        "0 dropped)\n"
        "Traceback (most recent call last):\n"
        "asyncio.exceptions.CancelledError: Cancelled via cancel scope 7f8d02c414e0\n"
        "12/07/2026 07:00:26:INFO:Created temporary directory '/tmp/tmpk3x' for ephemeral docs site\n"
        "Calculating Metrics:  25%|██▌       | 2/8 [00:00<00:00, 120.51it/s]\n"
    )
    assert len(noise_lines(seen)) == 7  # every line but the `color_warning(` source line
    ok = ("demo input: adult_demo.csv with fake names, emails, SSNs, phones and notes (a temporary file, removed "
          "after the run)\nstage: publish ━━━━━━━ 1/1   0:00:00\n")
    assert noise_lines(ok) == []


def _trie_pattern(words: list[bytes]) -> bytes:
    """A regex alternation of ``words`` factored as a trie, so re tries one trie at each position of a store rather
    than every word."""
    root: dict = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[None] = {}

    def pattern(node: dict) -> bytes:
        end = None in node
        alts = [re.escape(bytes([ch])) + pattern(child) for ch, child in sorted((k, v) for k, v in node.items()
                                                                                 if k is not None)]
        if not alts:
            return b""
        body = alts[0] if len(alts) == 1 and not end else b"(?:" + b"|".join(alts) + b")"
        return body + (b"?" if end else b"")

    return pattern(root)


def test_the_trie_pattern_finds_every_word_and_nothing_else():
    words = [b"ann lee", b"ann leeds", b"a@b.co", b"078-05-1121", b"annex"]
    rx = re.compile(_trie_pattern(words))
    for w in words:
        assert rx.search(b"xx " + w + b" yy") is not None and rx.fullmatch(w) is not None
    assert rx.search(b"ann le") is None and rx.search(b"a@b.c") is None and rx.search(b"078-05-112") is None


def test_demo_leaks_no_identifier(tmp_path):
    from dpsyn.demo import build_demo_input

    home, out = tmp_path / "home", tmp_path / "demo-out"
    env = {**os.environ, "DPSYN_HOME": str(home)}
    env.pop("PREFECT_HOME", None)
    env.pop("MLFLOW_TRACKING_URI", None)  # mlflow.set_tracking_uri() in this process exports it
    env.pop("DPSYN_WATERMARK_KEY", None)
    t0 = time.time()
    r = subprocess.run(
        [sys.executable, "-m", "dpsyn_cli.main", "demo", "--out", str(out), "--json"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    elapsed = time.time() - t0
    assert r.returncode == 0, r.stderr[-3000:]
    # a successful run prints no traceback, warning or library log line (issue 23), after its summary included
    assert noise_lines(r.stderr) == [], r.stderr[-3000:]
    result = json.loads(r.stdout)
    for key in ("output", "mlflow_run_id", "epsilon_spent", "delta", "gate_passed"):
        assert key in result
    assert result["gate_passed"] is True and result["epsilon_spent"] <= 1.0
    print(f"demo took {elapsed:.0f}s")

    # The same seed rebuilds the same fake identifiers the demo inserted. Whole values (full
    # names, emails, SSNs, phones) are searched as substrings, ignoring case; single name tokens
    # as whole, capitalised words (a bare substring search would flag "Philip" in "Philippines").
    seeded = build_demo_input(tmp_path / "again").seeded_values
    assert len(seeded) > 1000
    whole = sorted({v.lower() for v in seeded if " " in v or "@" in v or any(ch.isdigit() for ch in v)})
    tokens = sorted({v for v in seeded if v not in whole and v.isalpha() and len(v) >= 3})
    assert len(whole) > 500 and len(tokens) > 100
    token_re = re.compile(rb"(?<![A-Za-z])(" + b"|".join(re.escape(t.encode()) for t in tokens) + rb")(?![A-Za-z])")
    whole_re = re.compile(_trie_pattern([v.encode() for v in whole]))
    # Full values are searched everywhere: the output, the MLflow store (db and artifacts) and
    # Prefect's home. Single tokens only in the output: Prefect's and MLflow's own text holds
    # ordinary words that are also surnames ("Key", "Becker" in Adult's citation).
    assert (home / "mlflow.db").exists() and (home / "prefect").is_dir()
    leaks = []
    for root in (out, home):
        for f in _files(root):
            blob = f.read_bytes()
            low = blob.lower()
            hit = whole_re.search(low)  # every whole value, in one pass (16,000 `in` scans of the stores took 60 s)
            if hit is None and root == out:
                hit = token_re.search(blob)
            if hit:
                leaks.append(f"{f.relative_to(tmp_path)}")
    assert not leaks, f"seeded identifiers found in: {sorted(set(leaks))[:10]}"
    # `dpsyn scan` (Presidio, every entity) finds nothing in the published output, the lineage
    # ledger or any MLflow artifact, the pickled model included
    from dpsyn.pii.scan import scan_paths

    rep = scan_paths([out, home / "lineage.db", home / "mlartifacts"])
    assert any(f.endswith(".pkl") for f in rep.files_scanned), rep.files_scanned
    assert rep.clean, rep.counts
    # the watermark key file lives under the home, away from the data
    assert (home / "keys" / "watermark.key").exists()
    assert not (home / "work").exists() or not any((home / "work").iterdir())
