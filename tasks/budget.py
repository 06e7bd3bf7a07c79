"""Prefect tasks around the lifetime budget ledger (dpsyn.privacy.budget) that are not part of a run's own protocol.

A run's reserve → mark_read → settle is ``dpsyn.pipeline.lifecycle`` (tasks/stages.py). This task never retries:
a task that touches the ledger does not retry blindly.
"""

from __future__ import annotations

from prefect import task


@task(name="budget-record-access", persist_result=False, retries=0)
def record_access(ledger_url: str | None, population: str | None, table_schema: str, tool: str, note: str) -> None:
    """Record a non-DP read of the population by an owner tool (before it reads): listed by ``dpsyn budget show``."""
    from dpsyn.privacy.budget import BudgetLedger
    from dpsyn.schema import load_schema

    schema = load_schema(table_schema)
    BudgetLedger(ledger_url).record_access(population or schema.population or schema.name, tool, note)
