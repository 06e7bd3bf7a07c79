"""The ``audit`` flow: verify that files carry our watermark and trace them to their lineage.

One pydantic config (paths and settings) is the only parameter. For scheduled
checks, e.g. ``audit.to_deployment(name="audit-monthly", cron="0 3 1 * *",
parameters={"config": {"paths": [...]}})``.
"""

from __future__ import annotations

from prefect import flow

from dpsyn.config import AuditConfig
from tasks import audit as audit_tasks


@flow(name="audit", log_prints=False, persist_result=False, validate_parameters=True)
def audit(config: AuditConfig) -> dict:
    """Verify each file of ``config.paths`` (per-record codes + statistical test) and summarize."""
    results = [audit_tasks.verify_file_task(str(p), config) for p in config.paths]
    return audit_tasks.summarize_task(results, config)
