"""Tasks of the ``audit_fairness`` flow: run the group privacy-fairness audit, report it to MLflow and Prefect.

The audit task reads the private table (caching and result persistence off)
and returns per-group aggregates only; the report task writes the bar chart,
JSON and Markdown to a temporary folder and logs them to MLflow.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from prefect import task
from prefect.cache_policies import NO_CACHE

from dpsyn.config import FairnessAuditConfig
from tasks.options import private_task

METHOD_NAMES = {"dpsgd": "DP-SGD", "dpsgd-s": "DP-SGD-S"}


@private_task("fairness-audit")
def audit_task(config: FairnessAuditConfig, method: str) -> dict:
    """One audit (2R + 1 models) with ``method``; per-group aggregates, utility and outcome fairness."""
    from dpsyn.audit.fairness_audit import run_fairness_audit

    return run_fairness_audit(config.model_copy(update={"method": method})).model_dump(mode="json")


def _key(s: str) -> str:
    """A metric-name-safe form of a group label (MLflow allows letters, digits, _ - . / and space)."""
    return re.sub(r"[^\w\-./ ]", "_", s)


def write_reports(results: list[dict], folder: str | Path) -> list[Path]:
    """fairness.png (GPR per group, one series per method), fairness.json and fairness.md in ``folder``."""
    from dpsyn.audit.fairness import GroupRiskReport, plot_group_risk
    from dpsyn.audit.fairness_audit import FairnessAuditResult

    folder = Path(folder)
    res = [FairnessAuditResult.model_validate(r) for r in results]
    reports: dict[str, GroupRiskReport] = {METHOD_NAMES[r.config["method"]]: r.risk for r in res}
    png = folder / "fairness.png"
    cfg = res[0].config
    plot_group_risk(reports, png, title=f"{cfg['model']} model, ε = {cfg['epsilon']:g}: membership-inference "
                                        f"advantage by {cfg['group']}")
    (folder / "fairness.json").write_text(json.dumps(results, indent=1))
    (folder / "fairness.md").write_text("\n\n".join(r.to_markdown() for r in res) + "\n")
    return [png, folder / "fairness.json", folder / "fairness.md"]


@task(name="log-fairness", cache_policy=NO_CACHE, persist_result=False, retries=2, retry_delay_seconds=5)
def fairness_params(config: FairnessAuditConfig) -> dict:
    """The audit's config as MLflow params (no paths; a ledger URL's password as ``***``)."""
    from dpsyn.sqlite import hide_password

    params = config.model_dump(mode="json", exclude={"data", "test", "experiment"})
    if "ledger_url" in params:
        params["ledger_url"] = hide_password(params["ledger_url"])
    return params


def log_fairness(config: FairnessAuditConfig, results: list[dict]) -> str:
    """One MLflow run in ``config.experiment``: Δ, GPR per group, utility per method; the chart and reports."""
    from tasks import tracking as mlf
    from tasks.artifacts import _in_run

    params = fairness_params(config)
    run_id = mlf.start_run(config.experiment, params, tags={
        "mlflow.runName": f"fairness-{config.group}", "dpsyn.flow": "audit_fairness",
        "dpsyn.data_file": Path(config.data).name})
    metrics = {}
    for r in results:
        m = r["config"]["method"].replace("-", "_")
        metrics[f"{m}.delta"] = r["risk"]["delta"]
        metrics[f"{m}.mean_advantage"] = r["risk"]["mean_advantage"]
        metrics[f"{m}.epsilon_spent_max"] = r["epsilon_spent_max"]
        metrics.update({f"{m}.{k}": v for k, v in r["utility"].items()})
        metrics.update({f"{m}.gpr.{_key(g['group'])}": g["gpr"] for g in r["risk"]["groups"]})
    mlf.log_metrics(run_id, metrics)
    with tempfile.TemporaryDirectory() as tmp:
        for f in write_reports(results, tmp):
            mlf.log_file(run_id, f, artifact_path="reports")
        md = (Path(tmp) / "fairness.md").read_text()
    if _in_run():
        from prefect.artifacts import create_markdown_artifact

        create_markdown_artifact(key="fairness-audit", markdown="## Group privacy fairness\n\n" + md,
                                 description="Per-group membership-inference advantage (GPR) and Δ")
    mlf.end_run(run_id, "FINISHED")
    return run_id
