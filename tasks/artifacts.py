"""Prefect artifacts: the reports people look at in the UI (counts and statistics, never values).

Creating an artifact outside a flow or task run is a no-op here, so the tasks
also work when called as plain functions (``.fn``) in tests.
"""

from __future__ import annotations

import logging

from prefect import task

logger = logging.getLogger(__name__)


def _in_run() -> bool:
    from prefect.context import FlowRunContext, TaskRunContext

    return FlowRunContext.get() is not None or TaskRunContext.get() is not None


def validation_markdown(report) -> str:
    """The gate's verdict as Markdown: failed checks first, then a count of the rest (DP statistics only)."""
    failures = report.failures()
    weak = report.uninformative()
    head = (f"## Validation gate: {report.verdict.upper()}\n\n"
            f"{len(report.checks) - len(failures) - len(weak)} of {len(report.checks)} checks passed, "
            f"{len(weak)} uninformative (too noisy to judge) "
            f"(about {report.n_real:,} real rows by the run's noisy count, {report.n_synthetic:,} synthetic; one-way "
            f"noise std {report.noise_std:.4f}).\n")
    if failures:
        head += "\nNothing was published. Failed checks:\n\n| check | value (DP) | limit |\n|---|---|---|\n"
        head += "".join(f"| `{c.name}` | {c.value:.4f} | {c.limit:.4f} |\n" for c in failures)
    if report.utility:
        u = report.utility
        head += f"\nUtility: AUC train-on-synthetic {u['auc_tstr']:.3f}, DP train-on-real {u['auc_trtr']:.3f}.\n"
    head += "\nThe full report with per-column plots is `validation_report.html` (run output and MLflow `reports/`).\n"
    return head


def publish_validation_report(report) -> str | None:
    """The gate's verdict as a Prefect Markdown artifact (key ``validation-report``) and every check as a table
    artifact (key ``validation-checks``); returns the Markdown artifact's id."""
    if not _in_run():
        return None
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    rows = [{"check": c.name, "statistic": c.statistic, "value": round(c.value, 6), "limit": round(c.limit, 6),
             "noise_std": round(c.noise_std, 6), "passed": c.passed}
            for c in sorted(report.checks, key=lambda c: (c.passed, c.name))]
    create_table_artifact(key="validation-checks", table=rows, description="Every gate check (DP values).")
    return str(create_markdown_artifact(key="validation-report", markdown=validation_markdown(report),
                                        description="Validation gate verdict"))


@task(name="validation-artifacts", persist_result=False)
def publish_validation_report_task(report: dict) -> str | None:
    """The gate's verdict and checks as Prefect artifacts (DP values only)."""
    from dpsyn.validation import ValidationReport

    return publish_validation_report(ValidationReport.model_validate(report))
