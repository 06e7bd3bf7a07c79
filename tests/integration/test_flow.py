"""The synthesize flow end to end, in-process against an ephemeral Prefect API."""

from __future__ import annotations

import pytest

from dpsyn.config import SynthesizeConfig
from dpsyn.errors import GateFailedError

pytestmark = pytest.mark.slow

FAST: dict = {}  # the default dpgen settings


@pytest.fixture(scope="module")
def small_adult(tmp_path_factory, adult_sample_path):
    """The first 2,000 rows of the shipped sample, in Adult's original format."""
    p = tmp_path_factory.mktemp("data") / "adult2000.data"
    lines = adult_sample_path.read_text().splitlines(keepends=True)[:2000]
    p.write_text("".join(lines))
    return p


def _config(data, out, **kw):
    base = dict(data=data, table_schema="adult", out=out, synthesizer_config=FAST,
                privacy={"epsilon": 1.0, "secure_rng": False, "noise_seed": 3})
    base.update(kw)
    return SynthesizeConfig(**base)


def _mlflow_run(run_id):
    from tasks.tracking import client

    return client().get_run(run_id)


def test_flow_publishes_and_records(prefect_harness, small_adult, tmp_path):
    import time

    import pandas as pd

    from dpsyn.schema import load_schema
    from flows.synthesize import synthesize

    t0 = time.time()
    out = tmp_path / "out"
    result = synthesize(_config(small_adult, out))
    assert time.time() - t0 < 120
    assert result["gate_passed"] is True
    synth = pd.read_csv(out / "synthetic.csv")
    schema = load_schema("adult")
    assert list(synth.columns) == schema.output_columns() + ["_wm"]
    assert len(synth) == 2000
    assert {p.name for p in out.iterdir()} == {"synthetic.csv", "manifest.json", "validation_report.json"}
    run = _mlflow_run(result["mlflow_run_id"])
    assert run.info.status == "FINISHED"
    assert 0 < run.data.metrics["epsilon_spent"] <= 1.0
    assert run.data.metrics["delta"] == result["delta"] <= 1 / 2000
    assert run.data.tags["dpsyn.accountant"] == "prv"
    assert run.data.metrics["gate_passed"] == 1.0
    assert "noise_multiplier.dpgen.dpsgd" in run.data.metrics


def test_flow_respects_small_epsilon(prefect_harness, small_adult, tmp_path):
    from flows.synthesize import synthesize
    from tasks.tracking import client

    # At ε=0.1 on 2,000 rows the gate's own noise is large, so it may pass or fail:
    # either way the spend must be recorded and within budget.
    cfg = _config(small_adult, tmp_path / "out", privacy={"epsilon": 0.1, "secure_rng": False, "noise_seed": 4},
                  experiment="eps-0.1")
    try:
        result = synthesize(cfg)
        assert result["epsilon_spent"] <= 0.1
    except GateFailedError:
        assert not (tmp_path / "out").exists()
    c = client()
    (run,) = c.search_runs([c.get_experiment_by_name("eps-0.1").experiment_id])
    assert 0.09 < run.data.metrics["epsilon_spent"] <= 0.1
    assert run.data.metrics["delta"] <= 1 / 2000


def test_failed_gate_publishes_nothing_but_records_spend(prefect_harness, small_adult, tmp_path):
    from flows.synthesize import synthesize
    from tasks.tracking import client

    out = tmp_path / "out"
    # thresholds no real table meets, and no noise margin: the gate must fail and name its checks
    cfg = _config(small_adult, out, validation={"ks_threshold": 1e-6, "tvd_threshold": 1e-6, "noise_margin": 0},
                  experiment="gate-fail")
    with pytest.raises(GateFailedError, match=r"validation gate failed: (ks|tvd):") as err:
        synthesize(cfg)
    assert len(err.value.failures) >= 5
    assert not out.exists()
    assert not any(p.name.startswith(".out.staging") for p in tmp_path.iterdir())
    c = client()
    exp = c.get_experiment_by_name("gate-fail")
    runs = c.search_runs([exp.experiment_id])
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FAILED"
    assert 0 < run.data.metrics["epsilon_spent"] <= 1.0
    assert run.data.metrics["gate_passed"] == 0.0


def test_work_folder_is_removed(prefect_harness, small_adult, tmp_path, session_home):
    work_root = session_home / "work"
    assert not work_root.exists() or not any(work_root.iterdir())
