"""The synthesize flow end to end, in-process against an ephemeral Prefect API."""

from __future__ import annotations

import pytest
from loose_gate import LOOSE

from dpsyn.config import SynthesizeConfig
from dpsyn.errors import GateFailedError

pytestmark = pytest.mark.slow

FAST: dict = {}  # the default dpgen settings
# The noise is secure (seeded runs cannot publish), so a test that needs a published release, not a verdict, gives
# the gate thresholds any table meets; the gate's own behaviour is tested in tests/unit and benchmarks/gate.py.


def _config(data, out, **kw):
    # dpgen: these tests check the DP-SGD run's records (noise multiplier, steps, canaries); pgm has its own
    base = dict(data=data, table_schema="adult", out=out, synthesizer="dpgen", synthesizer_config=FAST,
                privacy={"epsilon": 1.0, "secure_rng": True})
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
    result = synthesize(_config(small_adult, out, validation=LOOSE))
    print(f"flow took {time.time() - t0:.0f}s")  # speed is a benchmark matter (shared CPUs make it vary)
    assert result["gate_passed"] is True
    synth = pd.read_csv(out / "synthetic.csv")
    schema = load_schema("adult")
    assert list(synth.columns) == schema.output_columns() + ["_wm"]
    # as many rows as the noisy count of the real rows (training + holdout: two draws of σ ≈ 50 at ε = 1)
    assert abs(len(synth) - 2000) < 400 and result["training_batch"]["rows_estimate"] == len(synth)
    assert {p.name for p in out.iterdir()} == {"synthetic.csv", "manifest.json", "validation_report.json",
                                               "validation_report.html"}
    assert 'data-verdict="pass"' in (out / "validation_report.html").read_text()
    run = _mlflow_run(result["mlflow_run_id"])
    assert run.info.status == "FINISHED"
    assert 0 < run.data.metrics["epsilon_spent"] <= 1.0
    assert float(run.data.params["training.delta"]) == result["delta"] <= 1 / 2000  # settings: params
    assert "delta" not in run.data.metrics and int(run.data.params["training.steps.dpgen.dpsgd"]) > 0
    assert run.data.tags["dpsyn.accountant"] == "prv"
    assert run.data.metrics["gate_passed"] == 1.0
    assert "noise_multiplier.dpgen.dpsgd" in run.data.metrics
    # Prefect and MLflow link both ways: one readable name, the flow run's id on the MLflow run and in the manifest
    import json
    import uuid

    from prefect.client.orchestration import get_client

    manifest = json.loads((out / "manifest.json").read_text())
    with get_client(sync_client=True) as c:
        flow_run = c.read_flow_run(uuid.UUID(manifest["run_id"]))
    assert flow_run.name == run.data.tags["mlflow.runName"] == f"synthesize-adult-eps1-{small_adult.stem}"
    assert run.data.tags["dpsyn.run_id"] == str(flow_run.id)
    _check_lineage(result, out, run)
    _check_no_scrub_artifact(run)
    _check_validation_artifacts(run, passed=True)


def _check_validation_artifacts(run, *, passed: bool):
    """The gate's report: HTML in MLflow `reports/`, verdict as a Prefect Markdown artifact, checks as a table."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from tasks.tracking import client

    names = {a.path for a in client().list_artifacts(run.info.run_id, "reports")}
    assert {"reports/validation_report.html", "reports/validation_report.json"} <= names
    with get_client(sync_client=True) as c:
        md = c.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["validation-report"])))
        table = c.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["validation-checks"])))
    assert md and table and table[-1].type == "table"
    latest = max(md, key=lambda a: a.created)  # this run's (tests run one after another)
    assert latest.type == "markdown" and ("PASSED" if passed else "FAILED") in latest.data


def _check_no_scrub_artifact(run):
    """The scrub report (exact counts per column and entity) stays with the data owner: no Prefect artifact, no
    MLflow artifact; it is in $DPSYN_HOME/operator/<run id>/ (issue 19, finding 6)."""
    import json

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    from dpsyn.home import dpsyn_home
    from tasks.tracking import client

    with get_client(sync_client=True) as c:
        assert not c.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["scrub-report"])))
    assert "reports/scrub_report.json" not in {a.path for a in client().list_artifacts(run.info.run_id, "reports")}
    kept = dpsyn_home() / "operator" / run.info.run_id
    assert {p.name for p in kept.iterdir()} == {"scrub_report.json", "mask_report.json", "training_batch.json"}
    assert (kept.stat().st_mode & 0o077) == 0
    assert json.loads((kept / "training_batch.json").read_text())["rows"] == 2000  # exact: the owner's copy


def _check_lineage(result, out, run):
    """The published file traces to what MLflow holds; a fragment without `_wm` is still detected."""
    import pandas as pd

    from dpsyn.lineage import trace_file, verify_file
    from dpsyn.watermark import WatermarkKey, load_keys
    from tasks.tracking import client

    t = trace_file(out / "synthetic.csv")
    assert t.traced and t.file_matches_release == result["dataset_id"]
    (c,) = t.codes
    rel = c.lineage.release
    assert c.status == "verified" and c.rows == result["training_batch"]["rows_estimate"]
    mv = client().get_model_version(rel.model.name, rel.model.version)
    assert mv.run_id == run.info.run_id == rel.model.run_id
    assert rel.model.name == "dpsyn-adult"
    assert rel.batch.batch_id == run.data.tags["dpsyn.training_batch"] == result["training_batch"]["batch_id"]
    assert rel.privacy.epsilon == pytest.approx(run.data.metrics["epsilon_spent"], abs=1e-6)
    assert run.data.tags["dpsyn.lineage.model_version"] == rel.model.version
    assert run.data.tags["dpsyn.lineage.dataset_sha256"] == rel.dataset.sha256

    # the statistical mark: half the rows, no _wm column, still ours; another key sees nothing
    frag = pd.read_csv(out / "synthetic.csv").drop(columns="_wm").sample(frac=0.5, random_state=0)
    path = out.parent / "fragment.csv"
    frag.to_csv(path, index=False)
    v = verify_file(path, schema="adult")
    assert v.traced and v.method == "statistical" and v.statistical["p_value"] < 1e-6, v.statistical
    other = verify_file(path, schema="adult", keys=[WatermarkKey.from_secret(b"x" * 32)])
    assert not other.traced
    assert len(load_keys()) >= 1


def test_flow_respects_small_epsilon(prefect_harness, small_adult, tmp_path):
    # At ε = 0.1 on 2,000 rows the noisy row count (σ ≈ 310) leaves the gate almost no lower bound on the rows:
    # it either stops the run as too small (after the count: charged its whole reservation) or runs with large
    # noise and passes or fails. Either way the spend is recorded, within budget, and nothing half-published.
    from dpsyn.errors import InputError
    from dpsyn.privacy.budget import BudgetLedger
    from flows.synthesize import synthesize
    from tasks.tracking import client

    cfg = _config(small_adult, tmp_path / "out", privacy={"epsilon": 0.1, "secure_rng": True},
                  experiment="eps-0.1", budget={"population": "eps-0.1-test"})
    try:
        result = synthesize(cfg)
        assert result["epsilon_spent"] <= 0.1
        stopped = False
    except GateFailedError:
        stopped = False
        assert not (tmp_path / "out").exists()
    except InputError as e:
        assert "too small for the validation gate" in str(e)
        stopped = True
        assert not (tmp_path / "out").exists()
    c = client()
    (run,) = c.search_runs([c.get_experiment_by_name("eps-0.1").experiment_id])
    assert 0 < run.data.metrics["epsilon_spent"] <= 0.1
    (pop,) = BudgetLedger().status("eps-0.1-test")
    assert pop.runs[0].state == "committed"
    if stopped:  # a data-dependent stop is charged what was reserved
        assert pop.spent_epsilon == 0.1
    else:
        assert 0.09 < pop.spent_epsilon <= 0.1
    assert float(run.data.params["training.delta"]) == 1e-6  # the public rule on Adult's documented 48,842 rows


def test_failed_gate_publishes_nothing_but_records_spend(prefect_harness, small_adult, tmp_path):
    from flows.synthesize import synthesize
    from tasks.tracking import client

    out = tmp_path / "out"
    # thresholds no real table meets, and no noise margin: the gate must fail and name its checks
    cfg = _config(small_adult, out, validation={"ks_threshold": 1e-6, "tvd_threshold": 1e-6, "noise_margin": 0},
                  experiment="gate-fail")
    failed = r"validation gate failed \d+ of \d+ checks: gate:worst .*(ks|tvd):"
    with pytest.raises(GateFailedError, match=failed) as err:
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
    _check_validation_artifacts(run, passed=False)


def test_work_folder_is_removed(prefect_harness, small_adult, tmp_path, session_home):
    work_root = session_home / "work"
    assert not work_root.exists() or not any(work_root.iterdir())


@pytest.mark.parametrize(
    "scrub, error",
    [
        ({"operators": {"PERSON": "shred"}}, "unknown PII operator"),
        ({"entities": ["PERSON", "SHOE_SIZE"]}, "unknown PII entit"),
    ],
)
def test_bad_scrub_config_stops_the_run_before_anything_is_published(prefect_harness, small_adult, tmp_path,
                                                                      scrub, error):
    from pydantic import ValidationError

    from flows.synthesize import synthesize

    out = tmp_path / "out"
    with pytest.raises((ValueError, ValidationError), match=error):
        synthesize(_config(small_adult, out, scrub=scrub))
    assert not out.exists()


def test_residual_identifier_stops_the_run(prefect_harness, tmp_path):
    """A column the schema calls harmless but that holds birth dates: fail closed, publish nothing."""
    from dpsyn.errors import PIIResidualError
    from flows.synthesize import synthesize

    data = tmp_path / "d.csv"
    data.write_text("birth_date,age\n" + "".join(f"19{50 + i % 40}-03-14,{20 + i % 50}\n" for i in range(60)))
    schema = tmp_path / "s.yaml"
    schema.write_text(
        "name: d\ncolumns:\n  - {name: birth_date, kind: datetime, bounds: ['1900-01-01', '2030-01-01']}\n"
        "  - {name: age, kind: numeric, bounds: [0, 110]}\n"
    )
    out = tmp_path / "out"
    with pytest.raises(PIIResidualError) as e:
        synthesize(SynthesizeConfig(data=data, table_schema=str(schema), out=out,
                                    privacy={"epsilon": 1.0, "secure_rng": True}))
    assert "birth_date" in str(e.value) and "1975" not in str(e.value)
    assert not out.exists()


def test_in_run_audit_is_a_gate_check(prefect_harness, small_adult, tmp_path):
    """validation.audit: canaries by secret coins, the ε lower bound is a check, canaries never reach the output."""
    import json

    import pandas as pd

    from flows.synthesize import synthesize

    out = tmp_path / "out"
    result = synthesize(_config(small_adult, out, validation={**LOOSE, "audit": True, "audit_canaries": 200}))
    report = json.loads((out / "validation_report.json").read_text())
    (check,) = [c for c in report["checks"] if c["name"] == "audit:epsilon_lower_bound"]
    assert check["threshold"] == 1.0 and check["passed"] and check["value"] <= 1.0
    a = report["audit"]
    assert a["m"] == 200 and 60 < a["included"] < 140 and a["score"].startswith("log-likelihood")
    assert result["gate_passed"] and len(pd.read_csv(out / "synthetic.csv")) == result["training_batch"]["rows_estimate"]
