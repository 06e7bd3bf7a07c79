"""deployments/prefect.yaml: every entrypoint imports as a flow whose parameters validate; the monthly schedule
is a calendar cron in an explicit time zone; `prefect deploy --all` registers the deployments on a local server."""

from __future__ import annotations

import importlib
import inspect
import json
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
                                                "flows/audit.py:audit", "flows/fairness.py:audit_fairness",
                                                "flows/dataset.py:synthesize_dataset"}
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


@pytest.fixture(scope="module")
def deployed(prefect_harness):
    """`prefect deploy --all` against the test harness's local Prefect server (a subprocess API server): the
    process work pool, then every deployment of prefect.yaml. Returns a runner of `python -m prefect ...`."""
    from prefect.settings import PREFECT_API_URL

    api = PREFECT_API_URL.value()
    assert api, "the harness should expose a local API URL"
    env = {**os.environ, "PREFECT_API_URL": api, "DPSYN_REPO": str(REPO), "PREFECT_CLI_PROMPT": "false"}

    def run(*args, timeout=300, drop=()):
        return subprocess.run([sys.executable, "-m", "prefect", *args], cwd=REPO, capture_output=True, text=True,
                              env={k: v for k, v in env.items() if k not in drop}, timeout=timeout)

    pool = run("work-pool", "create", "dpsyn-pool", "--type", "process", "--overwrite")
    assert pool.returncode == 0, pool.stdout[-2000:] + pool.stderr[-2000:]
    res = run("--no-prompt", "deploy", "--all", "--prefect-file", str(PREFECT_YAML))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return run


@pytest.mark.slow
def test_prefect_deploy_all_registers_the_deployments(deployed):
    from prefect.client.orchestration import get_client

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


@pytest.mark.slow
def test_a_process_worker_runs_the_deployment_with_logs_progress_a_name_and_the_mlflow_link(
        deployed, small_adult, tmp_path):
    """Issue 23: a run of the synthesize-on-demand deployment, picked up by `prefect worker start` (a process
    worker: the flow runs in a subprocess with the deployment's job variables), shows dpsyn's log lines and a
    progress artifact in the API's records, has a readable name, and its MLflow run carries the flow-run id."""
    from loose_gate import LOOSE
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        LogFilter,
        LogFilterFlowRunId,
    )

    from dpsyn.config import SynthesizeConfig
    from dpsyn.pipeline.run import run_name
    from tasks.tracking import client

    config = {"data": str(small_adult), "table_schema": "adult", "out": str(tmp_path / "out"),
              "synthesizer": "dpgen", "synthesizer_config": {"epochs": 2}, "validation": LOOSE,
              "experiment": "worker", "model_name": "dpsyn-worker", "lineage_url": f"sqlite:///{tmp_path / 'l.db'}",
              "budget": {"population": "worker-test", "ledger_url": f"sqlite:///{tmp_path / 'b.db'}"}}
    with get_client(sync_client=True) as c:
        dep = c.read_deployment_by_name("synthesize/synthesize-on-demand")
        fr = c.create_flow_run_from_deployment(dep.id, parameters={"config": config})
    # the worker's own environment lacks dpsyn's logging settings: the deployment's job variables must bring them
    worker = deployed("worker", "start", "--pool", "dpsyn-pool", "--type", "process", "--run-once", "--limit", "1",
                      timeout=600, drop=("PREFECT_LOGGING_EXTRA_LOGGERS", "DPSYN_LOG_LEVEL"))
    assert worker.returncode == 0, worker.stdout[-3000:] + worker.stderr[-3000:]
    with get_client(sync_client=True) as c:
        fr = c.read_flow_run(fr.id)
        logs = c.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[fr.id])))
        artifacts = c.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[fr.id])))
    assert fr.state is not None and fr.state.is_completed(), (fr.state, worker.stdout[-3000:])
    assert fr.name == run_name(SynthesizeConfig.model_validate(config)) == "synthesize-adult-eps1-adult2000"
    dpsyn_lines = [r for r in logs if r.name.startswith("dpsyn.")]
    assert dpsyn_lines, sorted({r.name for r in logs})  # the job variables' PREFECT_LOGGING_EXTRA_LOGGERS and level
    assert any(r.level == 20 for r in dpsyn_lines)  # INFO lines too, not only warnings
    progress = [a for a in artifacts if a.type == "progress"]
    assert progress and all(float(a.data) == 100.0 for a in progress)
    assert any(a.key == "mlflow-run" for a in artifacts)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["run_id"] == str(fr.id)
    runs = client().search_runs(experiment_ids=[client().get_experiment_by_name("worker").experiment_id])
    (mr,) = runs
    assert mr.data.tags["dpsyn.run_id"] == str(fr.id) and mr.data.tags["dpsyn.orchestrator"] == "prefect"
    assert mr.data.tags["mlflow.runName"] == fr.name


def test_every_deployment_is_tagged_and_carries_dpsyn_environment():
    for dep in _spec()["deployments"]:
        assert "dpsyn" in dep["tags"], dep["name"]
        env = dep["work_pool"]["job_variables"]["env"]
        assert env["PREFECT_LOGGING_EXTRA_LOGGERS"] == "dpsyn"
        assert not any("{{" in str(v) for v in env.values())  # an unset {{ $VAR }} would stay literal
    (monitor,) = [d for d in _spec()["deployments"] if d["name"] == "monitor-drift-monthly"]
    assert monitor["concurrency_limit"]["limit"] == 1
