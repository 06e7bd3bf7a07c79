"""The ``synthesize`` flow: scrub → mask → noisy counts → DP synthesis → watermark → gate → record → publish.

It composes tasks only: each is one stage of :mod:`dpsyn.pipeline` (``tasks/stages.py``) or one MLflow call
(``tasks/tracking.py``). One pydantic config is the only parameter, so a bad parameter fails before the run
starts and renders as a form in the Prefect UI. A run that stops anywhere (a failed gate included) is closed by
the failure hook (``tasks/hooks.py``: budget, MLflow, work folder). Every run that reaches the gate becomes a
version of the registered model; the alias ``champion`` moves to it only when the gate passed and the release
was published. ``dpsyn.pipeline.run`` runs the same stages without Prefect.
"""

from __future__ import annotations

from prefect import flow

from dpsyn.config import SynthesizeConfig
from flows import partitioned
from tasks import artifacts, hooks, stages
from tasks import tracking as mlf
from tasks.options import FLOW_TIMEOUT_S, flow_run_name

HOOKS = dict(on_failure=[hooks.abort_run], on_crashed=[hooks.abort_run], on_cancellation=[hooks.abort_run])


@flow(name="synthesize", flow_run_name=flow_run_name, timeout_seconds=FLOW_TIMEOUT_S, log_prints=False,
      persist_result=False, validate_parameters=True, **HOOKS)
def synthesize(config: SynthesizeConfig) -> dict:
    """Make a DP synthetic table from ``config.data`` and publish it at ``config.out`` if the gate passes."""
    stages.sweep_stopped(config)  # runs killed earlier: closed (budget, MLflow, Prefect), their folders removed
    ctx = stages.begin(config)  # refuses what would break the guarantee; write-ahead budget reservation
    ctx = mlf.start_run_task(config, ctx)
    ctx = stages.mark_read(ctx)
    batch = partitioned.prepare(config, ctx)  # scrub → mask → real-side counts, per partition (Dask)
    counts = stages.release_counts(config, ctx)  # the noisy row counts: every size below comes from them
    fit_summary = stages.fit(config, ctx)
    stages.sample(config, ctx)
    wm = stages.watermark(config, ctx, batch["batch_id"])
    report = stages.validate(config, ctx)
    artifacts.publish_validation_report_task(report)
    privacy = stages.privacy_summary(ctx)
    ctx = mlf.log_privacy_task(ctx, privacy)
    lifetime = stages.settle(ctx, privacy)
    manifest = stages.build_manifest(config, ctx, batch, counts, wm, privacy, report, lifetime)
    mlf.log_results_task(ctx, fit_summary=fit_summary, manifest=manifest, validation=report)
    model_uri = mlf.log_model_task(ctx)
    registered = mlf.register_model_task(config, ctx, manifest, model_uri) if config.register_model else None
    stages.check_gate(config, report, manifest, registered)
    published = stages.publish(config, ctx, manifest, registered)
    if registered:
        mlf.set_champion_task(registered)
    mlf.mirror_lineage_task(ctx, wm["code"], config.lineage_url)
    mlf.end_run_task(ctx, "FINISHED")
    artifacts.publish_links_task(ctx.tracker_run_id, registered)  # the UI links to the MLflow run and version
    stages.finish(ctx)
    return published
