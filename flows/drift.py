"""The ``monitor_drift`` flow: has the real data moved since the champion model was trained?

Monthly (deployments/prefect.yaml): reserve the check's ε in the population's
budget ledger → scrub and mask the champion's training batch and the newest
batch → one DP release of per-column KS statistics and share vectors (PSI) →
report (MLflow run, HTML with plots, Prefect artifact) → commit the spend → on
drift, run ``synthesize`` on the new batch (which reserves its own ε, and is
refused with an alert in the report if the lifetime cap cannot cover it).
Without a champion yet, the monitor trains the first model.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from dpsyn.config import DriftMonitorConfig
from dpsyn.errors import PrivacyBudgetExceededError
from flows import partitioned
from flows.synthesize import synthesize
from tasks import budget as budget_tasks
from tasks import drift as drift_tasks
from tasks import stages


@flow(name="monitor-drift", log_prints=False, persist_result=False, validate_parameters=True)
def monitor_drift(config: DriftMonitorConfig) -> dict:
    """Compare the newest batch with the champion's training batch; retrain on drift within the budget."""
    from dpsyn.schema import load_schema

    schema = load_schema(config.synthesize.table_schema)
    schema_name = schema.name
    retrain_cfg = config.synthesize.model_copy(update={"data": config.data, "versioned_output": True})
    reference = drift_tasks.champion_batch(config, schema_name)
    if reference is None:
        return {"drifted": None, "retrained": True, "reason": "no champion model yet: trained the first one",
                "synthesize": synthesize(retrain_cfg)}

    budget = config.synthesize.budget
    population = budget_tasks.population_of(budget, schema)
    key = budget_tasks.run_key("drift-check")
    delta = config.synthesize.privacy.resolved_delta(schema.population_size)
    budget_tasks.reserve(budget, population, key, config.drift.epsilon, delta, purpose="drift-check",
                         note=f"new batch {Path(config.data).name}")
    ref_work, cur_work, work = stages.make_workdir(), stages.make_workdir(), stages.make_workdir()
    try:
        try:
            budget_tasks.mark_read(budget, key)
            no_holdout = config.synthesize.validation.model_copy(update={"utility": False})
            batches = []
            for data, w in ((Path(reference["path"]), ref_work), (config.data, cur_work)):
                cfg = config.synthesize.model_copy(update={"data": data, "validation": no_holdout})
                # scrub → mask → the drift check's exact counts, per partition (on Dask for large batches)
                batches.append(partitioned.prepare(cfg, w, statistics="drift"))
            result = drift_tasks.detect(config, ref_work, cur_work, work, reference, batches=tuple(batches))
        except BaseException:
            budget_tasks.settle(budget, key, None)  # after reading, the whole reservation stays charged
            drift_tasks.log_drift(config, None, work, reference=reference, population=population, status="FAILED")
            raise
        budget_tasks.settle(budget, key, result["privacy"])
        alert = budget_tasks.retrain_refusal(budget, population, retrain_cfg.privacy.epsilon) \
            if result["drifted"] and config.retrain else None
        drift_tasks.log_drift(config, result, work, reference=reference, population=population, alert=alert)
        drift_tasks.publish_artifact(result, alert)
    finally:
        for w in (ref_work, cur_work, work):
            stages.remove_workdir(w)
    if alert:
        raise PrivacyBudgetExceededError(alert)
    retrained = synthesize(retrain_cfg) if result["drifted"] and config.retrain else None
    return {"drifted": result["drifted"], "summary": result["summary"], "retrained": retrained is not None,
            "synthesize": retrained, "epsilon_spent": result["privacy"]["epsilon_spent"], "population": population}
