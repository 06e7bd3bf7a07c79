"""Task options defined once, and the decorator every row-touching task uses."""

from __future__ import annotations

import functools
import logging
import os

from prefect import task
from prefect.cache_policies import NO_CACHE

__all__ = ["FIT_TIMEOUT_S", "FLOW_TIMEOUT_S", "LOG_LEVEL_ENV", "PRIVATE", "flow_run_name", "private_task"]

#: The level of dpsyn's log lines in a flow run (the deployments set INFO). PREFECT_LOGGING_EXTRA_LOGGERS=dpsyn
#: hands the ``dpsyn`` logger Prefect's API handler but leaves its level unset, so Prefect's root level (WARNING)
#: would drop every INFO line before it reached the run's logs. Unset (the CLI): the level is left alone.
LOG_LEVEL_ENV = "DPSYN_LOG_LEVEL"
if os.environ.get(LOG_LEVEL_ENV):
    logging.getLogger("dpsyn").setLevel(os.environ[LOG_LEVEL_ENV].upper())

#: Tasks that touch rows or spend budget: no cache, no persisted result, no retry.
PRIVATE = dict(cache_policy=NO_CACHE, persist_result=False, retries=0)
#: A synthesize or drift flow that runs longer is stopped (Failed, TimedOut): its failure hook commits the whole
#: reservation if data was read, so a hung run holds its ε no longer than this.
FLOW_TIMEOUT_S = 6 * 3600
#: The DP synthesis task's own limit (the longest stage).
FIT_TIMEOUT_S = 5 * 3600


def flow_run_name() -> str:
    """The flow run's name from its ``config`` parameter (dpsyn.pipeline.run.run_name): the MLflow run has the
    same. Falls back to the flow's name when the parameter cannot be read."""
    from prefect.runtime import flow_run

    from dpsyn.config import DriftMonitorConfig, SynthesizeConfig
    from dpsyn.pipeline.drift import check_name
    from dpsyn.pipeline.run import run_name

    raw = flow_run.parameters.get("config")
    try:
        if flow_run.flow_name == "monitor-drift":
            return check_name(raw if isinstance(raw, DriftMonitorConfig) else DriftMonitorConfig.model_validate(raw))
        cfg = raw if isinstance(raw, SynthesizeConfig) else SynthesizeConfig.model_validate(raw)
        return run_name(cfg)
    except Exception:  # a name is advice: a bad parameter fails the run itself, with its own message
        return str(flow_run.flow_name or "dpsyn")


def private_task(name: str, **options):
    """``@task(name=name, **PRIVATE, **options)`` whose failure Prefect stores value-free: dpsyn's own errors pass as they are
    (their messages never quote a value), any other exception becomes one line naming its type and the task; the
    library's own text (which may quote a cell) is never stored in Prefect's API nor printed."""

    def decorate(fn):
        @functools.wraps(fn)
        def value_free(*args, **kwargs):
            from dpsyn.errors import DpsynError

            try:
                return fn(*args, **kwargs)
            except DpsynError:
                raise
            except Exception as e:
                raise RuntimeError(f"{type(e).__name__} in task {name} (its message is not kept: a library's text "
                                   "may quote the data)") from None

        return task(name=name, **PRIVATE, **options)(value_free)

    return decorate
