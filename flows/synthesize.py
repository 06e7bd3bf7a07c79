"""The ``synthesize`` flow: scrub → mask → DP synthesis → watermark → validate → publish → record.

Scrubbing, masking and the gate's real-side counts run per partition of the
input, on Dask for a multi-partition input (flows/partitioned.py).

One pydantic config is the only parameter, so a bad parameter fails before
the run starts and renders as a form in the Prefect UI. Tasks exchange file
references in a private work folder that is removed when the flow ends. The
gate decides publication: a failing gate publishes nothing but the spent ε
is still recorded in MLflow. Every run that reaches the gate becomes a version
of the registered model (tag ``gate_passed``); the alias ``champion`` moves to
it only when the gate passed and the release was published.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from dpsyn.config import SynthesizeConfig
from dpsyn.errors import GateFailedError
from flows import partitioned
from tasks import audit as audit_tasks
from tasks import budget as budget_tasks
from tasks import stages
from tasks import tracking as mlf


@flow(name="synthesize", log_prints=False, persist_result=False, validate_parameters=True)
def synthesize(config: SynthesizeConfig) -> dict:
    """Make a DP synthetic table from ``config.data`` and publish it at ``config.out`` if the gate passes."""
    from dpsyn.schema import load_schema

    # write-ahead: the run's whole ε is reserved in the population's lifetime budget before any data is read
    schema = load_schema(config.table_schema)
    schema.require_synthesizable()  # before any budget is reserved (scrubbing alone needs no such column)
    population = budget_tasks.population_of(config.budget, schema.name)
    key = budget_tasks.run_key("synthesize")
    budget_tasks.reserve(config.budget, population, key, config.privacy.epsilon,
                         config.privacy.delta or budget_tasks.DELTA_BOUND, purpose="synthesize",
                         note=f"data {Path(config.data).name}")
    work = stages.make_workdir()
    run_id = mlf.start_run_task(config, {
        "dpsyn.flow": "synthesize", "dpsyn.data_file": Path(config.data).name,
        "dpsyn.data_path": str(Path(config.data).absolute()), "dpsyn.population": population})
    status = "FAILED"
    privacy_logged = settled = False
    try:
        budget_tasks.mark_read(config.budget, key)
        prepared = partitioned.prepare(config, work)  # scrub → mask → real-side counts, per partition (Dask)
        scrub_report, batch = prepared["scrub_report"], prepared["batch"]
        fit_summary = stages.fit(config, work)
        stages.sample(config, work, batch["rows"])
        wm = stages.watermark(config, work, batch["batch_id"], run_id)
        report = stages.validate(config, work)
        privacy = stages.privacy_summary(work)
        mlf.log_privacy_task(run_id, privacy)
        privacy_logged = True
        budget_tasks.settle(config.budget, key, privacy, note=f"mlflow run {run_id}")
        settled = True
        lifetime = budget_tasks.status(config.budget, population)
        mlf.log_results_task(
            run_id, fit_summary=fit_summary, scrub_report=scrub_report, batch=batch, validation=report,
            watermark=wm, report_html=str(Path(work) / stages.REPORT_HTML), ge_docs=str(Path(work) / stages.GE_DOCS),
            extra_metrics={"cumulative_epsilon": lifetime["spent_epsilon"]},
        )
        model_uri = mlf.log_model_task(run_id, str(Path(work) / stages.MODEL))
        manifest = {
            "mlflow_run_id": run_id,
            "schema": config.table_schema,
            "synthesizer": config.synthesizer,
            "training_batch": {
                **{k: batch[k] for k in ("batch_id", "rows", "source")},
                "window_start": config.batch_window_start, "window_end": config.batch_window_end,
            },
            "watermark": wm,
            "epsilon_spent": privacy["epsilon_spent"],
            "delta": privacy["delta"],
            "accountant": privacy["accountant"],
            "population": population,
            "cumulative_epsilon": lifetime["spent_epsilon"],
            "gate_passed": all(c["passed"] for c in report["checks"]),
        }
        registered = None
        if config.register_model:  # every run that reaches the gate is a version; only a pass moves champion
            name = config.model_name or f"dpsyn-{batch['schema_name']}"
            version = mlf.register_model_task(run_id, name, {
                "epsilon": f"{manifest['epsilon_spent']:.6f}", "delta": f"{manifest['delta']:g}",
                "training_batch": batch["batch_id"], "gate_passed": manifest["gate_passed"],
            }, model_uri=model_uri, cumulative_epsilon=lifetime["spent_epsilon"])
            registered = {"name": name, "version": version}
        if not manifest["gate_passed"]:
            failed = [c["name"] for c in report["checks"] if not c["passed"]]
            raise GateFailedError(
                f"validation gate failed: {', '.join(failed)}; nothing was published", failures=failed
            )
        if registered:
            manifest["model"] = registered
        if config.versioned_output:  # each model version's data keeps its own folder
            config = config.model_copy(update={"out": config.out / (f"v{registered['version']}" if registered
                                                                    else run_id)})
        published = stages.publish(config, work, manifest)
        if registered:  # after the release is recorded: the champion always has a published, traceable release
            mlf.set_champion_task(registered["name"], registered["version"])
        audit_tasks.mirror_lineage_task(run_id, wm["code"], config.lineage_url)
        status = "FINISHED"
        return {**published, **manifest}
    except BaseException:
        spent = stages.privacy_summary(work)
        if not privacy_logged:  # ε spent before a crash is still recorded
            mlf.log_privacy_task(run_id, spent)
        if not settled:  # commit what the accountant recorded (0 if no mechanism ran); release if nothing was read
            budget_tasks.settle(config.budget, key, spent or budget_tasks.NO_SPEND, note=f"mlflow run {run_id}")
        raise
    finally:
        mlf.end_run_task(run_id, status)
        stages.remove_workdir(work)
