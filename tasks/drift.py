"""Tasks of the ``monitor_drift`` flow: find the champion's training batch, compare (DP), report.

Each task wraps one call into :mod:`dpsyn.pipeline.drift` (or one MLflow look-up or record); frames stay in the
run's private work folder.
"""

from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from dpsyn.config import DriftMonitorConfig
from dpsyn.pipeline import RunContext
from dpsyn.pipeline import drift as drift_stages
from tasks.options import private_task

DATA_PATH_TAG = "dpsyn.data_path"  # the training batch's file, set on every synthesize run


@task(name="champion-training-batch", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=5)
def champion_batch(config: DriftMonitorConfig) -> dict | None:
    """The file and random id of the champion version's training batch (None: no champion yet).

    An I/O look-up in the MLflow registry, so it may retry.
    """
    if config.reference is not None:
        return {"path": str(config.reference), "batch_id": None, "model": None, "version": None}
    from dpsyn.pipeline.manifest import model_name
    from dpsyn.schema import load_schema
    from tasks.tracking import champion_info

    info = champion_info(model_name(config.synthesize, load_schema(config.synthesize.table_schema).name))
    if info is None:
        return None
    path = info["run_tags"].get(DATA_PATH_TAG)
    if not path:
        raise FileNotFoundError(
            f"the champion of {info['name']} (version {info['version']}) has no recorded training batch file "
            f"(tag {DATA_PATH_TAG}); pass `reference` in the monitor's config")
    return {"path": path, "batch_id": info["tags"].get("training_batch"), "model": info["name"],
            "version": info["version"]}


@private_task("begin-drift-check")
def begin(config: DriftMonitorConfig) -> RunContext:
    """Reserve the check's ε in the population's budget; make the run's work folder (keyed by the flow run)."""
    from prefect.runtime import flow_run

    return drift_stages.begin(config, run_id=str(flow_run.id) if flow_run.id else None)


@private_task("drift-subcontext")
def sub_context(ctx: RunContext, name: str) -> RunContext:
    return drift_stages.sub_context(ctx, name)


@private_task("detect-drift")
def detect(config: DriftMonitorConfig, ctx: RunContext, reference: dict) -> dict:
    """One DP release comparing the two prepared batches; the report (JSON, HTML) is written to the work folder."""
    result = drift_stages.detect(config, ctx, reference)
    get_run_logger().info("drift check: %s", result["summary"])
    return result


@private_task("budget-settle-drift")
def settle(ctx: RunContext, privacy: dict) -> dict:
    from dpsyn.pipeline import lifecycle

    return lifecycle.settle(ctx, privacy, note="drift check")


@task(name="budget-check-retrain", persist_result=False, retries=0)
def retrain_refusal(config: DriftMonitorConfig, ctx: RunContext, result: dict) -> str | None:
    """Why a retrain cannot run now (advisory: the retrain's own reservation enforces the cap), or None."""
    if not (result["drifted"] and config.retrain):
        return None
    return drift_stages.retrain_refusal(config, ctx, drift_stages.retrain_config(config).privacy.epsilon)


@task(name="drift-artifact", cache_policy=NO_CACHE, persist_result=False)
def publish_artifact(result: dict, alert: str | None = None) -> None:
    """The verdict as a Prefect Markdown artifact (key ``drift-report``): noisy statistics only."""
    from tasks.artifacts import _in_run

    if not _in_run():
        return
    from prefect.artifacts import create_markdown_artifact

    lines = [f"## Drift check: {'DRIFT' if result.get('drifted') else 'no drift'}", "", result.get("summary", ""), "",
             f"Training batch about {result.get('rows_reference', 0):,} rows, new batch about "
             f"{result.get('rows_new', 0):,} rows (noisy counts); "
             f"ε {result.get('privacy', {}).get('epsilon_spent', 0):.3f}. Plots: `drift_report.html` in MLflow."]
    if alert:
        lines += ["", f"**ALERT:** {alert}"]
    create_markdown_artifact(key="drift-report", markdown="\n".join(lines), description="Drift check verdict")


@task(name="mlflow-start-drift-run", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=2)
def start_run(config: DriftMonitorConfig, ctx: RunContext, reference: dict) -> RunContext:
    """One MLflow run per drift check (experiment ``config.experiment``), opened before the read."""
    from dpsyn.pipeline.drift import check_name
    from tasks import tracking as mlf

    run_id = mlf.start_run(config.experiment, {"drift": config.drift.model_dump()}, tags={
        "mlflow.runName": check_name(config),
        "dpsyn.run_id": ctx.run_id, "dpsyn.flow": "monitor_drift", "dpsyn.population": ctx.population,
        "dpsyn.new_batch_file": Path(config.data).name, "dpsyn.reference_model": str(reference.get("model")),
        "dpsyn.reference_version": str(reference.get("version"))})
    return ctx.update(tracker_run_id=run_id)


@task(name="mlflow-log-drift", cache_policy=NO_CACHE, persist_result=False)
def log_drift(ctx: RunContext, result: dict, alert: str | None = None) -> None:
    """The verdict, noisy statistics, ε and the report files on the check's MLflow run."""
    from tasks import tracking as mlf

    ctx = ctx.reload()
    run_id = ctx.tracker_run_id
    if alert:
        mlf.set_tags(run_id, {"dpsyn.alert": alert})
    mlf.log_metrics(run_id, {"drifted": float(result["drifted"]), "max_ks": result["max_ks"],
                             "max_psi": result["max_psi"], "epsilon_spent": result["privacy"]["epsilon_spent"],
                             "rows_reference": result["rows_reference"], "rows_new": result["rows_new"]})
    for name in (drift_stages.REPORT, drift_stages.REPORT_HTML):
        if (ctx.work / name).exists():
            mlf.log_file(run_id, ctx.work / name, artifact_path="reports")
    ctx.update(privacy_logged=True)


@task(name="retrain-alert", persist_result=False, retries=0)
def raise_if_alert(alert: str | None) -> None:
    """A drift the lifetime cap cannot retrain on fails the monitor's run with the alert (after its report)."""
    if alert:
        from dpsyn.errors import PrivacyBudgetExceededError

        raise PrivacyBudgetExceededError(alert)
