"""What a synthesize run publishes about itself: the manifest, the gate's verdict and where the release goes.

Every key of the manifest is classified in the release inventory (dpsyn/privacy/inventory.py): public
configuration, random ids, the noisy row count and DP statistics; never an exact count or a content hash.
"""

from __future__ import annotations

from pathlib import Path

from dpsyn.config import SynthesizeConfig
from dpsyn.pipeline.context import RunContext
from dpsyn.validation.report import raise_for_verdict

__all__ = ["build_manifest", "gate_passed", "output_dir", "gate_verdict", "raise_if_gate_failed", "training_batch"]


def training_batch(config: SynthesizeConfig, batch: dict, rows_estimate: int) -> dict:
    """The training batch's public record: its random id, the input's file name, the noisy row count, the window."""
    return {"batch_id": batch["batch_id"], "source": batch["source"], "rows_estimate": rows_estimate,
            "window_start": config.batch_window_start, "window_end": config.batch_window_end}


def gate_passed(report: dict) -> bool:
    """True when the gate passed, or was uninformative and the run allowed that (the manifest's ``gate`` says)."""
    return gate_verdict(report) in ("passed", "uninformative")


def gate_verdict(report: dict) -> str:
    """passed, failed or uninformative (dpsyn.validation.ValidationReport.verdict)."""
    if any(not c["passed"] and c.get("status") != "uninformative" for c in report["checks"]):
        return "failed"
    return report.get("verdict", "passed")


def build_manifest(config: SynthesizeConfig, ctx: RunContext, *, batch: dict, watermark: dict, privacy: dict,
                   report: dict, lifetime: dict) -> dict:
    return {
        "mlflow_run_id": ctx.tracker_run_id,
        "run_id": ctx.run_id,  # the orchestrator's id (the Prefect flow run's), or a random one
        "schema": config.table_schema,
        "synthesizer": config.synthesizer,
        "training_batch": batch,
        "watermark": watermark,
        "epsilon_spent": privacy["epsilon_spent"],
        "delta": privacy["delta"],
        "accountant": privacy["accountant"],
        "guarantee": ctx.guarantee,
        "population": ctx.population,
        "cumulative_epsilon": lifetime["spent_epsilon"],
        "gate_passed": gate_passed(report),
        "gate": gate_verdict(report),  # passed, or uninformative (published only with allow_uninformative)
    }


def registry_tags(manifest: dict) -> dict:
    """The tags of the run's registry version (every run that reaches the gate is one)."""
    return {"epsilon": f"{manifest['epsilon_spent']:.6f}", "delta": f"{manifest['delta']:g}",
            "training_batch": manifest["training_batch"]["batch_id"], "gate_passed": manifest["gate_passed"]}


def model_name(config: SynthesizeConfig, schema_name: str) -> str:
    return config.model_name or f"dpsyn-{schema_name}"


def raise_if_gate_failed(report: dict, *, allow_uninformative: bool = False, result: dict | None = None) -> None:
    """A failing gate publishes nothing, nor does an uninformative one unless allowed: raise
    :class:`GateFailedError` naming the failed (or uninformative) checks, with what the run spent and its ids
    (from the manifest ``result``)."""
    r = result or {}
    details = {k: r[k] for k in ("epsilon_spent", "delta", "mlflow_run_id", "population", "cumulative_epsilon")
               if k in r}
    if r.get("model"):
        details["model"] = r["model"]
    raise_for_verdict(report, allow_uninformative=allow_uninformative, details=details)


def output_dir(config: SynthesizeConfig, ctx: RunContext, version: str | None) -> Path:
    """Where the release goes: ``out``, or with ``versioned_output`` its own folder per model version (the run's id
    when the model is not registered)."""
    if not config.versioned_output:
        return Path(config.out)
    return Path(config.out) / (f"v{version}" if version else (ctx.tracker_run_id or ctx.run_id))
