"""The ``synthesize-dataset`` flow (flows/dataset.py): related tables through Prefect, with an MLflow run whose
every key is in the release inventory; a dataset the gate cannot judge publishes nothing and its MLflow run ends
FAILED with the gate's report."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpsyn.config import DatasetRunConfig
from dpsyn.errors import GateFailedError
from dpsyn.privacy.inventory import unclassified

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data" / "synthea"


def _config(out: Path, **kw) -> DatasetRunConfig:
    # 40 patients: the persons' target-signal check (a permutation p-value on the synthetic rows alone, no ε) sits
    # near its α there and stopped 1 of 8 runs of these tests with "failed" before the uninformative verdict they
    # are about; it is left out here (tests/unit/validation/test_target_signal.py covers it)
    base = dict(dataset="synthea", data=DATA, out=out, privacy={"epsilon": 20.0}, experiment="datasets-test",
                synthesizer_config={"backbone": {"iters": 30}}, budget={"ledger_url": f"sqlite:///{out.parent}/b.db"},
                lineage_url=f"sqlite:///{out.parent}/lineage.db", gate={"validation": {"target_signal_alpha": None}})
    return DatasetRunConfig(**{**base, **kw})


def test_a_dataset_run_through_prefect_has_an_mlflow_run_whose_keys_are_classified(prefect_harness, tmp_path):
    from flows.dataset import synthesize_dataset
    from tasks.tracking import client

    from .inventory_helpers import Collected, mlflow_run

    out = tmp_path / "release"
    result = synthesize_dataset(_config(out, allow_uninformative=True))  # 40 patients: too few for the gate
    assert (out / "manifest.json").exists() and (out / "conditions.csv").exists()
    run = client().get_run(result["mlflow_run_id"])
    assert run.info.status == "FINISHED"
    tags = run.data.tags
    assert tags["dpsyn.run_id"] == result["run_id"] and tags["dpsyn.gate_verdict"] == "uninformative"
    assert tags["mlflow.runName"] == "dataset-synthea-eps20"
    assert {tags[f"dpsyn.watermark_code.{t}"] for t in ("patients", "conditions", "medications")} == {
        v["watermark_code"] for v in result["tables"].values()}
    assert run.data.metrics["epsilon_spent"] == pytest.approx(result["privacy"]["epsilon_spent"])
    arts = {a.path for a in client().list_artifacts(run.info.run_id, "reports")}
    assert {"reports/manifest.json", "reports/validation_report.html", "reports/validation_report.json"} <= arts
    c = Collected()
    mlflow_run(c, run.info.run_id)
    assert unclassified(c.items) == []


def test_a_stopped_dataset_run_publishes_nothing_and_its_mlflow_run_fails_with_the_report(prefect_harness, tmp_path):
    from flows.dataset import synthesize_dataset
    from tasks.tracking import client

    out = tmp_path / "release"
    with pytest.raises(GateFailedError, match="cannot judge this dataset"):
        synthesize_dataset(_config(out))
    assert not out.exists()
    exp = client().get_experiment_by_name("datasets-test")
    failed = [r for r in client().search_runs([exp.experiment_id]) if r.info.status == "FAILED"]
    assert failed
    arts = {a.path for a in client().list_artifacts(failed[0].info.run_id, "reports")}
    assert "reports/validation_report.html" in arts
