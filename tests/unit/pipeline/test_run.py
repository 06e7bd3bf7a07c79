"""dpsyn.pipeline runs a whole synthesize run as a library, without Prefect or MLflow, and closes every stop."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from loose_gate import LOOSE

from dpsyn.config import SynthesizeConfig
from dpsyn.privacy.budget import BudgetLedger

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning")]

MANIFEST_KEYS = {"mlflow_run_id", "run_id", "schema", "synthesizer", "training_batch", "watermark", "epsilon_spent", "delta",
                 "accountant", "guarantee", "population", "cumulative_epsilon", "gate_passed", "gate", "dataset_id",
                 "synthetic_sha256"}


@pytest.fixture()
def small_input(tmp_path, adult_sample_path):
    p = tmp_path / "adult900.data"
    p.write_text("".join(adult_sample_path.read_text().splitlines(keepends=True)[:900]))
    return p


def _config(data, tmp_path, **kw):
    base = dict(data=data, table_schema="adult", out=tmp_path / "out", synthesizer_config={"task_epochs": 1},
                privacy={"epsilon": 3.0}, validation=LOOSE, budget={"population": "pipeline-test"},
                lineage_url=f"sqlite:///{tmp_path / 'lineage.db'}")
    base.update(kw)
    return SynthesizeConfig(**base)


_RUN = """
import json, sys, warnings
warnings.simplefilter("ignore")
from dpsyn.config import SynthesizeConfig
from dpsyn.pipeline import run
result = run(SynthesizeConfig.model_validate_json(sys.argv[1]))
print(json.dumps({"result": result, "prefect": "prefect" in sys.modules, "mlflow": "mlflow" in sys.modules},
                 default=str))
"""


@pytest.mark.slow  # a process or a real training: in the full suite, not the fast tier
def test_a_library_run_publishes_without_prefect_or_mlflow(small_input, tmp_path, session_home):
    cfg = _config(small_input, tmp_path)  # the default (shaped) decode, end to end
    res = subprocess.run([sys.executable, "-c", _RUN, cfg.model_dump_json()], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["prefect"] is False and out["mlflow"] is False
    result = out["result"]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert set(manifest) == MANIFEST_KEYS and result["output"] == str((tmp_path / "out").absolute())
    assert 0 < manifest["epsilon_spent"] <= 3.0 and manifest["guarantee"]["differential_privacy"] is True
    (pop,) = BudgetLedger().status("pipeline-test")
    (r,) = pop.runs
    assert r.state == "committed" and r.spent_epsilon == pytest.approx(manifest["epsilon_spent"])
    kept = session_home / "operator" / manifest["mlflow_run_id"]  # the null tracker's id names the reports
    assert sorted(p.name for p in kept.iterdir()) == ["mask_report.json", "scrub_report.json", "training_batch.json"]


def test_a_stop_after_the_read_is_charged_in_full_and_leaves_nothing(small_input, tmp_path, monkeypatch):
    from dpsyn.pipeline import run, stages
    from dpsyn.pipeline.workdir import WorkDir

    def broken_fit(config, ctx):
        raise RuntimeError("the synthesizer broke")

    monkeypatch.setattr(stages, "fit", broken_fit)
    before = set(WorkDir.root().glob("*")) if WorkDir.root().exists() else set()
    cfg = _config(small_input, tmp_path, budget={"population": "pipeline-stop"})
    with pytest.raises(RuntimeError, match="broke"):
        run(cfg)
    (pop,) = BudgetLedger().status("pipeline-stop")
    (r,) = pop.runs
    assert r.state == "committed" and r.spent_epsilon == 3.0  # where a run stops depends on the data
    assert not (tmp_path / "out").exists()
    assert set(WorkDir.root().glob("*")) == before  # the work folder is gone (its operator reports are kept)


def test_a_refused_run_reserves_nothing(small_input, tmp_path):
    from dpsyn.errors import ConfigError
    from dpsyn.pipeline import run

    with pytest.raises(ConfigError, match="secure noise source"):
        run(_config(small_input, tmp_path, privacy={"secure_rng": False, "noise_seed": 1},
                    budget={"population": "pipeline-refused"}))
    assert BudgetLedger().status("pipeline-refused") == []


def test_within_bin_is_a_closed_choice(small_input, tmp_path):
    from pydantic import ValidationError

    assert _config(small_input, tmp_path).within_bin == "shaped"
    assert _config(small_input, tmp_path, within_bin="uniform").within_bin == "uniform"
    with pytest.raises(ValidationError, match="within_bin"):
        _config(small_input, tmp_path, within_bin="smooth")
