"""After `kill -9` of a run, the next dpsyn command leaves no private rows behind; the budget shows it dead and
`dpsyn budget close` settles it (issue 24, finding 4 and the "Done when")."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")]


def _env(home: Path, tmpdir: Path) -> dict:
    return {**os.environ, "DPSYN_HOME": str(home), "PREFECT_HOME": str(home / "prefect"), "TMPDIR": str(tmpdir),
            "MLFLOW_TRACKING_URI": f"sqlite:///{home / 'mlflow.db'}"}


def _cli(*args, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "dpsyn_cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=timeout)


_MLFLOW_STATUSES = """
import json, mlflow
c = mlflow.MlflowClient()
print(json.dumps([r.info.status for r in c.search_runs([e.experiment_id for e in c.search_experiments()])]))
"""


def _private_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and p.suffix in (".parquet", ".csv", ".data", ".npz")]


def test_a_demo_killed_mid_run_leaves_nothing_after_the_next_command(tmp_path):
    stage = "model.pkl"  # killed in training: masked rows, the holdout, exact counts and the raw input all exist
    home, tmpdir = tmp_path / "home", tmp_path / "tmp"
    tmpdir.mkdir()
    env = _env(home, tmpdir)
    # its own process group: the kill takes the embedded Prefect server with it, as killing a job does
    p = subprocess.Popen([sys.executable, "-m", "dpsyn_cli.main", "demo", "--rows", "2000", "--out", str(tmp_path / "out"),
                          "--json"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        deadline = time.time() + 600
        while not list((home / "work").glob(f"*/{stage}")):
            assert p.poll() is None, "the demo ended before the stage was reached"
            assert time.time() < deadline, "the stage was not reached in time"
            time.sleep(0.2)
        assert list((home / "work").glob("demo-input-*/adult_demo.csv"))  # the raw-identifier input, private
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    res = _cli("budget", "show", "--json", env=env)
    assert res.returncode == 0, res.stderr
    assert "cleaned up 1 run(s) whose process was killed" in res.stderr
    assert _private_files(home / "work") == [] and list((home / "work").iterdir()) == []
    assert _private_files(tmpdir) == []
    (pop,) = json.loads(res.stdout)["populations"]
    (run,) = pop["runs"]
    assert run["state"] == "reserved" and run["owner_state"] == "dead" and run["charged_epsilon"] == 1.0
    assert "DEAD" in _cli("budget", "show", env=env).stdout
    statuses = subprocess.run([sys.executable, "-c", _MLFLOW_STATUSES], capture_output=True, text=True, env=env,
                              timeout=120)
    assert json.loads(statuses.stdout.strip().splitlines()[-1]) == ["FAILED"], statuses.stderr[-2000:]
    res = _cli("budget", "close", run["run_id"], "--json", env=env)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["spent_epsilon"] == 1.0
    assert not (tmp_path / "out").exists()
