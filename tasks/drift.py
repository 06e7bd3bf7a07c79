"""Tasks of the ``monitor_drift`` flow: find the champion's training batch, compare (DP), report.

Each task wraps one dpsyn call or one MLflow look-up; frames stay in the
run's private work folders (file references only between tasks).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from dpsyn.config import DriftMonitorConfig, SynthesizeConfig

PRIVATE = dict(cache_policy=NO_CACHE, persist_result=False, retries=0)
DATA_PATH_TAG = "dpsyn.data_path"  # the training batch's file, set on every synthesize run
REPORT = "drift_report.json"
REPORT_HTML = "drift_report.html"


def model_name(cfg: SynthesizeConfig, schema_name: str) -> str:
    return cfg.model_name or f"dpsyn-{schema_name}"


@task(name="champion-training-batch", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=5)
def champion_batch(config: DriftMonitorConfig, schema_name: str) -> dict | None:
    """The file and content hash of the champion version's training batch (None: no champion yet).

    An I/O look-up in the MLflow registry, so it may retry.
    """
    if config.reference is not None:
        return {"path": str(config.reference), "batch_id": None, "model": None, "version": None}
    from tasks.tracking import champion_info

    info = champion_info(model_name(config.synthesize, schema_name))
    if info is None:
        return None
    path = info["run_tags"].get(DATA_PATH_TAG)
    if not path:
        raise FileNotFoundError(
            f"the champion of {info['name']} (version {info['version']}) has no recorded training batch file "
            f"(tag {DATA_PATH_TAG}); pass `reference` in the monitor's config")
    return {"path": path, "batch_id": info["tags"].get("training_batch"), "model": info["name"],
            "version": info["version"]}


@task(name="detect-drift", **PRIVATE)
def detect(config: DriftMonitorConfig, ref_work: str, cur_work: str, work: str, reference: dict,
           batches: tuple[dict, dict] | None = None) -> dict:
    """One DP release comparing the two masked batches; writes the report (JSON, HTML) into ``work``.

    With the batches' exact counts merged from their partitions (flows/partitioned.py, ``batches`` their
    summaries) the release is computed from those; otherwise from the masked tables.
    """
    from dpsyn.drift import detect_drift_from_statistics, drift_statistics, render_html
    from dpsyn.privacy import NoiseSource, PrivacyAccountant
    from dpsyn.schema import load_schema
    from dpsyn.validation.stats import RealStatistics
    from tasks.stages import MASKED, REAL_STATISTICS

    schema = load_schema(config.synthesize.table_schema)

    def counts(w: str) -> RealStatistics:
        path = Path(w) / REAL_STATISTICS
        return RealStatistics.load(path) if path.exists() else drift_statistics(pd.read_parquet(Path(w) / MASKED),
                                                                                  schema)

    ref, cur = counts(ref_work), counts(cur_work)
    p = config.synthesize.privacy
    acct = PrivacyAccountant(epsilon=config.drift.epsilon, delta=p.resolved_delta(schema.population_size),
                             accountant=p.accountant)
    rep = detect_drift_from_statistics(ref, cur, schema, config.drift, accountant=acct,
                                       noise=NoiseSource(secure=p.secure_rng))
    acct.check()
    context = {"model": f"{reference.get('model') or '-'} v{reference.get('version') or '-'}",
               "training batch": Path(reference["path"]).name, "new batch": Path(config.data).name}
    (Path(work) / REPORT).write_text(rep.model_dump_json(indent=1))
    (Path(work) / REPORT_HTML).write_text(render_html(rep, context=context))
    get_run_logger().info("drift check: %s", rep.summary())
    out = {"drifted": rep.drifted, "summary": rep.summary(), "drifted_columns": rep.drifted_columns,
           "privacy": acct.summary(), "reference_batch": reference.get("batch_id"),
           "rows_reference": rep.n_reference, "rows_new": rep.n_current,  # noisy counts (DP)
           "max_ks": max([c.value for c in rep.columns if c.statistic == "ks"], default=0.0),
           "max_psi": max([c.value for c in rep.columns if c.statistic == "psi"], default=0.0)}
    (Path(work) / "drift_summary.json").write_text(json.dumps(out))
    return out


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


@task(name="mlflow-log-drift", cache_policy=NO_CACHE, persist_result=False)
def log_drift(config: DriftMonitorConfig, result: dict | None, work: str, *, reference: dict, population: str,
              alert: str | None = None, status: str = "FINISHED") -> str:
    """One MLflow run per drift check (experiment ``config.experiment``): verdict, statistics, ε, report files."""
    from tasks import tracking as mlf

    run_id = mlf.start_run(config.experiment, {"drift": config.drift.model_dump()}, tags={
        "mlflow.runName": "monitor-drift", "dpsyn.flow": "monitor_drift", "dpsyn.population": population,
        "dpsyn.new_batch_file": Path(config.data).name, "dpsyn.reference_model": str(reference.get("model")),
        "dpsyn.reference_version": str(reference.get("version")), **({"dpsyn.alert": alert} if alert else {})})
    if result:
        mlf.log_metrics(run_id, {"drifted": float(result["drifted"]), "max_ks": result["max_ks"],
                                 "max_psi": result["max_psi"], "epsilon_spent": result["privacy"]["epsilon_spent"],
                                 "rows_reference": result["rows_reference"], "rows_new": result["rows_new"]})
        for name in (REPORT, REPORT_HTML):
            if (Path(work) / name).exists():
                mlf.log_file(run_id, Path(work) / name, artifact_path="reports")
    mlf.end_run(run_id, status)
    return run_id
