"""The budget protocol of one run as a context manager: reserve → mark_read → settle, crash-safe.

    with reservation(ledger_url, population, run_id, epsilon=1.0, delta=1e-6, purpose="validate") as r:
        r.mark_read()            # just before the first read of private data
        ...                      # mechanisms charge the run's accountant
        r.settle(summary)        # the accountant's spend (ε, δ)

On leaving the block:

* no read happened: the reservation is released (nothing was learnt, nothing is charged);
* the block ended normally: the settled spend is committed (the whole reservation if ``settle`` was never
  called);
* the block raised after the read: the **whole reservation** is committed. Whether a run stops, and where,
  depends on the private rows (a failed check, a value outside the domain), so a failure is charged what the run
  planned to spend, never less;
* the process died (SIGKILL): the reservation stays open and counts in full (dpsyn/privacy/budget/ledger.py).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field

from dpsyn.privacy.budget.ledger import BudgetLedger, Reservation

__all__ = ["BudgetRun", "population_of", "reservation"]

logger = logging.getLogger(__name__)


def population_of(declared: str | None, schema, *, capped: bool = False) -> str:
    """The population a run on ``schema``'s table draws on: the one the run declares, else the schema's declared
    ``population``, else (uncapped runs only) the schema's name. A lifetime cap needs a declared population:
    the same people read under another schema name would otherwise get a fresh budget."""
    from dpsyn.errors import ConfigError

    name = declared or getattr(schema, "population", None)
    if name:
        return name
    if capped:
        raise ConfigError(f"a lifetime privacy cap needs a declared population: set budget.population (--population) "
                          f"or `population:` in schema '{schema.name}', the data owner's name for these people")
    return schema.name


@dataclass
class BudgetRun:
    """A run's open reservation (from :func:`reservation`)."""

    ledger: BudgetLedger
    run_id: str
    reserved: Reservation
    read: bool = False
    spent: tuple[float, float] | None = None
    closed: Reservation | None = field(default=None, repr=False)

    def mark_read(self) -> None:
        """From here on the reservation can only be committed."""
        self.ledger.mark_read(self.run_id)
        self.read = True

    def settle(self, privacy: dict) -> None:
        """The spend to commit when the block ends normally: an accountant summary (``epsilon_spent``, ``delta``)."""
        self.spent = (float(privacy["epsilon_spent"]), float(privacy["delta"]))

    def _close(self, *, failed: bool, note: str | None = None) -> Reservation:
        if not self.read:
            return self.ledger.release(self.run_id)
        if failed or self.spent is None:
            return self.ledger.commit(self.run_id, epsilon=self.reserved.reserved_epsilon,
                                      delta=self.reserved.reserved_delta, note=note)
        return self.ledger.commit(self.run_id, epsilon=self.spent[0], delta=self.spent[1], note=note)


@contextlib.contextmanager
def reservation(ledger_url: str | None, population: str, run_id: str, *, epsilon: float, delta: float,
                cap: float | None = None, purpose: str, note: str = "", unit: str | None = None) -> Iterator[BudgetRun]:
    """Reserve ``epsilon``/``delta`` of ``population`` for ``run_id`` (write-ahead), yield the open run, and close
    it as the module docstring says. ``unit``: the person column of a person-level run (None: row-level; see
    :class:`BudgetLedger`). Raises :class:`~dpsyn.errors.PrivacyBudgetExceededError` before anything runs if the
    reservation does not fit the lifetime cap."""
    ledger = BudgetLedger(ledger_url)
    run = BudgetRun(ledger, run_id, ledger.reserve(population, run_id, epsilon=epsilon, delta=delta, cap=cap,
                                                   purpose=purpose, note=note, unit=unit))
    try:
        yield run
    except BaseException:
        run.closed = run._close(failed=True)
        raise
    run.closed = run._close(failed=False)
