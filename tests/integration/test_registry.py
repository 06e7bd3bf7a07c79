"""The model registry: a version per run that reaches the gate, tags, the `champion` alias, pyfunc loading,
`dpsyn models`."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from loose_gate import LOOSE

from dpsyn.config import SynthesizeConfig
from dpsyn.errors import GateFailedError

pytestmark = pytest.mark.slow

NAME = "dpsyn-adult"
# Registry behaviour, not model quality: one epoch, no utility check, and a gate that passes on purpose
# (every family loosened: tests/loose_gate.py) or fails on purpose (thresholds no table meets, no noise margin; as
# test_flow.py). The run's noise is secure and unseeded, so a gate that still judged tails or constants failed
# one-epoch tables on some draws (CI, tests/unit/validation/test_loose_gate.py).
FAST = {"task_epochs": 1}
PASSING_GATE = {**LOOSE, "utility": False}
FAILING_GATE = {"utility": False, "ks_threshold": 1e-6, "tvd_threshold": 1e-6, "noise_margin": 0}


def _config(data, out, **kw):
    base = dict(data=data, table_schema="adult", out=out, experiment="registry", synthesizer_config=FAST,
                validation=PASSING_GATE, privacy={"epsilon": 1.0})
    base.update(kw)
    return SynthesizeConfig(**base)


@pytest.fixture(scope="module")
def three_runs(prefect_harness, small_adult, tmp_path_factory):
    """Pass, pass, fail: the run ids in that order (other test modules may add versions to the same model)."""
    from flows.synthesize import synthesize
    from tasks.tracking import client

    tmp = tmp_path_factory.mktemp("registry")
    budget = {"population": "registry-test", "ledger_url": f"sqlite:///{tmp / 'budget.db'}"}
    first = synthesize(_config(small_adult, tmp / "a", budget=budget))
    second = synthesize(_config(small_adult, tmp / "b", budget=budget))
    with pytest.raises(GateFailedError):
        synthesize(_config(small_adult, tmp / "c", validation=FAILING_GATE, budget=budget))
    assert not (tmp / "c").exists()
    c = client()
    exp = c.get_experiment_by_name("registry")
    (failed,) = [r for r in c.search_runs([exp.experiment_id]) if r.info.status == "FAILED"]
    return first, second, failed.info.run_id


def _versions_by_run():
    from tasks.tracking import client

    return {mv.run_id: mv for mv in client().search_model_versions(f"name = '{NAME}'")}


def test_each_run_that_reaches_the_gate_is_a_tagged_version(three_runs):
    first, second, failed_run = three_runs
    by_run = _versions_by_run()
    v1, v2, v3 = (by_run[r] for r in (first["mlflow_run_id"], second["mlflow_run_id"], failed_run))
    assert int(v1.version) < int(v2.version) < int(v3.version)
    for mv, passed in ((v1, "true"), (v2, "true"), (v3, "false")):
        assert {"epsilon", "delta", "cumulative_epsilon", "training_batch", "gate_passed"} <= set(mv.tags)
        assert mv.tags["gate_passed"] == passed
        assert 0 < float(mv.tags["epsilon"]) <= 1.0
        assert mv.source.startswith("models:/m-")  # the run's logged pyfunc model
    # the same file read three times: three batches, each with its own random id (a content hash would be a
    # function of the rows: issue 19, finding 1)
    assert v1.tags["training_batch"] == first["training_batch"]["batch_id"]
    assert v2.tags["training_batch"] == second["training_batch"]["batch_id"]
    assert len({v1.tags["training_batch"], v2.tags["training_batch"], v3.tags["training_batch"]}) == 3
    assert float(v1.tags["epsilon"]) == pytest.approx(first["epsilon_spent"], abs=1e-6)
    assert float(v2.tags["delta"]) == second["delta"]
    # cumulative ε: the population's lifetime spend in the budget ledger, failed gates included
    e1, e2, e3 = (float(mv.tags["epsilon"]) for mv in (v1, v2, v3))
    for mv, total in ((v1, e1), (v2, e1 + e2), (v3, e1 + e2 + e3)):
        assert float(mv.tags["cumulative_epsilon"]) == pytest.approx(total, abs=1e-5)
    # published releases name their version; the failed run records it only as a run tag
    assert first["model"] == {"name": NAME, "version": str(v1.version)}
    assert second["model"] == {"name": NAME, "version": str(v2.version)}
    from dpsyn.lineage import Ledger
    from tasks.tracking import client

    (lin,) = Ledger().by_run(second["mlflow_run_id"])  # the lineage ledger records the release's version
    assert (lin.release.model.name, lin.release.model.version) == (NAME, str(v2.version))
    assert Ledger().by_run(failed_run) == []
    assert client().get_run(failed_run).data.tags["dpsyn.registered_version"] == str(v3.version)


def test_champion_is_the_last_passing_version(three_runs):
    from tasks.tracking import client

    _, second, failed_run = three_runs
    champ = client().get_model_version_by_alias(NAME, "champion")
    assert champ.run_id == second["mlflow_run_id"] != failed_run
    assert str(champ.version) == second["model"]["version"]


def test_champion_loads_with_plain_pyfunc(three_runs, adult_schema):
    import mlflow
    import pandas as pd

    from dpsyn.home import mlflow_tracking_uri

    mlflow.set_tracking_uri(mlflow_tracking_uri())
    model = mlflow.pyfunc.load_model(f"models:/{NAME}@champion")
    df = model.predict(50)
    assert isinstance(df, pd.DataFrame) and len(df) == 50
    assert list(df.columns) == adult_schema.output_columns()
    assert len(model.predict(pd.DataFrame({"n": [7]}))) == 7
    a = model.predict([20], params={"random_state": 5})
    pd.testing.assert_frame_equal(a, model.predict(20, params={"random_state": 5}))
    with pytest.raises(Exception, match="one row count"):
        model.predict([1, 2])


def test_champion_loads_in_a_process_that_never_imported_dpsyn(three_runs, tmp_path):
    from dpsyn.home import mlflow_tracking_uri

    code = (
        "import sys, mlflow\n"
        "assert 'dpsyn' not in sys.modules\n"
        f"m = mlflow.pyfunc.load_model('models:/{NAME}@champion')\n"
        "df = m.predict(50, params={'random_state': 1})\n"
        "print(len(df), len(df.columns), 'prefect' in sys.modules)\n"
    )
    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_tracking_uri()}
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    rows, _, prefect_loaded = res.stdout.split()
    assert rows == "50" and prefect_loaded == "False"  # loading needs dpsyn (unpickling imports it), not Prefect


def test_models_cli_lists_versions_and_aliases(three_runs):
    from typer.testing import CliRunner

    from dpsyn_cli.main import app

    first, second, failed_run = three_runs
    res = CliRunner().invoke(app, ["models", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    (m,) = [m for m in out["models"] if m["name"] == NAME]
    assert m["aliases"]["champion"] == second["model"]["version"]
    rows = {v["run_id"]: v for v in m["versions"]}
    assert rows[second["mlflow_run_id"]]["aliases"] == ["champion"]
    assert rows[first["mlflow_run_id"]]["aliases"] == [] and rows[first["mlflow_run_id"]]["gate_passed"] is True
    bad = rows[failed_run]
    assert bad["gate_passed"] is False and bad["aliases"] == [] and 0 < bad["epsilon"] <= 1.0
    assert bad["cumulative_epsilon"] > bad["epsilon"] and bad["training_batch"] not in (
        first["training_batch"]["batch_id"], second["training_batch"]["batch_id"])
    assert all(n["name"].startswith("dpsyn-") for n in out["models"])

    text = CliRunner().invoke(app, ["models", "--name", NAME])
    assert text.exit_code == 0
    assert f"champion → v{second['model']['version']}" in text.stdout and "FAIL" in text.stdout
    assert first["training_batch"]["batch_id"][:12] + "…" in text.stdout
    assert first["training_batch"]["batch_id"] not in text.stdout

    missing = CliRunner().invoke(app, ["models", "--name", "dpsyn-nothing", "--json"])
    assert missing.exit_code == 2 and "no registered model named" in json.loads(missing.stdout)["error"]


def test_models_cli_bad_store_is_one_line_exit_2(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from dpsyn_cli.main import app

    junk = tmp_path / "not-a-db.db"
    junk.write_text("this is not a database\n" * 100)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{junk}")
    res = CliRunner().invoke(app, ["models"])
    assert res.exit_code == 2
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot read the MLflow tracking store"), res.output

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'none' / 'mlflow.db'}")
    empty = CliRunner().invoke(app, ["models", "--json"])
    assert empty.exit_code == 0 and json.loads(empty.stdout)["models"] == []
    assert not (tmp_path / "none").exists()  # listing creates no store
