"""The ``synthesize`` run's stages as Prefect tasks: one call into ``dpsyn.pipeline`` each.

Every task reads and writes the run's private work folder (mode 0700, removed when the run ends) through the
run's context, and returns only value-free summaries (ids, ε, DP statistics). None caches, persists its result
or retries: a retry could run a mechanism twice.
"""

from __future__ import annotations

from dpsyn.config import SynthesizeConfig
from dpsyn.pipeline import RunContext, lifecycle, manifest, stages
from tasks.alerts import budget_alert, emit_budget_exceeded
from tasks.artifacts import fit_progress, sample_progress
from tasks.options import FIT_TIMEOUT_S, private_task


@private_task("begin-run")
def begin(config: SynthesizeConfig) -> RunContext:
    """Refuse what would break the guarantee, reserve the run's (ε, δ), make its work folder (keyed by the flow
    run's id, so the failure hook finds it)."""
    from prefect.runtime import flow_run

    with budget_alert(config):  # the lifetime cap refuses the reservation
        return lifecycle.begin(config, run_id=str(flow_run.id) if flow_run.id else None)


@private_task("sweep-stopped-runs")
def sweep_stopped(config: SynthesizeConfig) -> list[str]:
    """Close runs killed earlier (budget, MLflow, work folder: dpsyn.pipeline.lifecycle.sweep) and mark the flow
    runs Prefect still shows as running for them Crashed."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType
    from prefect.client.schemas.objects import StateType
    from prefect.runtime import flow_run
    from prefect.states import Crashed

    from tasks.tracking import TRACKER

    with get_client(sync_client=True) as client:
        flt = FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING])))
        running = [str(r.id) for r in client.read_flow_runs(flow_run_filter=flt, limit=200)
                   if str(r.id) != str(flow_run.id)]
        over = lifecycle.sweep(TRACKER, running=running, ledger_url=config.budget.ledger_url)
        for run_id in set(over) & set(running):
            client.set_flow_run_state(run_id, Crashed(message="its process was killed; dpsyn closed the run "
                                                              "(dpsyn budget show)"), force=True)
    return over


@private_task("budget-mark-read")
def mark_read(ctx: RunContext) -> RunContext:
    return lifecycle.mark_read(ctx)


@private_task("release-counts")
def release_counts(config: SynthesizeConfig, ctx: RunContext) -> dict:
    return stages.release_counts(config, ctx)


@private_task("fit-synthesizer", timeout_seconds=FIT_TIMEOUT_S)
def fit(config: SynthesizeConfig, ctx: RunContext) -> dict:
    """Fit the DP synthesizer; its DP-SGD steps show as progress artifacts (``progress-<label>-dp-sgd-steps``)."""
    with budget_alert(config, population=ctx.population), fit_progress():  # the accountant refuses an overspend
        return stages.fit(config, ctx)


@private_task("sample")
def sample(config: SynthesizeConfig, ctx: RunContext) -> int:
    """Sample the synthetic table; a chunked sample shows as the progress artifact ``progress-sample-chunks``."""
    with sample_progress():
        return stages.sample(config, ctx)


@private_task("watermark")
def watermark(config: SynthesizeConfig, ctx: RunContext, batch_id: str) -> dict:
    """The keyed marks; the key comes from ``watermark.key_block`` (a Prefect Secret) when set."""
    key = None
    if config.watermark.key_block:
        from tasks.audit import key_from_block

        key = key_from_block(config.watermark.key_block)
    return stages.watermark(config, ctx.reload(), batch_id=batch_id, key=key)


@private_task("validate")
def validate(config: SynthesizeConfig, ctx: RunContext) -> dict:
    return stages.validate(config, ctx)


@private_task("privacy-summary")
def privacy_summary(ctx: RunContext) -> dict | None:
    return stages.privacy_summary(ctx)


@private_task("budget-settle")
def settle(ctx: RunContext, privacy: dict) -> dict:
    """Commit the accountant's spend; the population's lifetime totals."""
    from dpsyn.errors import PrivacyBudgetExceededError

    try:
        return lifecycle.settle(ctx, privacy, note=f"mlflow run {ctx.reload().tracker_run_id}")
    except PrivacyBudgetExceededError:  # a spend over the reservation is refused
        emit_budget_exceeded(ctx.population, None, ctx.purpose)
        raise


@private_task("build-manifest")
def build_manifest(config: SynthesizeConfig, ctx: RunContext, batch: dict, counts: dict, watermark: dict,
                   privacy: dict, report: dict, lifetime: dict) -> dict:
    public = manifest.training_batch(config, batch, stages.count_estimate(counts))
    return manifest.build_manifest(config, ctx.reload(), batch=public, watermark=watermark, privacy=privacy,
                                   report=report, lifetime=lifetime)


@private_task("gate-verdict")
def check_gate(config: SynthesizeConfig, report: dict, result: dict | None = None,
               registered: dict | None = None) -> None:
    """A failing (or uninformative, unless allowed) gate stops the run here: nothing is published (the spend
    is already settled); the error carries what the run spent and its ids."""
    result = {**(result or {}), **({"model": registered} if registered else {})}
    manifest.raise_if_gate_failed(report, allow_uninformative=config.validation.allow_uninformative, result=result)


@private_task("publish")
def publish(config: SynthesizeConfig, ctx: RunContext, result: dict, registered: dict | None) -> dict:
    """Write the release into place (its own folder per version with ``versioned_output``), lineage first."""
    ctx = ctx.reload()
    result = {**result, **({"model": registered} if registered else {})}
    out = manifest.output_dir(config, ctx, registered["version"] if registered else None)
    return {**stages.publish(config, ctx, result, out=out), **result}


@private_task("finish-run")
def finish(ctx: RunContext) -> None:
    """Remove the work folder (the operator reports move to $DPSYN_HOME/operator/<MLflow run id>/)."""
    lifecycle.finish(ctx.reload())
