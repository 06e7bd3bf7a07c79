"""benchmarks/suite_bars.py computes issue 26's verdicts from the suite's rows: a loss or a missing rival fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import suite_bars  # noqa: E402


def _row(method, gbm, lr, tvd2, empty=0, seed=0):
    return {"dataset": "t", "method": method, "seed": seed, "tvd2": tvd2, "n_empty_bins": empty,
            "tstr": {"gbm": {"roc_auc": gbm}, "logreg": {"roc_auc": lr}}}


def _write(tmp_path, eps, rows):
    (tmp_path / f"{suite_bars.PREFIX}_eps{eps:g}.json").write_text(json.dumps({"commands": [], "rows": rows}))


def test_a_win_passes_and_each_loss_is_named(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_bars, "RESULTS", tmp_path)
    rivals = [_row("independent", 0.5, 0.5, 0.30), _row("naive_bayes", 0.80, 0.80, 0.40), _row("mst", 0.7, 0.7, 0.20)]
    _write(tmp_path, 1.0, [_row("pgm", 0.85, 0.85, 0.19), *rivals])
    assert suite_bars.bars(1.0)[0]["fails"] == []
    _write(tmp_path, 1.0, [_row("pgm", 0.79, 0.85, 0.25, empty=1), *rivals])
    assert suite_bars.bars(1.0)[0]["fails"] == ["gbm < naive_bayes", "TVD > mst", "empty bins"]


def test_a_missing_rival_is_a_failure_not_a_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_bars, "RESULTS", tmp_path)
    _write(tmp_path, 3.0, [_row("pgm", 0.9, 0.9, 0.1), _row("independent", 0.5, 0.5, 0.3),
                           _row("naive_bayes", 0.8, 0.8, 0.4)])
    assert "mst missing" in suite_bars.bars(3.0)[0]["fails"]


def test_at_small_epsilon_only_the_independent_baseline_is_the_bar(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_bars, "RESULTS", tmp_path)
    _write(tmp_path, 0.3, [_row("pgm", 0.6, 0.6, 0.30), _row("independent", 0.5, 0.5, 0.31),
                           _row("naive_bayes", 0.9, 0.9, 0.2)])
    assert suite_bars.bars(0.3)[0]["fails"] == []
    _write(tmp_path, 0.3, [_row("pgm", 0.6, 0.6, 0.32, seed=0), _row("pgm", 0.6, 0.6, 0.32, seed=1),
                           _row("independent", 0.5, 0.5, 0.31)])
    assert suite_bars.bars(0.3)[0]["fails"] == ["TVD > independent"]


def test_a_loss_states_its_gap_and_standard_error_and_seeds_can_be_restricted(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_bars, "RESULTS", tmp_path)
    rows = [_row("pgm", g, 0.9, 0.1, seed=s) for s, g in enumerate((0.70, 0.74, 0.72, 0.90))]
    rows += [_row(x, 0.75, 0.5, 0.3, seed=s) for x in ("independent", "naive_bayes", "mst") for s in range(4)]
    _write(tmp_path, 1.0, rows)
    b = suite_bars.bars(1.0, seeds={0, 1, 2})[0]
    assert b["fails"] == ["gbm < independent", "gbm < naive_bayes", "gbm < mst"]
    gap, se = b["gaps"]["gbm < naive_bayes"]
    assert abs(gap - (0.72 - 0.75)) < 1e-9 and abs(se - 0.02 / 3 ** 0.5) < 1e-9  # pgm's std 0.02 over 3 seeds
    assert suite_bars.bars(1.0)[0]["fails"] == []  # the fourth seed lifts pgm's mean to 0.765
    assert "seeds 0-2" in suite_bars.markdown() and "FAIL: gbm < independent" in suite_bars.markdown()


def test_results_picks_which_suite_tables_are_read(tmp_path, monkeypatch):
    monkeypatch.setattr(suite_bars, "RESULTS", tmp_path)
    monkeypatch.setattr(suite_bars, "PREFIX", suite_bars.DEFAULT_PREFIX)  # main() sets it; teardown restores it
    assert suite_bars.DEFAULT_PREFIX == "suite_shaped"  # the rows decoded as dpsyn decodes by default
    rivals = [_row("independent", 0.5, 0.5, 0.30), _row("naive_bayes", 0.80, 0.80, 0.40), _row("mst", 0.7, 0.7, 0.20)]
    _write(tmp_path, 1.0, [_row("pgm", 0.79, 0.85, 0.19), *rivals])
    (tmp_path / "suite_eps1.json").write_text(json.dumps({"commands": [], "rows": [
        _row("pgm", 0.85, 0.85, 0.19), *rivals]}))
    out = tmp_path / "bars.md"
    suite_bars.main(["--results", "suite", "--out", str(out)])
    text = out.read_text()
    assert "FAIL" not in text and "--results suite " in text
    suite_bars.main(["--out", str(out)])
    text = out.read_text()
    assert "FAIL: gbm < naive_bayes" in text and "--results" not in text
