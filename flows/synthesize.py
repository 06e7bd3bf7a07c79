"""The ``synthesize`` flow: scrub → mask → DP synthesis → watermark → validate → publish → record.

One pydantic config is the only parameter, so a bad parameter fails before
the run starts and renders as a form in the Prefect UI. Tasks exchange file
references in a private work folder that is removed when the flow ends. The
gate decides publication: a failing gate publishes nothing but the spent ε
is still recorded in MLflow.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from dpsyn.config import SynthesizeConfig
from dpsyn.errors import GateFailedError
from tasks import audit as audit_tasks
from tasks import stages
from tasks import tracking as mlf


@flow(name="synthesize", log_prints=False, persist_result=False, validate_parameters=True)
def synthesize(config: SynthesizeConfig) -> dict:
    """Make a DP synthetic table from ``config.data`` and publish it at ``config.out`` if the gate passes."""
    work = stages.make_workdir()
    run_id = mlf.start_run_task(config, {"dpsyn.flow": "synthesize", "dpsyn.data_file": Path(config.data).name})
    status = "FAILED"
    privacy_logged = False
    try:
        scrub_report = stages.scrub(config, work)
        batch = stages.mask(config, work)
        fit_summary = stages.fit(config, work)
        stages.sample(config, work, batch["rows"])
        wm = stages.watermark(config, work, batch["batch_id"], run_id)
        report = stages.validate(config, work)
        privacy = stages.privacy_summary(work)
        mlf.log_privacy_task(run_id, privacy)
        privacy_logged = True
        mlf.log_results_task(
            run_id, fit_summary=fit_summary, scrub_report=scrub_report, batch=batch, validation=report,
            watermark=wm, model_path=str(Path(work) / stages.MODEL), report_html=str(Path(work) / stages.REPORT_HTML),
            ge_docs=str(Path(work) / stages.GE_DOCS),
        )
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
            "gate_passed": all(c["passed"] for c in report["checks"]),
        }
        if not manifest["gate_passed"]:
            failed = [c["name"] for c in report["checks"] if not c["passed"]]
            raise GateFailedError(
                f"validation gate failed: {', '.join(failed)}; nothing was published", failures=failed
            )
        if config.register_model:
            name = config.model_name or f"dpsyn-{batch['schema_name']}"
            version = mlf.register_model_task(run_id, name, {
                "epsilon": f"{manifest['epsilon_spent']:.6f}", "delta": f"{manifest['delta']:g}",
                "training_batch": batch["batch_id"], "gate_passed": True,
            })
            manifest["model"] = {"name": name, "version": version}
        published = stages.publish(config, work, manifest)
        audit_tasks.mirror_lineage_task(run_id, wm["code"], config.lineage_url)
        status = "FINISHED"
        return {**published, **manifest}
    except BaseException:
        if not privacy_logged:  # ε spent before a crash is still recorded
            mlf.log_privacy_task(run_id, stages.privacy_summary(work))
        raise
    finally:
        mlf.end_run_task(run_id, status)
        stages.remove_workdir(work)
