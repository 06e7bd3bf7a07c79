"""The lifetime privacy budget of each population (dataset), across every run that reads it.

A run reserves its ε (and δ) before it reads any data, marks the moment it
starts reading, then commits what it actually spent or, if it never read
anything, releases the reservation. Totals are basic composition (sums of ε
and of δ), checked against the population's cap atomically. Stored in SQLite
(``$DPSYN_HOME/budget.db`` by default, ``DPSYN_BUDGET_URL`` or a
``sqlite:///PATH`` URL otherwise). See :mod:`dpsyn.budget.ledger` for the
guarantees.

    ledger = BudgetLedger()
    ledger.reserve("adult", run_id, 1.0, 1e-5, cap=config_cap)   # raises PrivacyBudgetExceededError if it does not fit
    try:
        ledger.mark_read(run_id)
        ...  # read the data, train; the accountant reports eps, delta
    except BaseException:
        ...  # after mark_read: commit what was spent (or leave it reserved, charged in full)
    ledger.commit(run_id, eps, delta)
"""

from __future__ import annotations

from dpsyn.budget.ledger import (
    BUDGET_ENV,
    Access,
    BudgetLedger,
    PopulationBudget,
    PrivacyBudgetExceededError,
    Reservation,
    budget_path,
)
from dpsyn.budget.reservation import BudgetRun, population_of, reservation

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
