"""deployments/prefect.yaml: every entrypoint imports as a flow whose parameters validate; the monthly schedule
is a calendar cron in an explicit time zone; `prefect deploy --all` registers the deployments on a local server."""

from __future__ import annotations

import importlib
import inspect
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PREFECT_YAML = REPO / "deployments" / "prefect.yaml"


def _spec():
    return yaml.safe_load(PREFECT_YAML.read_text())


def _flow(entrypoint: str):
    path, _, name = entrypoint.partition(":")
    return getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), name)


def test_every_entrypoint_is_a_flow_with_valid_parameters():
    from prefect import Flow

    deps = _spec()["deployments"]
    assert {d["entrypoint"] for d in deps} == {"flows/synthesize.py:synthesize", "flows/drift.py:monitor_drift",
                                                "flows/audit.py:audit", "flows/fairness.py:audit_fairness"}
    for dep in deps:
        fl = _flow(dep["entrypoint"])
        assert isinstance(fl, Flow)
        model = inspect.signature(fl.fn).parameters["config"].annotation
        if isinstance(model, str):  # postponed annotations
            model = getattr(importlib.import_module(fl.fn.__module__), model)
        model(**dep["parameters"]["config"])  # the parameters validate against the flow's config model


def test_monitor_runs_at_two_on_the_first_of_each_month_in_an_explicit_time_zone():
    from prefect.client.schemas.schedules import CronSchedule

    (dep,) = [d for d in _spec()["deployments"] if d["entrypoint"].endswith(":monitor_drift")]
    (sched,) = dep["schedules"]
    assert "interval" not in sched  # a month is not a fixed interval
    assert sched["cron"] == "0 2 1 * *" and sched["timezone"]
    cron = CronSchedule(cron=sched["cron"], timezone=sched["timezone"])
    assert cron.timezone == sched["timezone"]
    import asyncio

    from prefect.server.schemas.schedules import CronSchedule as ServerCron  # what the scheduler runs

    tz = ZoneInfo(sched["timezone"])
    server = ServerCron(cron=sched["cron"], timezone=sched["timezone"])
    dates = asyncio.run(server.get_dates(n=13, start=datetime(2027, 1, 15, tzinfo=tz)))
    local = [d.astimezone(tz) for d in dates]
    assert all(d.day == 1 and d.hour == 2 and d.minute == 0 for d in local)
    assert [d.month for d in local[:12]] == [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1]  # calendar months, across DST


@pytest.mark.slow
def test_prefect_deploy_all_registers_the_deployments(prefect_harness, tmp_path):
    """`prefect deploy --all` against the test harness's local Prefect server (a subprocess API server)."""
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL

    api = PREFECT_API_URL.value()
    assert api, "the harness should expose a local API URL"
    env = {**os.environ, "PREFECT_API_URL": api, "DPSYN_REPO": str(REPO), "PREFECT_CLI_PROMPT": "false"}
    prefect = [sys.executable, "-m", "prefect"]

    def run(*args):
        return subprocess.run([*prefect, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)

    pool = run("work-pool", "create", "dpsyn-pool", "--type", "process", "--overwrite")
    assert pool.returncode == 0, pool.stdout[-2000:] + pool.stderr[-2000:]
    res = run("--no-prompt", "deploy", "--all", "--prefect-file", str(PREFECT_YAML))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    with get_client(sync_client=True) as c:
        deps = {d.name: d for d in c.read_deployments()}
    assert {"synthesize-on-demand", "monitor-drift-monthly", "audit-on-demand", "audit-fairness-on-demand"} <= set(deps)
    sched = deps["monitor-drift-monthly"].schedules
    assert len(sched) == 1 and sched[0].schedule.cron == "0 2 1 * *" and sched[0].schedule.timezone
    monitor = deps["monitor-drift-monthly"]
    assert monitor.global_concurrency_limit is not None and monitor.global_concurrency_limit.limit == 1
    for d in deps.values():  # as a service: tagged, and dpsyn's log lines reach the run's logs under a worker
        assert "dpsyn" in d.tags
        assert d.job_variables["env"]["PREFECT_LOGGING_EXTRA_LOGGERS"] == "dpsyn"


def test_every_deployment_is_tagged_and_carries_dpsyn_environment():
    for dep in _spec()["deployments"]:
        assert "dpsyn" in dep["tags"], dep["name"]
        env = dep["work_pool"]["job_variables"]["env"]
        assert env["PREFECT_LOGGING_EXTRA_LOGGERS"] == "dpsyn"
        assert not any("{{" in str(v) for v in env.values())  # an unset {{ $VAR }} would stay literal
    (monitor,) = [d for d in _spec()["deployments"] if d["name"] == "monitor-drift-monthly"]
    assert monitor["concurrency_limit"]["limit"] == 1
