"""The ``synthesize-dataset`` flow: related tables (a persons' table and child tables) synthesized with a
per-person guarantee, judged by the gate across tables, watermarked and recorded per table, published in one
folder (dpsyn.relational.run_dataset), with an MLflow run of its config, ε, verdict and report.

It composes tasks only (``tasks/dataset.py``). A run the gate stops publishes nothing; its MLflow run ends
FAILED with the gate's report, and the error reaches the caller.
"""

from __future__ import annotations

from prefect import flow

from dpsyn.config import DatasetRunConfig
from tasks import dataset as ds
from tasks.options import FLOW_TIMEOUT_S


def dataset_run_name() -> str:
    from prefect.runtime import flow_run

    raw = flow_run.parameters.get("config")
    try:
        cfg = raw if isinstance(raw, DatasetRunConfig) else DatasetRunConfig.model_validate(raw)
        return cfg.run_name()
    except Exception:  # a name is advice: a bad parameter fails the run itself
        return "synthesize-dataset"


@flow(name="synthesize-dataset", flow_run_name=dataset_run_name, timeout_seconds=FLOW_TIMEOUT_S, log_prints=False,
      persist_result=False, validate_parameters=True)
def synthesize_dataset(config: DatasetRunConfig) -> dict:
    """Synthesize every table of ``config.dataset`` and publish them at ``config.out`` if the gate passes."""
    rid = ds.run_id()
    mlflow_run_id = ds.start(config, rid)
    try:
        manifest = ds.synthesize(config, rid)
    except BaseException:
        ds.close(mlflow_run_id, rid, config, None)
        raise
    ds.close(mlflow_run_id, rid, config, manifest)
    return {**manifest, "mlflow_run_id": mlflow_run_id}
