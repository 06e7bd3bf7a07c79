"""The drift check's stages: has the real data moved since the champion model was trained?

The check is a run of its own on the population's budget (purpose ``drift-check``, ε = ``drift.epsilon``):
:func:`begin` reserves it, both batches are prepared (scrub → mask → exact counts, per partition) in two
sub-folders of the run's work folder, :func:`detect` releases the comparison (noisy batch sizes, then one
Gaussian release of KS statistics and share vectors: dpsyn.drift) and writes its reports, and
:func:`~dpsyn.pipeline.lifecycle.settle` commits the spend. Whether to retrain is the caller's decision, from
the verdict and :func:`retrain_refusal`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dpsyn.config import DriftMonitorConfig, SynthesizeConfig
from dpsyn.pipeline import lifecycle
from dpsyn.pipeline.context import RunContext
from dpsyn.pipeline.workdir import WorkDir
from dpsyn.schema import load_schema

__all__ = ["REPORT", "REPORT_HTML", "batch_config", "begin", "check_config", "check_name", "detect", "retrain_config", "retrain_refusal",
           "sub_context"]

REPORT = "drift_report.json"
REPORT_HTML = "drift_report.html"
SUMMARY = "drift_summary.json"


def retrain_config(config: DriftMonitorConfig) -> SynthesizeConfig:
    """The synthesize run a drift triggers: the new batch, published into versioned folders."""
    return config.synthesize.model_copy(update={"data": config.data, "versioned_output": True})


def batch_config(config: DriftMonitorConfig, data: str | Path) -> SynthesizeConfig:
    """How one batch is prepared for the check: the run's settings on that file, without a holdout."""
    no_holdout = config.synthesize.validation.model_copy(update={"utility": False})
    return config.synthesize.model_copy(update={"data": Path(data), "validation": no_holdout})


def check_config(config: DriftMonitorConfig) -> SynthesizeConfig:
    """The run settings a drift check is reserved and named under: the synthesize settings on the new batch."""
    return config.synthesize.model_copy(update={"data": config.data})


def check_name(config: DriftMonitorConfig) -> str:
    """The check's readable name, the same in Prefect and MLflow (dpsyn.pipeline.run.run_name)."""
    from dpsyn.pipeline.run import run_name

    return run_name(check_config(config), purpose="drift-check")


def begin(config: DriftMonitorConfig, *, run_id: str | None = None) -> RunContext:
    """Reserve the check's ε (and the public δ) in the population's budget; create the run's work folder."""
    return lifecycle.begin(check_config(config), run_id=run_id, purpose="drift-check", epsilon=config.drift.epsilon)


def sub_context(ctx: RunContext, name: str) -> RunContext:
    """A context for preparing one batch into ``<work>/<name>/`` (prepare stages only: it is not saved)."""
    folder = ctx.work / name
    folder.mkdir(mode=0o700, exist_ok=True)
    return ctx.model_copy(update={"work": folder})


def detect(config: DriftMonitorConfig, ctx: RunContext, reference: dict) -> dict:
    """One DP comparison of the two prepared batches (``reference`` and ``current`` sub-folders); writes the
    report (JSON, HTML) into the run's work folder. Returns the verdict, noisy statistics and the spend."""
    from dpsyn.drift import detect_drift_from_statistics, drift_statistics, render_html
    from dpsyn.privacy import NoiseSource, PrivacyAccountant
    from dpsyn.validation.stats import RealStatistics

    schema = load_schema(config.synthesize.table_schema)

    def counts(name: str) -> RealStatistics:
        w = WorkDir(ctx.work / name)
        path = w / WorkDir.REAL_STATISTICS
        return RealStatistics.load(path) if path.exists() else drift_statistics(pd.read_parquet(w / WorkDir.MASKED),
                                                                                  schema)

    p = config.synthesize.privacy
    acct = PrivacyAccountant(epsilon=ctx.epsilon, delta=ctx.delta, accountant=p.accountant, **schema.unit_kwargs())
    rep = detect_drift_from_statistics(counts("reference"), counts("current"), schema, config.drift, accountant=acct,
                                       noise=NoiseSource(secure=p.secure_rng))
    acct.check()
    context = {"model": f"{reference.get('model') or '-'} v{reference.get('version') or '-'}",
               "training batch": Path(reference["path"]).name, "new batch": Path(config.data).name}
    work = ctx.workdir
    (work / REPORT).write_text(rep.model_dump_json(indent=1))
    (work / REPORT_HTML).write_text(render_html(rep, context=context))
    out = {"drifted": rep.drifted, "summary": rep.summary(), "drifted_columns": rep.drifted_columns,
           "privacy": acct.summary(), "reference_batch": reference.get("batch_id"),
           "rows_reference": rep.n_reference, "rows_new": rep.n_current,  # noisy counts (DP)
           "max_ks": max([c.value for c in rep.columns if c.statistic == "ks"], default=0.0),
           "max_psi": max([c.value for c in rep.columns if c.statistic == "psi"], default=0.0)}
    work.write_json(SUMMARY, out)
    return out


def retrain_refusal(config: DriftMonitorConfig, ctx: RunContext, epsilon: float) -> str | None:
    """Why a retrain needing ``epsilon`` cannot run now (the lifetime cap's remainder is smaller), or None.

    Advisory only: the retrain's own write-ahead reservation is what enforces the cap."""
    from dpsyn.privacy.budget import BudgetLedger

    pops = BudgetLedger(ctx.ledger_url).status(ctx.population)
    left = pops[0].remaining_epsilon if pops else None
    if left is None or left >= epsilon:
        return None
    return (f"retraining refused: population '{ctx.population}' has ε={left:.4f} left of its lifetime cap and the run "
            f"needs ε={epsilon:g}; raise the cap (dpsyn budget set-cap) or lower ε")
