"""The budget ledger's records (pydantic): a run's reservation, a non-DP access, a population's totals."""

from __future__ import annotations

import os
import socket
from typing import Literal

from pydantic import BaseModel, ConfigDict, computed_field

__all__ = ["ROW_UNIT", "Access", "PopulationBudget", "Reservation", "State", "unit_relation"]

State = Literal["reserved", "committed", "released"]

#: ``unit`` of a row-level run or population (add/remove one row); None: not recorded (a ledger older than units)
ROW_UNIT = ""


def unit_relation(unit: str | None) -> str:
    """What a recorded ``unit`` makes ε count, in words (messages, ``dpsyn budget show``)."""
    if unit is None:
        return "not recorded"
    return "per row" if unit == ROW_UNIT else f"per person ({unit})"


class Reservation(BaseModel):
    """One run's entry: what it reserved, what it spent, and where it stands."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    population: str
    purpose: str
    state: State
    reserved_epsilon: float
    reserved_delta: float
    spent_epsilon: float | None = None
    spent_delta: float | None = None
    read_at: str | None = None
    note: str = ""
    created_at: str
    updated_at: str
    owner_pid: int | None = None
    owner_host: str | None = None
    heartbeat_at: str | None = None
    closed_by: str | None = None
    #: the run's privacy unit: the person column of a person-level run, "" for a row-level run, None where an older
    #: ledger did not record it
    unit: str | None = None

    @computed_field
    @property
    def owner_state(self) -> Literal["running", "dead", "unknown"] | None:
        """For an open reservation: ``running`` (its pid is alive on this host), ``dead`` (this host, pid gone: the
        run will never commit; ``dpsyn budget close`` settles it), ``unknown`` (another host, or no owner
        recorded: see ``heartbeat_at``). None once committed or released."""
        if self.state != "reserved":
            return None
        if self.owner_pid is None or self.owner_host != socket.gethostname():
            return "unknown"
        try:
            os.kill(self.owner_pid, 0)
        except ProcessLookupError:
            return "dead"
        except PermissionError:  # alive, owned by another user
            return "running"
        return "running"

    @computed_field
    @property
    def data_read(self) -> bool:
        """Whether the run was marked as having read private data (it can then no longer be released)."""
        return self.read_at is not None

    @computed_field
    @property
    def charged_epsilon(self) -> float:
        """What this run counts against the cap: reserved ε while open, spent ε once committed, 0 if released."""
        if self.state == "reserved":
            return self.reserved_epsilon
        if self.state == "committed":
            return self.spent_epsilon or 0.0
        return 0.0

    @computed_field
    @property
    def charged_delta(self) -> float:
        if self.state == "reserved":
            return self.reserved_delta
        if self.state == "committed":
            return self.spent_delta or 0.0
        return 0.0


class Access(BaseModel):
    """A non-DP read of a population by an owner-side tool (recorded, not charged)."""

    model_config = ConfigDict(frozen=True)

    access_id: int
    population: str
    tool: str
    note: str = ""
    created_at: str


class PopulationBudget(BaseModel):
    """A population's cap and totals (basic composition), with the runs behind them."""

    population: str
    cap_epsilon: float | None
    cap_delta: float | None
    spent_epsilon: float
    reserved_epsilon: float
    remaining_epsilon: float | None
    spent_delta: float
    reserved_delta: float
    remaining_delta: float | None
    cap_set_at: str | None = None
    #: what the population's ε counts: "" per row, a person column's name per person (every run since the first
    #: that recorded one is under it), None before any such run
    unit: str | None = None
    runs: list[Reservation]
    accesses: list[Access] = []

    @computed_field
    @property
    def counts(self) -> str:
        """What the population's ε counts: "per row", "per person (COLUMN)" or "not recorded"."""
        return unit_relation(self.unit)
