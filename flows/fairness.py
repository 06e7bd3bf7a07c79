"""The ``audit_fairness`` flow: per-group privacy risk of DP-SGD (and DP-SGD-S) on one table.

One pydantic config is the only parameter. With ``compare`` both training
methods are audited and charted side by side. The MLflow run (experiment
``config.experiment``) holds Δ and GPR per group as metrics and the bar chart
``reports/fairness.png``.
"""

from __future__ import annotations

from prefect import flow

from dpsyn.config import FairnessAuditConfig
from tasks import budget as budget_tasks
from tasks import fairness as fairness_tasks


@flow(name="audit_fairness", log_prints=False, persist_result=False, validate_parameters=True)
def audit_fairness(config: FairnessAuditConfig) -> dict:
    """Audit ``config.method`` (and the other method with ``compare``); log the results; return the MLflow run."""
    budget_tasks.record_access(config.ledger_url, config.population, config.table_schema, "audit_fairness flow",
                               f"data {config.data.name}")
    methods = [config.method] + ([m for m in ("dpsgd", "dpsgd-s") if m != config.method] if config.compare else [])
    results = [fairness_tasks.audit_task(config, m) for m in methods]
    run_id = fairness_tasks.log_fairness(config, results)
    return {"mlflow_run_id": run_id, "delta": {r["config"]["method"]: r["risk"]["delta"] for r in results}}
