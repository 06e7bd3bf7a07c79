"""Audit tasks: record a release's lineage, mirror it into MLflow, verify and trace files.

Each task is one dpsyn call. Keys are loaded here (environment, key files,
or a Prefect Secret block) and passed down; they are never logged or
returned, only their ids. Results are counts, ids, hashes and p-values.
"""

from __future__ import annotations

import logging
from pathlib import Path

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from dpsyn.config import AuditConfig
from dpsyn.lineage import AuditFailedError, FileTrace, Ledger, Release, record_release

QUIET = dict(cache_policy=NO_CACHE, persist_result=False)


def _logger():
    """The run logger inside a flow or task run; a module logger when called as plain functions (``.fn``)."""
    from prefect.exceptions import MissingContextError

    try:
        return get_run_logger()
    except MissingContextError:
        return logging.getLogger(__name__)


def audit_keys(config: AuditConfig) -> list:
    """Every key known here, plus the one in ``config.key_block`` (a Prefect Secret holding hex) if set."""
    from dpsyn.watermark import load_keys

    return load_keys(extra=[key_from_block(config.key_block)] if config.key_block else [])


def key_from_block(name: str):
    """The watermark key held by the Prefect Secret block ``name`` (hex, or text used as bytes)."""
    from prefect.blocks.system import Secret

    from dpsyn.watermark import WatermarkKey

    raw = str(Secret.load(name).get()).strip()
    try:
        return WatermarkKey.from_secret(bytes.fromhex(raw))
    except ValueError:
        return WatermarkKey.from_secret(raw.encode())


@task(name="record-lineage", retries=0, **QUIET)
def record_lineage_task(release: dict, ledger_url: str | None = None) -> str:
    """Store a release in the ledger (one transaction); return its dataset id."""
    rel = Release.model_validate(release)
    dataset_id = record_release(rel, url=ledger_url)
    _logger().info("lineage: recorded dataset %s for run %s", dataset_id, rel.model.run_id)
    return dataset_id


def _summary(t: FileTrace) -> dict:
    s = t.statistical or {}
    return {
        "path": t.path,
        "file": Path(t.path).name,
        "traced": t.traced,
        "verdict": t.verdict,
        "method": t.method,
        "message": t.message,
        "codes": {c.code: c.status for c in t.codes},
        "dataset_ids": sorted({c.lineage.release.dataset.dataset_id for c in t.codes if c.lineage}),
        "statistical_p_value": s.get("p_value"),
        "statistical_key_id": s.get("key_id"),
        "file_matches_release": t.file_matches_release,
    }


@task(name="verify-file", retries=0, **QUIET)
def verify_file_task(path: str, config: AuditConfig) -> dict:
    """Per-record codes against the ledger plus the statistical test, for one file."""
    from dpsyn.lineage import verify_file

    t = verify_file(path, ledger=Ledger(config.ledger_url), keys=audit_keys(config),
                    schema=config.table_schema, alpha=config.alpha)
    _logger().info("audit %s: %s", Path(path).name, t.message)
    return _summary(t)


@task(name="trace-file", retries=0, **QUIET)
def trace_file_task(path: str, config: AuditConfig, row: int | None = None) -> dict:
    """The lineage of one file (or one of its rows), as a dict."""
    from dpsyn.lineage import trace_file

    t = trace_file(path, row, ledger=Ledger(config.ledger_url), keys=audit_keys(config),
                   schema=config.table_schema, alpha=config.alpha)
    return t.model_dump(mode="json")


@task(name="audit-summary", retries=0, **QUIET)
def summarize_task(results: list[dict], config: AuditConfig) -> dict:
    """Count traced files; fail the run if ``fail_if_not_ours`` and one is not ours."""
    missing = [r["file"] for r in results if not r["traced"]]
    summary = {"files": len(results), "traced": len(results) - len(missing), "not_traced": missing,
               "results": results}
    if missing and config.fail_if_not_ours:
        raise AuditFailedError(f"audit: {len(missing)} file(s) carry no watermark of ours: {', '.join(missing)}")
    return summary
