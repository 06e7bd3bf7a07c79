"""A run's life around its stages: begin (refuse, reserve, make the work folder), read, settle, finish or abort.

The budget protocol is write-ahead (dpsyn/privacy/budget): :func:`begin` reserves the run's whole (ε, δ) before any
data is read; :func:`mark_read` comes just before the first read; :func:`settle` commits the accountant's spend.
:func:`abort` is the one failure path, for any stop: after the read it commits the whole reservation (where a run
stops depends on the data, docs/privacy.md), before it releases the reservation; it logs what the accountant
recorded to the tracker, closes the tracker's record as FAILED and removes the work folder (the operator reports
are kept). A run killed outright leaves its reservation open, i.e. charged in full, and its work folder behind:
:func:`sweep` (run by every dpsyn command and at the start of every flow) removes the folder and marks the tracker
record FAILED once its process is gone; the reservation waits for ``dpsyn budget close``.
"""

from __future__ import annotations

import logging
import shutil
import uuid
from pathlib import Path

from dpsyn.config import SynthesizeConfig
from dpsyn.errors import ConfigError
from dpsyn.home import owner_gone
from dpsyn.pipeline.context import RunContext
from dpsyn.pipeline.tracker import Tracker
from dpsyn.pipeline.workdir import WorkDir
from dpsyn.privacy.accountant import neighbouring_relation
from dpsyn.privacy.budget import BudgetLedger, population_of
from dpsyn.schema import load_schema

__all__ = ["abort", "begin", "check_guarantee", "finish", "mark_read", "settle", "sweep"]

logger = logging.getLogger(__name__)


def check_guarantee(config: SynthesizeConfig) -> dict:
    """The guarantee the run will state (manifest, MLflow), after refusing what would break it: noise from a seeded
    (non-secure) source, and k-anonymity (a data-dependent recoding with no DP bound) unless explicitly accepted."""
    relation = neighbouring_relation(**load_schema(config.table_schema).unit_kwargs())
    if not config.privacy.secure_rng:
        raise ConfigError("privacy.secure_rng: false draws DP noise from a seeded generator (library tests only); a "
                          "synthesize run publishes and registers, which needs the secure noise source")
    if config.mask.k is not None:
        if not config.accept_non_dp_masking:
            raise ConfigError("mask.k (k-anonymity) recodes the rows by a data-dependent rule with no DP bound, so the "
                              "run's (ε, δ) would not hold for the input; set accept_non_dp_masking: true to run "
                              "anyway (the manifest then states no DP guarantee), or drop mask.k")
        return {"neighbouring": relation, "differential_privacy": False,
                "statement": "none for the input rows: k-anonymity recoded them by a data-dependent rule before the "
                             "DP mechanisms ran (accept_non_dp_masking)"}
    return {"neighbouring": relation, "differential_privacy": True,
            "statement": f"the whole release is (ε, δ)-DP for {relation} of the scrubbed and masked input "
                         "(docs/privacy.md)"}


def begin(config: SynthesizeConfig, *, run_id: str | None = None, purpose: str = "synthesize",
          epsilon: float | None = None) -> RunContext:
    """Refuse what would break the guarantee, reserve the run's (ε, δ) in its population's lifetime budget, and
    create its work folder (``run_id``: the orchestrator's id, else a fresh one). Nothing is read here."""
    guarantee = check_guarantee(config)
    schema = load_schema(config.table_schema)
    schema.require_synthesizable()  # before any budget is reserved (scrubbing alone needs no such column)
    budget = config.budget
    population = population_of(budget.population, schema, capped=budget.lifetime_epsilon is not None)
    eps = config.privacy.epsilon if epsilon is None else epsilon
    delta = config.privacy.resolved_delta(schema.population_size)
    run_id = run_id or uuid.uuid4().hex
    key = f"{purpose}:{run_id}"
    BudgetLedger(budget.ledger_url).reserve(population, key, epsilon=eps, delta=delta, cap=budget.lifetime_epsilon,
                                           purpose=purpose, note=f"data {config.data.name}",
                                           unit=schema.unit_kwargs().get("unit"))
    try:
        work = WorkDir.create(run_id)
    except BaseException:
        BudgetLedger(budget.ledger_url).release(key)
        raise
    return RunContext(run_id=run_id, purpose=purpose, work=work.path, population=population, epsilon=eps,
                      delta=delta, budget_key=key, ledger_url=budget.ledger_url, guarantee=guarantee).save()


def mark_read(ctx: RunContext) -> RunContext:
    """From here on the reservation can only be committed (a crash keeps it counted as spent)."""
    BudgetLedger(ctx.ledger_url).mark_read(ctx.budget_key)
    return ctx.update(read=True)


def settle(ctx: RunContext, privacy: dict, *, note: str | None = None) -> dict:
    """Commit the accountant's spend; return the population's lifetime totals (no runs listed)."""
    ledger = BudgetLedger(ctx.ledger_url)
    ledger.commit(ctx.budget_key, epsilon=float(privacy["epsilon_spent"]), delta=float(privacy["delta"]), note=note)
    ctx.update(settled=True)
    (pop,) = ledger.status(ctx.population)
    return pop.model_dump(exclude={"runs", "accesses"})


def finish(ctx: RunContext) -> None:
    """Remove the work folder of a run that ended normally (its operator reports are kept)."""
    ctx.workdir.remove(keep_reports_as=ctx.tracker_run_id or ctx.run_id)


def abort(run_id: str, tracker: Tracker | None = None, *, settle_budget: bool = True) -> None:
    """Close run ``run_id`` after any stop, from what its work folder says (see the module docstring). Safe to
    call twice and for a run that never began. ``settle_budget=False`` leaves the reservation as it is (the
    sweep of a killed run: its owner settles it with ``dpsyn budget close``)."""
    ctx = RunContext.load(run_id)
    if ctx is None:
        return
    from dpsyn.pipeline.stages import privacy_summary

    if tracker is not None and ctx.tracker_run_id and not ctx.privacy_logged:
        try:  # what the accountant recorded before the stop
            tracker.log_privacy(ctx.tracker_run_id, privacy_summary(ctx))
        except Exception:  # the tracker is down: the ledger below is what counts
            logger.warning("could not log the stopped run's privacy spend to the tracker")
    ledger = BudgetLedger(ctx.ledger_url)
    r = ledger.get(ctx.budget_key) if settle_budget else None
    if r is not None and r.state == "reserved":
        if r.data_read:  # a data-dependent stop: the whole reservation is charged
            ledger.commit(ctx.budget_key, epsilon=r.reserved_epsilon, delta=r.reserved_delta,
                          note=f"stopped ({ctx.tracker_run_id or ctx.run_id})")
        else:
            ledger.release(ctx.budget_key)
    if tracker is not None and ctx.tracker_run_id:
        try:
            tracker.end(ctx.tracker_run_id, "FAILED")
        except Exception:
            logger.warning("could not mark the stopped run FAILED in the tracker")
    _remove_staging(ctx.workdir)
    ctx.workdir.remove(keep_reports_as=ctx.tracker_run_id or ctx.run_id)


def _remove_staging(work: WorkDir) -> None:
    """A release the run was still writing when it stopped (never published: dest is untouched): its staging
    folder is removed and, if it was already recorded in the lineage ledger, its record withdrawn."""
    if not work.exists(WorkDir.STAGING):
        return
    info = work.read_json(WorkDir.STAGING)
    stage = Path(info["path"])
    if stage.name.startswith(".") and ".staging-" in stage.name and stage.is_dir():
        shutil.rmtree(stage, ignore_errors=True)
        if info.get("dataset_id"):
            from dpsyn.lineage import Ledger

            Ledger(info.get("lineage_url")).withdraw(info["dataset_id"])


_PURPOSES = ("synthesize", "drift-check")


def sweep(tracker: Tracker | None = None, *, running: list[str] = (), ledger_url: str | None = None) -> list[str]:
    """Close every run whose process is gone (killed outright) and remove every private folder it left: its
    tracker record is marked FAILED (with what its accountant recorded), its work folder removed (the operator
    reports kept). Its budget reservation stays open, charged in full: ``dpsyn budget show`` marks it DEAD and
    its owner settles it (``dpsyn budget close``). Folders of live processes and of other hosts are left alone.

    ``running``: ids the orchestrator still shows as running; those whose run is over by the ledger (no work
    folder, and a reservation that is closed or whose owner process is gone) are returned too, so the
    orchestrator can mark them crashed. Returns the ids of the runs closed or found over; never raises for one
    folder (the next sweep tries again)."""
    root = WorkDir.root()
    closed = _sweep_folders(root, tracker) if root.is_dir() else []
    if running:
        ledger = BudgetLedger(ledger_url)
        for run_id in running:
            if run_id in closed or WorkDir.for_run(run_id).path.exists():
                continue
            for purpose in _PURPOSES:
                r = ledger.get(f"{purpose}:{run_id}")
                if r is not None and (r.state != "reserved" or r.owner_state == "dead"):
                    closed.append(run_id)
                    break
    return closed


def _sweep_folders(root, tracker: Tracker | None) -> list[str]:
    closed = []
    for folder in sorted(root.iterdir()):
        if not folder.is_dir() or not owner_gone(folder):
            continue
        try:
            if (folder / WorkDir.RUN).exists():
                abort(folder.name, tracker, settle_budget=False)
                closed.append(folder.name)
            shutil.rmtree(folder, ignore_errors=True)
        except Exception as e:  # one broken folder must not stop the command that swept
            logger.warning("could not close the stopped run in %s (%s); the next dpsyn command tries again",
                           folder.name, type(e).__name__)
    if closed:
        logger.warning("closed %d run(s) whose process was killed: %s (their reservations stay charged in full "
                       "until closed: dpsyn budget show, dpsyn budget close)", len(closed), ", ".join(closed))
    return closed
