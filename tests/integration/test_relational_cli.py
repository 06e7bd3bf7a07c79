"""``dpsyn run --dataset``: one folder with one file per table, the budget charged per run, every manifest key in
the release inventory, the inputs untouched; refusals are one line and spend nothing."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from dpsyn.privacy.inventory import flatten_keys, unclassified

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "synthea"


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPSYN_HOME": str(home), "PREFECT_HOME": str(home / "prefect"),
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "dpsyn_cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def _digests() -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(DATA.glob("*.csv"))}


def test_dataset_run_publishes_every_table_and_charges_the_budget(tmp_path):
    before = _digests()
    out = tmp_path / "release"
    r = _cli("run", "--dataset", "synthea", "--data", str(DATA), "--out", str(out), "--epsilon", "20",
             "--accept-ungated", "--json", home=tmp_path / "home")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["epsilon_spent"] <= 20 + 1e-9
    assert "add/remove one person (patients.Id)" in summary["neighbouring"]
    assert sorted(p.name for p in out.iterdir()) == ["conditions.csv", "manifest.json", "medications.csv",
                                                     "patients.csv"]
    manifest = json.loads((out / "manifest.json").read_text())
    items = [("dataset.manifest", k) for k in flatten_keys(manifest)]
    items += [("dataset.file", p.name) for p in out.iterdir()]
    assert unclassified(items) == []
    assert _digests() == before  # inputs never modified

    from dpsyn.privacy.budget import BudgetLedger

    (pop,) = BudgetLedger(str(tmp_path / "home" / "budget.db")).status("synthea-lancashire")
    assert abs(pop.spent_epsilon - summary["epsilon_spent"]) < 1e-9 and pop.reserved_epsilon == 0


def test_dataset_run_refuses_without_accepting_the_missing_gate(tmp_path):
    out = tmp_path / "release"
    r = _cli("run", "--dataset", "synthea", "--data", str(DATA), "--out", str(out), home=tmp_path / "home")
    assert r.returncode == 2 and "--accept-ungated" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists() and not (tmp_path / "home" / "budget.db").exists()


def test_dataset_run_refuses_single_table_options(tmp_path):
    r = _cli("run", "--dataset", "synthea", "--schema", "adult", "--data", str(DATA), "--out", str(tmp_path / "o"),
             "--accept-ungated", home=tmp_path / "home")
    assert r.returncode == 2 and "--schema cannot be combined with --dataset" in r.stderr
