"""The one MLflow adapter: everything dpsyn records in MLflow goes through here.

It uses ``MlflowClient`` with explicit run ids (no global active run), so
tasks in any thread can log to the run. It logs settings, ε, δ and DP
statistics, reports of counts, and the fitted model: never a data value.
The default store is SQLite under ``$DPSYN_HOME`` (see dpsyn.home).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from prefect import task

from dpsyn.home import dpsyn_home, mlflow_artifact_root, mlflow_tracking_uri

_MAX_PARAM = 500


def client():
    import mlflow
    from mlflow.tracking import MlflowClient

    uri = mlflow_tracking_uri()
    if uri.startswith("sqlite:///"):
        dpsyn_home().mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(uri)
    return MlflowClient(tracking_uri=uri)


def _experiment_id(c, name: str) -> str:
    exp = c.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    location = None
    if mlflow_tracking_uri().startswith("sqlite:///"):
        location = f"{mlflow_artifact_root()}/{name}"
    return c.create_experiment(name, artifact_location=location)


def _flatten(d: dict, prefix: str = "") -> dict[str, str]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = json.dumps(v, default=str) if isinstance(v, (list, dict)) else str(v)
    return {k: v[:_MAX_PARAM] for k, v in out.items()}


def start_run(experiment: str, params: dict[str, Any], tags: dict[str, str] | None = None) -> str:
    from mlflow.entities import Param, RunTag

    c = client()
    run = c.create_run(_experiment_id(c, experiment), tags={"mlflow.runName": "synthesize", **(tags or {})})
    flat = _flatten(params)
    items = list(flat.items())
    for i in range(0, len(items), 100):
        c.log_batch(run.info.run_id, params=[Param(k, v) for k, v in items[i : i + 100]])
    if tags:
        c.log_batch(run.info.run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])
    return run.info.run_id


def log_metrics(run_id: str, metrics: dict[str, float]) -> None:
    import time

    from mlflow.entities import Metric

    ts = int(time.time() * 1000)
    items = [Metric(k.replace(":", "."), float(v), ts, 0) for k, v in metrics.items() if v is not None]
    c = client()
    for i in range(0, len(items), 500):
        c.log_batch(run_id, metrics=items[i : i + 500])


def log_params(run_id: str, params: dict[str, Any]) -> None:
    from mlflow.entities import Param

    c = client()
    existing = set(c.get_run(run_id).data.params)
    items = [Param(k, v) for k, v in _flatten(params).items() if k not in existing]
    for i in range(0, len(items), 100):
        c.log_batch(run_id, params=items[i : i + 100])


def log_dict(run_id: str, obj: Any, artifact_file: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / Path(artifact_file).name
        p.write_text(json.dumps(obj, indent=2, default=str))
        sub = str(Path(artifact_file).parent) if Path(artifact_file).parent != Path(".") else None
        client().log_artifact(run_id, str(p), artifact_path=sub)


def log_file(run_id: str, path: str | Path, artifact_path: str | None = None) -> None:
    client().log_artifact(run_id, str(path), artifact_path=artifact_path)


def set_tags(run_id: str, tags: dict[str, Any]) -> None:
    c = client()
    for k, v in tags.items():
        c.set_tag(run_id, k, str(v))


def register_model(run_id: str, name: str, tags: dict[str, Any] | None = None) -> str:
    """Register the run's logged ``model`` artifact as a new version of ``name``; return the version."""
    from mlflow.exceptions import MlflowException

    c = client()
    try:
        c.create_registered_model(name, description="dpsyn synthesizers fitted on one dataset (schema)")
    except MlflowException as e:
        if "already exists" not in str(e).lower() and "RESOURCE_ALREADY_EXISTS" not in str(e):
            raise
    source = c.get_run(run_id).info.artifact_uri.rstrip("/") + "/model"
    mv = c.create_model_version(name, source, run_id=run_id, tags={k: str(v) for k, v in (tags or {}).items()})
    return str(mv.version)


def end_run(run_id: str, status: str = "FINISHED") -> None:
    client().set_terminated(run_id, status=status)


# -- tasks ---------------------------------------------------------------------------------
NOCACHE = dict(persist_result=False, retries=2, retry_delay_seconds=2)


@task(name="mlflow-start-run", **NOCACHE)
def start_run_task(config, tags: dict[str, str]) -> str:
    return start_run(config.experiment, config.model_dump(mode="json"), tags)


@task(name="mlflow-log-privacy", **NOCACHE)
def log_privacy_task(run_id: str, privacy: dict | None) -> None:
    """ε spent, δ, accountant, and every mechanism of the run (logged even when the run fails)."""
    if privacy is None:
        return
    metrics = {
        "epsilon_spent": privacy["epsilon_spent"],
        "delta": privacy["delta"],
        "target_epsilon": privacy["target_epsilon"],
    }
    for label, eps in privacy.get("epsilon_alone_by_mechanism", {}).items():
        metrics[f"epsilon_alone.{label}"] = eps
    for m in privacy.get("mechanisms", []):
        metrics[f"noise_multiplier.{m['label']}"] = m["noise_multiplier"]
        metrics[f"sample_rate.{m['label']}"] = m["sample_rate"]
        metrics[f"steps.{m['label']}"] = m["steps"]
    log_metrics(run_id, metrics)
    set_tags(run_id, {"dpsyn.accountant": privacy["accountant"], "dpsyn.epsilon_spent": f"{privacy['epsilon_spent']:.6f}"})
    log_dict(run_id, privacy, "privacy/privacy.json")
    if privacy.get("epsilon_curve"):
        log_epsilon_curve(run_id, privacy)


def log_epsilon_curve(run_id: str, privacy: dict) -> None:
    """The run's ε(δ) curve as a PNG, with the target marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d, e = zip(*privacy["epsilon_curve"], strict=True)
    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=120)
    ax.semilogx(d, e, marker="o")
    ax.axvline(privacy["delta"], color="grey", ls="--", lw=1, label=f"δ = {privacy['delta']:g}")
    ax.axhline(privacy["target_epsilon"], color="red", ls=":", lw=1, label=f"target ε = {privacy['target_epsilon']:g}")
    ax.set_xlabel("δ")
    ax.set_ylabel("ε spent")
    ax.set_title(f"ε(δ) of the run ({privacy['accountant']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "epsilon_delta.png"
        fig.savefig(p)
        plt.close(fig)
        client().log_artifact(run_id, str(p), artifact_path="privacy")


@task(name="mlflow-log-results", **NOCACHE)
def log_results_task(run_id: str, *, fit_summary: dict, scrub_report: dict, batch: dict, validation: dict,
                     watermark: dict, model_path: str, report_html: str | None = None,
                     ge_docs: str | None = None) -> None:
    log_params(run_id, {"synth": fit_summary.get("params", {}), "training": fit_summary.get("training", {})})
    from dpsyn.validation import ValidationReport

    rep = ValidationReport.model_validate(validation)
    metrics = rep.metrics()
    metrics["validation_noise_std"] = rep.noise_std
    metrics["rows_real"] = batch["rows"]
    metrics["rows_synthetic"] = rep.n_synthetic
    metrics["pii_entities_scrubbed"] = sum(sum(v.values()) for v in scrub_report.get("counts", {}).values())
    log_metrics(run_id, metrics)
    set_tags(run_id, {
        "dpsyn.training_batch": batch["batch_id"],
        "dpsyn.watermark_code": watermark["code"],
        "dpsyn.watermark_key_id": watermark["key_id"],
        "dpsyn.gate_passed": rep.is_valid(),
    })
    log_dict(run_id, validation, "reports/validation_report.json")
    if report_html and Path(report_html).exists():
        log_file(run_id, report_html, artifact_path="reports")
    if ge_docs and Path(ge_docs).is_dir():  # Great Expectations' validation result and Data Docs (synthetic table)
        client().log_artifacts(run_id, str(ge_docs), artifact_path="reports/great_expectations")
    log_dict(run_id, scrub_report, "reports/scrub_report.json")
    log_dict(run_id, {k: v for k, v in batch.items()}, "reports/training_batch.json")
    log_file(run_id, model_path, artifact_path="model")


@task(name="mlflow-register-model", persist_result=False, retries=0)
def register_model_task(run_id: str, name: str, tags: dict[str, Any]) -> str:
    """One new registry version per published run (no retry: a retry could register twice)."""
    return register_model(run_id, name, tags)


@task(name="mlflow-end-run", **NOCACHE)
def end_run_task(run_id: str, status: str) -> None:
    end_run(run_id, status)
