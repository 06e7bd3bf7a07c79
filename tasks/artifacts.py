"""Prefect artifacts: the reports people look at in the UI (counts and statistics, never values).

Creating an artifact outside a flow or task run is a no-op here, so the tasks
also work when called as plain functions (``.fn``) in tests.

* ``validation-report`` / ``validation-checks``: the gate's verdict and checks (DP values);
* ``progress-<stage>``: a long stage's share done (:func:`progress_artifacts`, driven by :mod:`dpsyn.progress`);
* ``mlflow-run`` / ``mlflow-model``: links to the run's MLflow run and registered version (:func:`publish_links`).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from prefect import task

logger = logging.getLogger(__name__)


def _in_run() -> bool:
    from prefect.context import FlowRunContext, TaskRunContext

    return FlowRunContext.get() is not None or TaskRunContext.get() is not None


def validation_markdown(report) -> str:
    """The gate's verdict as Markdown: failed checks first, then a count of the rest (DP statistics only)."""
    failures = report.failures()
    weak = report.uninformative()
    head = (f"## Validation gate: {report.verdict.upper()}\n\n"
            f"{len(report.checks) - len(failures) - len(weak)} of {len(report.checks)} checks passed, "
            f"{len(weak)} uninformative (too noisy to judge) "
            f"(about {report.n_real:,} real rows by the run's noisy count, {report.n_synthetic:,} synthetic; one-way "
            f"noise std {report.noise_std:.4f}).\n")
    if failures:
        head += "\nNothing was published. Failed checks:\n\n| check | value (DP) | limit |\n|---|---|---|\n"
        head += "".join(f"| `{c.name}` | {c.value:.4f} | {c.limit:.4f} |\n" for c in failures)
    if report.utility:
        u = report.utility
        head += f"\nUtility: AUC train-on-synthetic {u['auc_tstr']:.3f}, DP train-on-real {u['auc_trtr']:.3f}.\n"
    head += "\nThe full report with per-column plots is `validation_report.html` (run output and MLflow `reports/`).\n"
    return head


def publish_validation_report(report) -> str | None:
    """The gate's verdict as a Prefect Markdown artifact (key ``validation-report``) and every check as a table
    artifact (key ``validation-checks``); returns the Markdown artifact's id."""
    if not _in_run():
        return None
    from prefect.artifacts import create_markdown_artifact, create_table_artifact

    rows = [{"check": c.name, "statistic": c.statistic, "value": round(c.value, 6), "limit": round(c.limit, 6),
             "noise_std": round(c.noise_std, 6), "passed": c.passed}
            for c in sorted(report.checks, key=lambda c: (c.passed, c.name))]
    create_table_artifact(key="validation-checks", table=rows, description="Every gate check (DP values).")
    return str(create_markdown_artifact(key="validation-report", markdown=validation_markdown(report),
                                        description="Validation gate verdict"))


@task(name="validation-artifacts", persist_result=False)
def publish_validation_report_task(report: dict) -> str | None:
    """The gate's verdict and checks as Prefect artifacts (DP values only)."""
    from dpsyn.validation import ValidationReport

    return publish_validation_report(ValidationReport.model_validate(report))


# -- progress: dpsyn.progress reports mirrored into Prefect progress artifacts ----------------------------------------
def progress_key(stage: str) -> str:
    """The artifact key of a stage: ``progress-`` and the stage's name in lowercase letters, digits and dashes."""
    slug = re.sub(r"[^a-z0-9]+", "-", stage.lower()).strip("-")
    return f"progress-{slug}"[:100].rstrip("-")


class ProgressArtifacts:
    """A :mod:`dpsyn.progress` reporter that shows the stages ``match`` accepts as Prefect progress artifacts.

    The first report of a stage creates its artifact (key :func:`progress_key`); later reports update it only
    when it moved by at least ``min_step`` percentage points **and** ``min_interval`` seconds passed since the
    last write, and always when the stage reaches 100 %: at most about a hundred writes per stage, at most one a
    second. The value is ``done / total`` in whole percent: the share of the stage's planned steps (public
    configuration or a DP count, see the caller), never a statistic of the rows. Reports from other threads and
    other stages pass to ``previous`` only; a failing write disables the artifact (a progress bar never breaks a
    run).
    """

    def __init__(self, match: Callable[[str], bool], *, description: Callable[[str], str] = str,
                 previous: Callable[[str, int, int], None] | None = None, min_interval: float = 1.0,
                 min_step: float = 1.0, clock: Callable[[], float] = time.monotonic, create=None, update=None):
        self.match, self.describe, self.previous = match, description, previous
        self.min_interval, self.min_step, self.clock = min_interval, min_step, clock
        self._create, self._update = create, update
        self.thread = threading.get_ident()
        self.stages: dict[str, dict] = {}  # stage -> {"id", "progress", "at"} (id None: disabled)
        self.writes = 0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.previous is not None:
            try:
                self.previous(stage, done, total)
            except Exception:
                logger.debug("the previous progress reporter failed", exc_info=True)
        if threading.get_ident() != self.thread or total <= 0 or not self.match(stage):
            return
        pct = 100.0 if done >= total else float(min(99, max(0, int(100 * done / total))))
        now = self.clock()
        st = self.stages.get(stage)
        try:
            if st is None:
                self.stages[stage] = st = {"id": None, "progress": pct, "at": now}
                st["id"] = self._creator()(progress=pct, key=progress_key(stage), description=self.describe(stage))
                self.writes += 1
            elif st["id"] is not None and pct > st["progress"] and (
                    pct == 100.0 or (pct - st["progress"] >= self.min_step and now - st["at"] >= self.min_interval)):
                self._updater()(st["id"], pct)
                st["progress"], st["at"] = pct, now
                self.writes += 1
        except Exception as e:  # the API is unreachable or refused: no more writes for this stage
            logger.debug("progress artifact for %s failed (%s)", stage, type(e).__name__)
            if st is not None:
                st["id"] = None

    def _creator(self):
        if self._create is None:
            from prefect.artifacts import create_progress_artifact

            self._create = create_progress_artifact
        return self._create

    def _updater(self):
        if self._update is None:
            from prefect.artifacts import update_progress_artifact

            self._update = update_progress_artifact
        return self._update


@contextmanager
def progress_artifacts(match: Callable[[str], bool], *, description: Callable[[str], str] = str,
                       **kw) -> Iterator[ProgressArtifacts | None]:
    """Inside a Prefect run: install a :class:`ProgressArtifacts` reporter (chained to the one installed before,
    e.g. the CLI's progress bars) for the block, then restore the previous one. Outside a run: nothing."""
    if not _in_run():
        yield None
        return
    from dpsyn.progress import set_reporter

    reporter = ProgressArtifacts(match, description=description, **kw)
    reporter.previous = set_reporter(reporter)
    try:
        yield reporter
    finally:
        set_reporter(reporter.previous)


# -- links: the run's MLflow run and registered model version -------------------------------------------------------
def publish_links(links: list[dict]) -> list[str]:
    """Each of ``links`` (``key``, ``link``, ``link_text``, ``description``: from tasks.tracking.run_links) as a
    Prefect link artifact; returns their ids (none outside a run)."""
    if not _in_run():
        return []
    from prefect.artifacts import create_link_artifact

    return [str(create_link_artifact(link=x["link"], link_text=x["link_text"], key=x["key"],
                                     description=x["description"])) for x in links]


@task(name="link-artifacts", persist_result=False, retries=0)
def publish_links_task(mlflow_run_id: str, registered: dict | None = None) -> list[str]:
    """Link artifacts to the run's MLflow run and, when one was registered, its model version (ids and the
    tracking server's address: public configuration). Never raises: the run is published by now."""
    from tasks.tracking import run_links

    try:
        return publish_links(run_links(mlflow_run_id, registered))
    except Exception as e:
        logger.warning("link artifacts: not created (%s)", type(e).__name__)
        return []


#: The progress shown as Prefect progress artifacts (tasks.artifacts.progress_artifacts): the share done of a
#: planned number of steps, never a statistic of the rows. DP-SGD's T comes from public settings and the noisy
#: count (the MLflow param training.steps.*); the sample's chunks are ceil(n / partition_rows), n the config's
#: n_samples or the noisy count. The loops run every planned step (none stops on a data-dependent condition).
DPSGD_STAGE = ": DP-SGD steps"
SAMPLE_STAGE = "sample (chunks)"


def fit_progress():
    return progress_artifacts(lambda stage: stage.endswith(DPSGD_STAGE), description=lambda stage: (
        f"{stage}: share of the planned DP-SGD steps done (T from public settings and the noisy count)"))


def sample_progress():
    return progress_artifacts(lambda stage: stage == SAMPLE_STAGE, description=lambda stage: (
        "sampling: share of the synthetic table's chunks written (chunks of partition_rows; the row count is "
        "the config's n_samples or the noisy count)"))
