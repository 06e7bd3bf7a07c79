"""The ``monitor_drift`` flow: has the real data moved since the champion model was trained?

Monthly (deployments/prefect.yaml): reserve the check's ε in the population's budget ledger → scrub, mask and
count the champion's training batch and the newest batch → one DP comparison (noisy batch sizes, then KS
statistics and share vectors, PSI) → report (MLflow run, HTML with plots, Prefect artifact) → settle the spend →
on drift, run ``synthesize`` on the new batch (which reserves its own ε, and is refused with an alert if the
lifetime cap cannot cover it). Without a champion yet, the monitor trains the first model. A check that stops is
closed by the failure hook (tasks/hooks.py).
"""

from __future__ import annotations

from prefect import flow

from dpsyn.config import DriftMonitorConfig
from dpsyn.pipeline.drift import batch_config, retrain_config
from flows import partitioned
from flows.synthesize import HOOKS, synthesize
from tasks import drift as drift_tasks
from tasks import stages
from tasks import tracking as mlf
from tasks.options import FLOW_TIMEOUT_S, flow_run_name


@flow(name="monitor-drift", flow_run_name=flow_run_name, timeout_seconds=FLOW_TIMEOUT_S, log_prints=False,
      persist_result=False, validate_parameters=True, **HOOKS)
def monitor_drift(config: DriftMonitorConfig) -> dict:
    """Compare the newest batch with the champion's training batch; retrain on drift within the budget."""
    stages.sweep_stopped(config.synthesize)  # runs killed earlier: closed, their folders removed
    reference = drift_tasks.champion_batch(config)
    if reference is None:
        return {"drifted": None, "retrained": True, "reason": "no champion model yet: trained the first one",
                "synthesize": synthesize(retrain_config(config))}
    ctx = drift_tasks.begin(config)
    ctx = drift_tasks.start_run(config, ctx, reference)
    ctx = stages.mark_read(ctx)
    for name, data in (("reference", reference["path"]), ("current", config.data)):
        # scrub → mask → the drift check's exact counts, per partition (on Dask for large batches)
        partitioned.prepare(batch_config(config, data), drift_tasks.sub_context(ctx, name), statistics="drift")
    result = drift_tasks.detect(config, ctx, reference)
    drift_tasks.settle(ctx, result["privacy"])
    alert = drift_tasks.retrain_refusal(config, ctx, result)
    drift_tasks.log_drift(ctx, result, alert)
    drift_tasks.publish_artifact(result, alert)
    mlf.end_run_task(ctx, "FINISHED")
    stages.finish(ctx)
    drift_tasks.raise_if_alert(alert)
    retrained = synthesize(retrain_config(config)) if result["drifted"] and config.retrain else None
    return {"drifted": result["drifted"], "summary": result["summary"], "retrained": retrained is not None,
            "synthesize": retrained, "epsilon_spent": result["privacy"]["epsilon_spent"],
            "population": ctx.population}
