"""Crash hygiene (issue 24, finding 4): what a killed run leaves behind is removed by the next sweep, its tracker
record is closed, and its reservation stays charged in full until its owner closes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from dpsyn.home import scratch_dir, work_root, write_owner
from dpsyn.pipeline.lifecycle import sweep
from dpsyn.privacy.budget import BudgetLedger

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

_KILLED = """
import sys, time
from dpsyn.config import SynthesizeConfig
from dpsyn.pipeline import lifecycle
cfg = SynthesizeConfig.model_validate_json(sys.argv[1])
ctx = lifecycle.begin(cfg)
ctx = lifecycle.mark_read(ctx).update(tracker_run_id="trk-killed")
(ctx.workdir / "masked.parquet").write_text("rows would be here")
stage = cfg.out.parent / f".{cfg.out.name}.staging-0123abcd"  # killed while publishing
stage.mkdir()
(stage / "synthetic.csv").write_text("half a release")
ctx.workdir.write_json("staging.json", {"path": str(stage)})
with open(sys.argv[2], "w") as f:
    f.write(ctx.run_id)
time.sleep(300)
"""


class _Tracker:
    def __init__(self):
        self.calls = []

    def log_privacy(self, run_id, privacy):
        self.calls.append(("log_privacy", run_id))

    def end(self, run_id, status):
        self.calls.append(("end", run_id, status))


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.mark.slow  # a process of its own (CLI or run)
def test_a_killed_run_is_cleaned_up_and_its_reservation_waits_for_close(tmp_path, adult_sample_path):
    from dpsyn.config import SynthesizeConfig

    url = f"sqlite:///{tmp_path / 'budget.db'}"
    cfg = SynthesizeConfig(data=adult_sample_path, table_schema="adult", out=tmp_path / "out",
                           privacy={"epsilon": 2.0}, budget={"population": "sweep-test", "ledger_url": url})
    marker = tmp_path / "run_id"
    p = subprocess.Popen([sys.executable, "-c", _KILLED, cfg.model_dump_json(), str(marker)], env=dict(os.environ))
    try:
        for _ in range(600):
            if marker.exists() and marker.read_text():
                break
            assert p.poll() is None, "the child run died early"
            import time

            time.sleep(0.1)
        run_id = marker.read_text()
        folder = work_root() / run_id
        assert (folder / "masked.parquet").exists()
        tracker = _Tracker()
        assert sweep(tracker) == [] and folder.exists()  # alive: left alone
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert sweep(tracker) == [run_id]
    assert not folder.exists()  # no masked rows left
    assert not (tmp_path / ".out.staging-0123abcd").exists() and not (tmp_path / "out").exists()  # no half release
    assert ("end", "trk-killed", "FAILED") in tracker.calls and ("log_privacy", "trk-killed") in tracker.calls
    ledger = BudgetLedger(url)
    r = ledger.get(f"synthesize:{run_id}")
    assert r.state == "reserved" and r.owner_state == "dead" and r.charged_epsilon == 2.0  # never under-counted
    assert ledger.close(f"synthesize:{run_id}", by="owner").spent_epsilon == 2.0
    assert sweep(tracker) == []  # nothing left


def test_scratch_folders_of_dead_processes_go_and_others_stay(tmp_path):
    root = work_root()
    root.mkdir(parents=True, exist_ok=True)
    dead = root / "demo-input-dead"
    dead.mkdir()
    (dead / "adult_demo.csv").write_text("name,ssn\nAlice,123-45-6789\n")
    write_owner(dead)
    text = (dead / "owner.json").read_text().replace(f'"pid": {os.getpid()}', f'"pid": {_dead_pid()}')
    (dead / "owner.json").write_text(text)
    other = root / "other-host"
    other.mkdir()
    (other / "owner.json").write_text('{"pid": 1, "host": "another-machine"}')
    with scratch_dir("demo-input") as live:
        assert oct(live.stat().st_mode & 0o777) == "0o700" and oct(root.stat().st_mode & 0o777) == "0o700"
        assert sweep() == []  # no run to close: only folders removed
        assert live.exists() and other.exists() and not dead.exists()
    assert not live.exists()
    other.joinpath("owner.json").unlink()
    other.rmdir()


def test_a_release_recorded_but_never_renamed_into_place_is_withdrawn(tmp_path):
    """Issue 24 (low): a kill during publish left the lineage row of a release that never appeared."""
    from dpsyn.lineage import Ledger, Release
    from dpsyn.pipeline.lifecycle import _remove_staging
    from dpsyn.pipeline.workdir import WorkDir

    url = f"sqlite:///{tmp_path / 'lineage.db'}"
    manifest = {"mlflow_run_id": "r" * 32, "schema": "adult", "synthesizer": "pgm",
                "training_batch": {"batch_id": "b" * 64, "rows_estimate": 10, "source": "x.csv"},
                "watermark": {"code": "0123456789abcdef", "key_id": "k" * 16, "timestamp": "2026-01-01T00:00:00"},
                "epsilon_spent": 1.0, "delta": 1e-6, "accountant": "prv", "gate_passed": True}
    stage = tmp_path / ".out.staging-deadbeef"
    stage.mkdir()
    rel = Release.from_manifest(manifest, dataset_sha256="0" * 64, path=tmp_path / "out" / "synthetic.csv", rows=10,
                                validation={"checks": []}, dataset_id="d" * 32)
    Ledger(url).record(rel)
    assert Ledger(url).get("0123456789abcdef") is not None
    work = WorkDir(tmp_path / "work")
    work.path.mkdir()
    work.write_json(WorkDir.STAGING, {"path": str(stage), "dataset_id": "d" * 32, "lineage_url": url})
    _remove_staging(work)
    assert not stage.exists() and Ledger(url).get("0123456789abcdef") is None
