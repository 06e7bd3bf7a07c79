"""The whole ``synthesize`` run as one function, without an orchestrator (the Prefect flow calls the same stages).

    from dpsyn.config import SynthesizeConfig
    from dpsyn.pipeline import run

    result = run(SynthesizeConfig(data="adult.data", table_schema="adult", out="out/adult"))

scrub → mask → noisy counts → DP synthesis → sample → watermark → validation gate → settle the budget → record
(the tracker) → publish if the gate passed. A stop anywhere goes through :func:`~dpsyn.pipeline.lifecycle.abort`.
"""

from __future__ import annotations

from dpsyn.config import SynthesizeConfig
from dpsyn.pipeline import lifecycle, manifest, prepare, stages
from dpsyn.pipeline.context import RunContext
from dpsyn.pipeline.tracker import NullTracker, Tracker
from dpsyn.pipeline.workdir import WorkDir
from dpsyn.schema import load_schema

__all__ = ["run", "run_name", "start_tracking", "tracking_tags"]


def run_name(config: SynthesizeConfig, *, purpose: str = "synthesize") -> str:
    """A readable name for the run, the same in Prefect and MLflow: purpose, schema, ε, and the batch window
    (else the input file's name). Public: every part is configuration."""
    schema = load_schema(config.table_schema).name
    if config.batch_window_start or config.batch_window_end:
        window = "..".join(d.date().isoformat() for d in (config.batch_window_start, config.batch_window_end) if d)
    else:
        window = config.data.stem
    return f"{purpose}-{schema}-eps{config.privacy.epsilon:g}-{window}"


def tracking_tags(config: SynthesizeConfig, ctx: RunContext) -> dict[str, str]:
    """The tags a run's tracker record opens with (public: names, paths the user gave, the guarantee, the run's id,
    which under Prefect is the flow run's)."""
    return {"mlflow.runName": run_name(config, purpose=ctx.purpose), "dpsyn.run_id": ctx.run_id,
            "dpsyn.flow": ctx.purpose, "dpsyn.data_file": config.data.name,
            "dpsyn.data_path": str(config.data.absolute()), "dpsyn.population": ctx.population,
            "dpsyn.neighbouring": ctx.guarantee.get("neighbouring", ""),
            "dpsyn.guarantee": ctx.guarantee.get("statement", "")}


def start_tracking(config: SynthesizeConfig, ctx: RunContext, tracker: Tracker) -> RunContext:
    """Open the run's tracker record and note its id in the run's context."""
    return ctx.update(tracker_run_id=tracker.start(config, tracking_tags(config, ctx)))


def record(config: SynthesizeConfig, ctx: RunContext, tracker: Tracker, *, batch: dict, counts: dict,
           fit_summary: dict, watermark: dict, report: dict) -> dict:
    """Settle the spend and record the run (tracker, registry); return the manifest (no model key yet)."""
    privacy = stages.privacy_summary(ctx)
    tracker.log_privacy(ctx.tracker_run_id, privacy)
    ctx = ctx.update(privacy_logged=True)
    lifetime = lifecycle.settle(ctx, privacy, note=f"tracker run {ctx.tracker_run_id}")
    public_batch = manifest.training_batch(config, batch, stages.count_estimate(counts))
    work = ctx.workdir
    tracker.log_results(ctx.tracker_run_id, fit_summary=fit_summary, batch=public_batch, validation=report,
                        watermark=watermark, report_html=str(work / WorkDir.REPORT_HTML),
                        ge_docs=str(work / WorkDir.GE_DOCS),
                        extra_metrics={"cumulative_epsilon": lifetime["spent_epsilon"]})
    return manifest.build_manifest(config, ctx, batch=public_batch, watermark=watermark, privacy=privacy,
                                   report=report, lifetime=lifetime)


def run(config: SynthesizeConfig, *, tracker: Tracker | None = None, run_id: str | None = None) -> dict:
    """Run ``config`` end to end in this process; return the published record (as the flow does).

    Raises :class:`~dpsyn.errors.GateFailedError` when the gate fails (nothing is published; the spend is
    recorded), and whatever stopped the run otherwise, after :func:`~dpsyn.pipeline.lifecycle.abort`."""
    tracker = tracker or NullTracker()
    ctx = lifecycle.begin(config, run_id=run_id)
    try:
        ctx = start_tracking(config, ctx, tracker)
        ctx = lifecycle.mark_read(ctx)
        batch = prepare.prepare(config, ctx)
        counts = stages.release_counts(config, ctx)
        fit_summary = stages.fit(config, ctx)
        stages.sample(config, ctx)
        wm = stages.watermark(config, ctx, batch_id=batch["batch_id"])
        report = stages.validate(config, ctx)
        result = record(config, ctx, tracker, batch=batch, counts=counts, fit_summary=fit_summary, watermark=wm,
                        report=report)
        result = publish_if_passed(config, ctx, tracker, result, report)
    except BaseException:
        lifecycle.abort(ctx.run_id, tracker)
        raise
    tracker.end(ctx.tracker_run_id, "FINISHED")
    lifecycle.finish(ctx)
    return result


def publish_if_passed(config: SynthesizeConfig, ctx: RunContext, tracker: Tracker, result: dict,
                      report: dict) -> dict:
    """Register the model (every run that reaches the gate), stop if the gate failed, else publish the release,
    move the champion alias and mirror the lineage into the tracker."""
    ctx = ctx.reload()
    uri = tracker.log_model(ctx.tracker_run_id, str(ctx.workdir / WorkDir.MODEL))
    registered = None
    if config.register_model:
        name = manifest.model_name(config, load_schema(config.table_schema).name)
        version = tracker.register(ctx.tracker_run_id, name, manifest.registry_tags(result), model_uri=uri,
                                   cumulative_epsilon=result["cumulative_epsilon"])
        registered = {"name": name, "version": version} if version else None
    if registered:
        result["model"] = registered
    manifest.raise_if_gate_failed(report, allow_uninformative=config.validation.allow_uninformative, result=result)
    out = manifest.output_dir(config, ctx, registered["version"] if registered else None)
    published = stages.publish(config, ctx, result, out=out)
    if registered:  # after the release is recorded: the champion always has a published, traceable release
        tracker.set_champion(registered["name"], registered["version"])
    tracker.mirror_lineage(ctx.tracker_run_id, result["watermark"]["code"], config.lineage_url)
    return {**published, **result}
