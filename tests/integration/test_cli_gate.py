"""The gate where the user looks: refused before any ε is spent when it cannot judge, and `--rules FILE`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_noise import noise_lines

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "dpsyn" / "data" / "adult_sample.data"


def _cli(*args: str, home: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPSYN_HOME": str(home), "PREFECT_HOME": str(home / "prefect")}
    return subprocess.run([sys.executable, "-m", "dpsyn_cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


def test_a_129_row_table_is_refused_in_preflight_with_no_epsilon_spent(tmp_path):
    data = tmp_path / "small.data"
    data.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:129]))
    home = tmp_path / "home"
    out = tmp_path / "out"
    r = _cli("run", "--data", str(data), "--schema", "adult", "--out", str(out), "--epsilon", "1", home=home)
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert "too small for the validation gate at ε = 1" in lines[0]
    assert "rows at this ε" in lines[0] and "ε ≥" in lines[0] and "nothing was spent" in lines[0]
    assert not out.exists()
    # no reservation, no spend: the budget ledger was never written
    assert not (home / "budget.db").exists()


def test_the_minimum_rows_it_names_are_enough(tmp_path):
    from dpsyn.validation import ValidationConfig
    from dpsyn.validation.preflight import forecast

    cfg = ValidationConfig()
    f = forecast(cfg, epsilon=1.0, delta=1e-6, rows=129, has_target=True)
    assert not f["informative"] and f["min_rows"] > 129
    assert forecast(cfg, epsilon=1.0, delta=1e-6, rows=f["min_rows"], has_target=True)["informative"]
    assert not forecast(cfg, epsilon=1.0, delta=1e-6, rows=int(f["min_rows"] * 0.9), has_target=True)["informative"]


@pytest.mark.slow
def test_run_gates_on_a_rule_the_shipped_rules_do_not_have(tmp_path):
    """A user's hard rule that no row can meet (Adult has no shipped rules): the synthetic rows cannot be repaired
    from compliant ones, so the gate fails it by name, and nothing is published."""
    rules = tmp_path / "mine.yaml"
    rules.write_text("version: 1\nname: mine\nrules:\n  - name: age_at_least_200\n    hard: true\n"
                     "    range: {column: age, min: 200}\n")
    out = tmp_path / "out"
    # --json: one object that also says what the stopped run spent and where it is recorded (issue 24, low)
    r = _cli("run", "--data", str(SAMPLE), "--schema", "adult", "--out", str(out), "--rules", str(rules),
             "--epochs", "1", "--json", home=tmp_path / "home", timeout=900)
    assert r.returncode == 1, r.stderr[-2000:]
    obj = json.loads(r.stdout)
    assert "rule:age_at_least_200" in obj["error"] and "nothing was published" in obj["error"]
    assert obj["exit_code"] == 1 and obj["gate"] == "failed" and "rule:age_at_least_200" in obj["failed_checks"]
    assert 0 < obj["epsilon_spent"] <= 1 and obj["delta"] > 0 and obj["mlflow_run_id"] and obj["model"]["version"]
    assert not (out / "synthetic.csv").exists()
    # a gate that fails is an answer, not a crash: no traceback, and no library's log record or progress bar (GX's
    # "Created temporary directory" and "Calculating Metrics" reached stderr through the rules check)
    assert noise_lines(r.stderr) == [], r.stderr[-3000:]


def test_rules_option_reaches_the_gate_before_anything_runs(tmp_path):
    r = _cli("run", "--data", str(SAMPLE), "--schema", "adult", "--out", str(tmp_path / "out"), "--rules",
             str(tmp_path / "missing.yaml"), home=tmp_path / "home")
    assert r.returncode == 2 and "rules file not found" in r.stderr, r.stderr


def test_a_table_too_small_for_any_run_is_refused_even_when_uninformative_is_allowed():
    """Issue 24, finding 3: tables under 10 rows ran (and ended in an accounting error) once the gate was waived."""
    from dpsyn.errors import InputError
    from dpsyn.validation import ValidationConfig
    from dpsyn.validation.preflight import forecast, require_informative

    cfg = ValidationConfig(allow_uninformative=True)
    f = forecast(cfg, epsilon=1.0, delta=1e-6, rows=9, has_target=True)
    assert not f["countable"] and f["min_rows_count"] > 9
    with pytest.raises(InputError, match=f"below {f['min_rows_count']:,} rows at this ε"):
        require_informative(cfg, epsilon=1.0, delta=1e-6, rows=9, has_target=True)
    require_informative(cfg, epsilon=1.0, delta=1e-6, rows=f["min_rows_count"], has_target=True)  # enough to run
