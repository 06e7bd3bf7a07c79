"""Tasks of the ``synthesize-dataset`` flow: one dpsyn call each (dpsyn.relational.run_dataset), and the MLflow
records through the one adapter (tasks/tracking.py)."""

from __future__ import annotations

from pathlib import Path

from prefect import task

from tasks import tracking as mlf
from tasks.options import FIT_TIMEOUT_S, private_task


def run_id() -> str:
    """The dpsyn run id of a dataset run: the Prefect flow run's id (a random uuid outside a flow)."""
    import uuid

    from prefect.runtime import flow_run

    return str(flow_run.id or uuid.uuid4().hex).replace("-", "")


@task(name="mlflow-start-dataset-run", **mlf.NOCACHE)
def start(config, rid: str) -> str:
    """Open the MLflow run (the config as params, the run id and orchestrator as tags)."""
    return mlf.start_dataset_run(config, rid)


@private_task("synthesize-dataset", timeout_seconds=FIT_TIMEOUT_S)
def synthesize(config, rid: str) -> dict:
    """Reserve, read, fit, sample, gate, watermark, publish, settle (dpsyn.relational.run_dataset)."""
    from dpsyn.relational import reports_dir, run_dataset

    return run_dataset(config.dataset, config.data, config.out, privacy=config.privacy,
                       config=config.synthesizer_config, gate=config.gate,
                       allow_uninformative=config.allow_uninformative, reports=reports_dir(rid),
                       ledger_url=config.budget.ledger_url, lineage_url=config.lineage_url,
                       lifetime_epsilon=config.budget.lifetime_epsilon, overwrite=config.overwrite, run_id=rid,
                       scrub=config.scrub, mask=config.mask)


@task(name="mlflow-close-dataset-run", **mlf.NOCACHE)
def close(mlflow_run_id: str, rid: str, config, manifest: dict | None) -> None:
    """Log what the run released (or, stopped, the gate's report) and end the MLflow run."""
    from dpsyn.relational import reports_dir

    reports = Path(config.out) if manifest is not None else reports_dir(rid)
    mlf.log_dataset_result(mlflow_run_id, manifest=manifest, reports=reports)
    mlf.end_run(mlflow_run_id, "FINISHED" if manifest is not None else "FAILED")
