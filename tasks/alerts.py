"""Prefect alerts: the ``dpsyn.budget.exceeded`` event that deployments/automations.yaml notifies on."""

from __future__ import annotations

import logging
from contextlib import contextmanager

from dpsyn.config import SynthesizeConfig

logger = logging.getLogger(__name__)


def emit_budget_exceeded(population: str | None, schema: str | None, purpose: str) -> None:
    """The Prefect event ``dpsyn.budget.exceeded`` (deployments/automations.yaml alerts on it): resource
    ``dpsyn.population.<population>``; payload: the population, schema and purpose (names from the config or
    schema). Prefect attaches the flow run, flow, deployment and tags as related resources. Outside a Prefect run
    nothing is emitted (emitting would start a temporary Prefect server). Never raises."""
    from tasks.artifacts import _in_run

    if not _in_run():
        return
    try:
        from prefect.events import emit_event

        emit_event(event="dpsyn.budget.exceeded",
                   resource={"prefect.resource.id": f"dpsyn.population.{population or 'unknown'}",
                             "prefect.resource.name": population or "unknown"},
                   payload={"population": population, "schema": schema, "purpose": purpose})
    except Exception as e:  # an alert must not mask the refusal itself
        logger.warning("the dpsyn.budget.exceeded event was not emitted (%s)", type(e).__name__)


@contextmanager
def budget_alert(config: SynthesizeConfig, purpose: str = "synthesize", population: str | None = None):
    """Emit :func:`emit_budget_exceeded` when the block raises PrivacyBudgetExceededError (then re-raise)."""
    from dpsyn.errors import PrivacyBudgetExceededError

    try:
        yield
    except PrivacyBudgetExceededError:
        try:
            from dpsyn.privacy.budget import population_of
            from dpsyn.schema import load_schema

            schema = load_schema(config.table_schema)
            if population is None:
                population = population_of(config.budget.population, schema,
                                           capped=config.budget.lifetime_epsilon is not None)
            name = schema.name
        except Exception:
            name = None
        emit_budget_exceeded(population or config.budget.population, name, purpose)
        raise
