"""Serve dpsyn's deployments from this process: ``python flows/serve.py`` (with ``prefect server start`` running
and ``PREFECT_API_URL`` pointing at it).

The deployments are read from ``deployments/prefect.yaml``, so both ways of running dpsyn on a schedule agree:
the same names, descriptions, tags, parameters, cron schedules in their time zones and concurrency limits.
``prefect.serve`` needs no work pool and no worker: this process polls for scheduled runs and starts each in a
subprocess, in the repository (``$DPSYN_REPO``, else this checkout: the YAML's ``set_working_directory``), with
the YAML's ``job_variables.env`` set in its environment (``PREFECT_LOGGING_EXTRA_LOGGERS=dpsyn`` and
``DPSYN_LOG_LEVEL=INFO``: dpsyn's log lines reach the run's logs in the UI). The work pool itself is ignored here.

``build_deployments()`` only builds the deployment objects (no server needed); ``main()`` serves them.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PREFECT_YAML = REPO / "deployments" / "prefect.yaml"

if str(REPO) not in sys.path:  # `python flows/serve.py` puts flows/ first on the path, not the repository
    sys.path.insert(0, str(REPO))

__all__ = ["PREFECT_YAML", "build_deployments", "deployment_env", "main"]


def _spec(prefect_file: Path = PREFECT_YAML) -> dict:
    import yaml

    return yaml.safe_load(Path(prefect_file).read_text(encoding="utf-8"))


def _flow(entrypoint: str):
    path, _, name = entrypoint.partition(":")
    return getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), name)


def _schedules(dep: dict) -> list:
    from prefect.schedules import Schedule

    out = []
    for s in dep.get("schedules") or []:
        if "cron" not in s:
            raise ValueError(f"deployment {dep['name']}: only cron schedules are served (a month is not an interval)")
        out.append(Schedule(cron=s["cron"], timezone=s.get("timezone"), active=s.get("active", True),
                            parameters=s.get("parameters") or {}))
    return out


def _concurrency(dep: dict):
    limit = dep.get("concurrency_limit")
    if limit is None or isinstance(limit, int):
        return limit
    from prefect.client.schemas.objects import ConcurrencyLimitConfig

    return ConcurrencyLimitConfig(**limit)


def deployment_env(prefect_file: Path = PREFECT_YAML) -> dict[str, str]:
    """The ``job_variables.env`` of the YAML's deployments (merged: they share one work pool definition)."""
    env: dict[str, str] = {}
    for dep in _spec(prefect_file)["deployments"]:
        env.update({k: str(v) for k, v in (dep.get("work_pool") or {}).get("job_variables", {}).get("env", {}).items()})
    return env


def build_deployments(prefect_file: Path = PREFECT_YAML) -> list:
    """The YAML's deployments as ``RunnerDeployment`` objects for ``prefect.serve`` (nothing is contacted)."""
    out = []
    for dep in _spec(prefect_file)["deployments"]:
        fl = _flow(dep["entrypoint"])
        out.append(fl.to_deployment(
            name=dep["name"], description=dep.get("description"), tags=list(dep.get("tags") or []),
            parameters=dep.get("parameters") or {}, schedules=_schedules(dep),
            concurrency_limit=_concurrency(dep),
        ))
    return out


def main() -> None:
    workdir = Path(os.environ.get("DPSYN_REPO") or REPO)
    os.chdir(workdir)  # the parameters' relative paths (data/..., out/...) are the repository's, as under a worker
    for k, v in deployment_env().items():
        os.environ.setdefault(k, v)  # inherited by each flow run's subprocess
    from prefect import serve

    serve(*build_deployments())


if __name__ == "__main__":
    main()
