"""Issue 23, links between Prefect and MLflow and progress in the UI: progress artifacts driven by dpsyn's progress
hook, link artifacts to the MLflow run and registered version, the training batch as a metadata-only MLflow
dataset input, `dpsyn audit trace` naming the flow run, the automations file, and `flows/serve.py`.

One synthesize flow run (module fixture: dpgen, two epochs, 2,000 rows) serves every test that needs a run.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml
from loose_gate import LOOSE

REPO = Path(__file__).resolve().parents[2]
AUTOMATIONS = REPO / "deployments" / "automations.yaml"


# -- without a server ------------------------------------------------------------------------------------------------
def _automations() -> list[dict]:
    return yaml.safe_load(AUTOMATIONS.read_text())["automations"]


def test_the_automations_file_validates_with_prefects_own_models():
    """What `prefect automation create --from-file` does with each entry (AutomationCore.model_validate), and the
    server's model and template check on top (no server needed)."""
    from prefect.events.schemas.automations import AutomationCore
    from prefect.server.events.schemas.automations import AutomationCore as ServerAutomation
    from prefect.server.utilities.user_templates import validate_user_template

    autos = {a["name"]: AutomationCore.model_validate(a) for a in _automations()}
    assert set(autos) == {"dpsyn-flow-run-failed", "dpsyn-privacy-budget-exceeded"}
    failed = autos["dpsyn-flow-run-failed"].trigger
    assert {"prefect.flow-run.Failed", "prefect.flow-run.Crashed"} <= failed.expect
    assert failed.match_related.model_dump()["prefect.resource.id"] == "prefect.tag.dpsyn"
    assert autos["dpsyn-privacy-budget-exceeded"].trigger.expect == {"dpsyn.budget.exceeded"}
    for a in _automations():
        ServerAutomation.model_validate(a)
        for action in a["actions"]:
            assert action["type"] == "send-notification"
            validate_user_template(action["subject"])
            validate_user_template(action["body"])


def _received(event: str, resource: dict, related: list[dict], payload: dict | None = None):
    from prefect.server.events.schemas.events import ReceivedEvent
    from prefect.types._datetime import now

    return ReceivedEvent(occurred=now("UTC"), event=event, resource=resource, related=related, payload=payload or {},
                         id=uuid.uuid4())


def test_the_budget_refusal_emits_the_event_the_automation_matches(monkeypatch, tmp_path):
    """A lifetime cap that refuses the reservation in the begin-run task emits dpsyn.budget.exceeded (names only),
    and the second automation's trigger covers that event; the first covers a dpsyn flow run that failed."""
    from prefect.server.events.schemas.automations import AutomationCore as ServerAutomation

    import tasks.artifacts
    import tasks.stages as st
    from dpsyn.config import SynthesizeConfig
    from dpsyn.errors import PrivacyBudgetExceededError

    emitted = []
    monkeypatch.setattr("prefect.events.emit_event", lambda **kw: emitted.append(kw))
    monkeypatch.setattr(tasks.artifacts, "_in_run", lambda: True)
    (tmp_path / "x.data").write_text("a")
    cfg = SynthesizeConfig(data=tmp_path / "x.data", table_schema="adult", out=tmp_path / "out",
                           budget={"population": "capped-pop", "lifetime_epsilon": 0.5,
                                   "ledger_url": f"sqlite:///{tmp_path / 'budget.db'}"})
    with pytest.raises(PrivacyBudgetExceededError):
        st.begin.fn(cfg)
    (ev,) = emitted
    assert ev["event"] == "dpsyn.budget.exceeded"
    assert ev["resource"]["prefect.resource.id"] == "dpsyn.population.capped-pop"
    assert ev["payload"] == {"population": "capped-pop", "schema": "adult", "purpose": "synthesize"}

    autos = {a["name"]: ServerAutomation.model_validate(a) for a in _automations()}
    flow_run = {"prefect.resource.id": "prefect.flow-run.6b0a2c1e-0000-4000-8000-000000000001",
                "prefect.resource.role": "flow-run"}
    tag = {"prefect.resource.id": "prefect.tag.dpsyn", "prefect.resource.role": "tag"}
    budget = _received(ev["event"], ev["resource"], [flow_run, tag], ev["payload"])
    assert autos["dpsyn-privacy-budget-exceeded"].trigger.covers(budget)
    failed = _received("prefect.flow-run.Failed", {"prefect.resource.id": flow_run["prefect.resource.id"]}, [tag])
    assert autos["dpsyn-flow-run-failed"].trigger.covers(failed)
    untagged = _received("prefect.flow-run.Failed", {"prefect.resource.id": flow_run["prefect.resource.id"]}, [])
    assert not autos["dpsyn-flow-run-failed"].trigger.covers(untagged)


def test_serve_builds_the_deployments_of_prefect_yaml():
    """flows/serve.py serves what deployments/prefect.yaml declares: names, tags, parameters, cron and time zone,
    concurrency (building the objects contacts no server)."""
    import flows.serve as serve

    spec = {d["name"]: d for d in yaml.safe_load(serve.PREFECT_YAML.read_text())["deployments"]}
    built = {d.name: d for d in serve.build_deployments()}
    assert set(built) == set(spec)
    for name, d in built.items():
        want = spec[name]
        assert d.tags == want["tags"] and "dpsyn" in d.tags
        assert d.description == want["description"]
        assert d.parameters == want["parameters"]
        assert d.entrypoint == want["entrypoint"]
        assert [(s.schedule.cron, s.schedule.timezone, s.active) for s in d.schedules] == [
            (s["cron"], s["timezone"], s["active"]) for s in want["schedules"]]
    monitor = built["monitor-drift-monthly"]
    assert monitor.concurrency_limit == 1 and monitor.concurrency_options.collision_strategy.value == "ENQUEUE"
    assert serve.deployment_env() == {"PREFECT_LOGGING_EXTRA_LOGGERS": "dpsyn", "DPSYN_LOG_LEVEL": "INFO"}


def test_links_are_the_ui_pages_for_a_server_and_uris_otherwise(monkeypatch):
    import tasks.tracking as mlf

    class Run:
        class info:
            experiment_id = "7"

        class data:
            tags = {"mlflow.runName": "synthesize-adult-eps1-x"}

    class Client:
        def get_run(self, run_id):
            return Run

    monkeypatch.setattr(mlf, "client", lambda: Client())
    monkeypatch.setattr(mlf, "mlflow_tracking_uri", lambda: "https://user:secret@mlflow.example.org:5443/")
    run, model = mlf.run_links("abc", {"name": "dpsyn-adult", "version": "3"})
    assert run["link"] == "https://mlflow.example.org:5443/#/experiments/7/runs/abc"  # no credentials
    assert model["link"] == "https://mlflow.example.org:5443/#/models/dpsyn-adult/versions/3"
    monkeypatch.setattr(mlf, "mlflow_tracking_uri", lambda: "sqlite:////somewhere/mlflow.db")
    (run,) = mlf.run_links("abc", None)
    assert run["link"] == "runs:/abc" and "no page" in run["description"] and "somewhere" not in json.dumps(run)


# -- one flow run ----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def run(prefect_harness, small_adult, tmp_path_factory):
    from dpsyn.config import SynthesizeConfig
    from flows.synthesize import synthesize

    tmp = tmp_path_factory.mktemp("links")
    cfg = SynthesizeConfig(data=small_adult, table_schema="adult", out=tmp / "out", synthesizer="dpgen",
                           synthesizer_config={"epochs": 2}, validation=LOOSE, experiment="links",
                           model_name="dpsyn-links", lineage_url=f"sqlite:///{tmp / 'lineage.db'}",
                           budget={"population": "links-test", "ledger_url": f"sqlite:///{tmp / 'budget.db'}"})
    result = synthesize(cfg)
    manifest = json.loads((tmp / "out" / "manifest.json").read_text())
    return {"result": result, "out": tmp / "out", "flow_run_id": manifest["run_id"], "lineage": cfg.lineage_url}


def _artifacts(flow_run_id: str) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    with get_client(sync_client=True) as c:
        return c.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))


@pytest.mark.slow
def test_the_fit_shows_a_progress_artifact_that_reaches_100(run):
    progress = [a for a in _artifacts(run["flow_run_id"]) if a.type == "progress"]
    assert [a.key for a in progress] == ["progress-dpgen-dpsgd-dp-sgd-steps"]
    (a,) = progress
    assert float(a.data) == 100.0 and a.task_run_id is not None
    assert "DP-SGD steps" in a.description and not any(ch.isdigit() for ch in a.description)


@pytest.mark.slow
def test_the_run_links_to_its_mlflow_run_and_model_version(run):
    links = {a.key: a for a in _artifacts(run["flow_run_id"]) if a.type == "markdown" and a.key.startswith("mlflow-")}
    assert set(links) == {"mlflow-run", "mlflow-model"}
    model = run["result"]["model"]
    assert f"runs:/{run['result']['mlflow_run_id']}" in links["mlflow-run"].data  # a SQLite store: no UI page
    assert f"models:/{model['name']}/{model['version']}" in links["mlflow-model"].data


@pytest.mark.slow
def test_the_training_batch_is_a_metadata_only_mlflow_input(run):
    import hashlib

    from dpsyn.schema import load_schema
    from tasks.tracking import client

    r = client().get_run(run["result"]["mlflow_run_id"])
    assert r.data.tags["dpsyn.orchestrator"] == "prefect" and r.data.tags["dpsyn.run_id"] == run["flow_run_id"]
    (di,) = r.inputs.dataset_inputs
    ds = di.dataset
    schema = load_schema("adult")
    batch = run["result"]["training_batch"]["batch_id"]
    assert ds.name == "adult" and ds.source_type == "code" and not ds.profile  # no num_rows, no statistics
    assert ds.digest == hashlib.sha256(f"{batch}:{schema.fingerprint()}".encode()).hexdigest()[:16]
    assert json.loads(ds.source)["tags"]["dpsyn.training_batch"] == batch
    cols = json.loads(ds.schema)["mlflow_colspec"]
    assert [c["name"] for c in cols] == [c for c in schema.output_columns() if c in {x["name"] for x in cols}]
    assert {t.key: t.value for t in di.tags} == {"mlflow.data.context": "training"}
    stored = json.dumps([ds.name, ds.digest, ds.source, ds.schema, ds.profile])
    from .inventory_helpers import number_pattern

    for n in (2000, run["result"]["training_batch"]["rows_estimate"]):  # the exact and the noisy row count
        assert not number_pattern(n).search(stored), n  # (the input's name, adult2000.data, is configuration)


@pytest.mark.slow
def test_trace_names_the_flow_run_and_its_state(run, monkeypatch):
    from prefect.client.orchestration import get_client
    from prefect.settings import PREFECT_API_URL
    from typer.testing import CliRunner

    from dpsyn_cli.main import app

    with get_client(sync_client=True) as c:
        name = c.read_flow_run(run["flow_run_id"]).name
    path = str(run["out"] / "synthetic.csv")
    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())
    res = CliRunner().invoke(app, ["audit", "trace", path, "--ledger", run["lineage"]])
    assert res.exit_code == 0, res.output
    assert f"Prefect flow run: {run['flow_run_id']} {name} (Completed)" in res.output
    res = CliRunner().invoke(app, ["audit", "trace", path, "--ledger", run["lineage"], "--json"])
    (entry,) = json.loads(res.stdout)["orchestration"].values()
    assert entry == {"orchestrator": "prefect", "run_id": run["flow_run_id"], "name": name, "state": "Completed"}

    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:9/api")  # nothing listens: one line, no traceback
    res = CliRunner().invoke(app, ["audit", "trace", path, "--ledger", run["lineage"]])
    assert res.exit_code == 0 and "Traceback" not in res.output
    assert f"Prefect flow run: {run['flow_run_id']} {name}\n" in res.output
    assert "was not reached" in res.output
    monkeypatch.delenv("PREFECT_API_URL")
    res = CliRunner().invoke(app, ["audit", "trace", path, "--ledger", run["lineage"]])
    assert f"Prefect flow run: {run['flow_run_id']} {name}\n" in res.output and "PREFECT_API_URL is not set" in res.output
