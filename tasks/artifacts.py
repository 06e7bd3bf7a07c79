"""Prefect artifacts: the reports people look at in the UI (counts and statistics, never values).

Creating an artifact outside a flow or task run is a no-op here, so the tasks
also work when called as plain functions (``.fn``) in tests.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def _in_run() -> bool:
    from prefect.context import FlowRunContext, TaskRunContext

    return FlowRunContext.get() is not None or TaskRunContext.get() is not None


def scrub_report_rows(report: dict) -> list[dict]:
    """One row per (column, entity) with its count, plus one per dropped column."""
    rows = [
        {"column": col, "entity": ent, "count": n, "action": "scrubbed in text"}
        for col, ents in sorted(report.get("counts", {}).items())
        for ent, n in sorted(ents.items())
    ]
    for col, info in sorted(report.get("columns", {}).items()):
        if col not in report.get("counts", {}):
            rows.append({"column": col, "entity": info.get("entity") or "", "count": report.get("rows", 0),
                         "action": info.get("operator") or ""})
    for col in report.get("dropped_columns", []):
        if not any(r["column"] == col for r in rows):
            rows.append({"column": col, "entity": "", "count": report.get("rows", 0), "action": "dropped"})
    return rows


def publish_scrub_report(report: dict) -> str | None:
    """The scrub report as a Prefect table artifact (key ``scrub-report``); returns its id."""
    if not _in_run():
        return None
    from prefect.artifacts import create_table_artifact

    desc = (f"PII scrubbing ({report.get('mode')} mode, model {report.get('model') or 'none'}): "
            f"{report.get('rows', 0)} rows; counts per column and entity, no values.")
    return str(create_table_artifact(key="scrub-report", table=scrub_report_rows(report), description=desc))
