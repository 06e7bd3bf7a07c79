"""A run's context: who it is, what it reserved, and how far it got, saved in its work folder.

Every stage takes the run's :class:`RunContext`; it holds ids, paths and settings only (it is a Prefect task
parameter), and the flags a failure handler needs to close the run honestly: whether private data was read,
whether the spend was settled, whether the tracker saw it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from dpsyn.pipeline.workdir import WorkDir

__all__ = ["RunContext"]


class RunContext(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run_id: str  # the orchestrator's id of this run (Prefect flow run), or a fresh uuid without one
    purpose: str  # "synthesize" or "drift-check"
    work: Path
    population: str
    epsilon: float
    delta: float
    budget_key: str  # the reservation's id in the budget ledger
    ledger_url: str | None = None
    guarantee: dict = {}
    tracker_run_id: str | None = None  # the tracker's (MLflow's) id of this run, once started
    read: bool = False  # private data was (about to be) read: the reservation can only be committed
    settled: bool = False  # the spend is committed
    privacy_logged: bool = False  # the tracker has the accountant's summary

    @property
    def workdir(self) -> WorkDir:
        return WorkDir(self.work)

    def save(self) -> RunContext:
        self.workdir.write_json(WorkDir.RUN, self.model_dump(mode="json"))
        return self

    def update(self, **changes) -> RunContext:
        """The saved context with ``changes``, saved again. Stages run as separate tasks that each got a copy of
        the context: the folder holds the truth, so a stale copy never undoes another stage's flags."""
        current = self.reload()
        return current.model_copy(update=changes).save()

    def reload(self) -> RunContext:
        """The context as saved now (this copy if nothing was saved yet)."""
        return RunContext.load(self.run_id) or self

    @classmethod
    def load(cls, run_id: str) -> RunContext | None:
        """The saved context of run ``run_id`` (None if the run never created its work folder)."""
        work = WorkDir.for_run(run_id)
        if not work.exists(WorkDir.RUN):
            return None
        return cls.model_validate(work.read_json(WorkDir.RUN))
