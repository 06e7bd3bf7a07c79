"""The lifetime privacy budget of each population (dataset), across every run that reads it.

A run reserves its ε (and δ) before it reads any data, marks the moment it
starts reading, then commits what it actually spent or, if it never read
anything, releases the reservation. Totals are basic composition (sums of ε
and of δ), checked against the population's cap atomically. Stored in SQLite
(``$DPSYN_HOME/budget.db`` by default, ``DPSYN_BUDGET_URL`` or a
``sqlite:///PATH`` URL otherwise) or in PostgreSQL (a ``postgresql://USER@HOST/DB``
URL, shared by several hosts). See :mod:`dpsyn.privacy.budget.ledger` for the
guarantees.

    with reservation(None, "uci-adult", run_id, epsilon=1.0, delta=1e-6, purpose="synthesize") as run:
        run.mark_read()       # just before the first read of private data
        ...                   # mechanisms charge the run's accountant
        run.settle(summary)   # committed when the block ends; a stop after the read commits the reservation

or step by step: ``BudgetLedger().reserve(population, run_id, epsilon=..., delta=..., cap=...)``, ``mark_read``,
``commit(run_id, epsilon=..., delta=...)`` or ``release``.
"""

from __future__ import annotations

from dpsyn.privacy.budget.ledger import BUDGET_ENV, BudgetLedger, PrivacyBudgetExceededError, budget_path
from dpsyn.privacy.budget.models import Access, PopulationBudget, Reservation
from dpsyn.privacy.budget.reservation import BudgetRun, population_of, reservation

__all__ = [
    "BUDGET_ENV",
    "Access",
    "BudgetLedger",
    "BudgetRun",
    "PopulationBudget",
    "PrivacyBudgetExceededError",
    "Reservation",
    "budget_path",
    "population_of",
    "reservation",
]
