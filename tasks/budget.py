"""Prefect tasks around the lifetime budget ledger (dpsyn.budget): reserve before reading, commit after.

The run id is the Prefect flow run's id, so a retried task of the same run is
not charged twice (the ledger is idempotent per run id). These tasks never
retry on their own: a task that spends budget does not retry blindly.
"""

from __future__ import annotations

from prefect import task

from dpsyn.config import BudgetConfig

NOBUDGETRETRY = dict(persist_result=False, retries=0)


def run_key(purpose: str) -> str:
    """This flow run's id (a fresh id outside Prefect), prefixed by the purpose."""
    import uuid

    from prefect.runtime import flow_run

    return f"{purpose}:{flow_run.id or uuid.uuid4().hex}"


def population_of(budget: BudgetConfig, schema) -> str:
    """The population whose lifetime budget a run draws on (:func:`dpsyn.budget.population_of`)."""
    from dpsyn.budget import population_of as resolve

    return resolve(budget.population, schema, capped=budget.lifetime_epsilon is not None)


@task(name="budget-reserve", **NOBUDGETRETRY)
def reserve(budget: BudgetConfig, population: str, run_id: str, epsilon: float, delta: float, *,
            purpose: str, note: str = "") -> dict:
    """Write-ahead: reserve ε (and δ) before any data is read; refused if it would pass the lifetime cap."""
    from dpsyn.budget import BudgetLedger

    r = BudgetLedger(budget.ledger_url).reserve(population, run_id, epsilon, delta, cap=budget.lifetime_epsilon,
                                                purpose=purpose, note=note)
    return r.model_dump()


@task(name="budget-mark-read", **NOBUDGETRETRY)
def mark_read(budget: BudgetConfig, run_id: str) -> None:
    """From here on the reservation can only be committed (a crash keeps it counted as spent)."""
    from dpsyn.budget import BudgetLedger

    BudgetLedger(budget.ledger_url).mark_read(run_id)


@task(name="budget-settle", **NOBUDGETRETRY)
def settle(budget: BudgetConfig, run_id: str, privacy: dict | None, note: str | None = None) -> dict | None:
    """Commit the accountant's actual spend, or release the reservation if no data was read."""
    from dpsyn.budget import BudgetLedger

    ledger = BudgetLedger(budget.ledger_url)
    r = ledger.get(run_id)
    if r is None:
        return None
    if not r.data_read:
        return ledger.release(run_id).model_dump()
    if privacy is None:  # read data but never got to record a spend: the whole reservation stays charged
        return ledger.commit(run_id, r.reserved_epsilon, r.reserved_delta, note=note).model_dump()
    return ledger.commit(run_id, float(privacy["epsilon_spent"]), float(privacy["delta"]), note=note).model_dump()


@task(name="budget-status", **NOBUDGETRETRY)
def status(budget: BudgetConfig, population: str) -> dict:
    from dpsyn.budget import BudgetLedger

    (p,) = BudgetLedger(budget.ledger_url).status(population) or [None]
    return {} if p is None else p.model_dump(exclude={"runs"})


@task(name="budget-check-retrain", **NOBUDGETRETRY)
def retrain_refusal(budget: BudgetConfig, population: str, epsilon: float) -> str | None:
    """Why a retrain needing ``epsilon`` cannot run now (the lifetime cap's remainder is smaller), or None.

    Advisory only: the retrain's own write-ahead reservation is what enforces the cap.
    """
    from dpsyn.budget import BudgetLedger

    pops = BudgetLedger(budget.ledger_url).status(population)
    left = pops[0].remaining_epsilon if pops else None
    if left is None or left >= epsilon:
        return None
    return (f"retraining refused: population '{population}' has ε={left:.4f} left of its lifetime cap and the run "
            f"needs ε={epsilon:g}; raise the cap (dpsyn budget set-cap) or lower ε")


@task(name="budget-record-access", **NOBUDGETRETRY)
def record_access(ledger_url: str | None, population: str | None, table_schema: str, tool: str, note: str) -> None:
    """Record a non-DP read of the population by an owner tool (before it reads): listed by ``dpsyn budget show``."""
    from dpsyn.budget import BudgetLedger
    from dpsyn.schema import load_schema

    schema = load_schema(table_schema)
    BudgetLedger(ledger_url).record_access(population or schema.population or schema.name, tool, note)
