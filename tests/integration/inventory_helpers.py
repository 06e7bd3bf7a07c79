"""Collect every key and value a run wrote, place by place, for the release inventory test."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

from dpsyn.privacy.inventory import flatten_keys

TEXT_SUFFIXES = {".json", ".html", ".csv", ".txt", ".yaml", ".yml", ".md", ".MLmodel", ""}


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="strict")
    except (UnicodeDecodeError, OSError):
        return ""


class Collected:
    """(place, key) pairs and the published text to search for private values."""

    def __init__(self):
        self.items: set[tuple[str, str]] = set()
        self.published: list[tuple[str, str]] = []  # (where, text)

    def add(self, place: str, key: str, value: object = None, *, published: bool = True) -> None:
        self.items.add((place, key))
        if published and value is not None:
            self.published.append((f"{place}:{key}", value if isinstance(value, str) else json.dumps(value,
                                                                                                 default=str)))

    def add_doc(self, place: str, doc, *, where: str) -> None:
        for k in flatten_keys(doc):
            self.items.add((place, k))
        self.published.append((where, json.dumps(doc, default=str)))


def output_folder(c: Collected, out: Path) -> None:
    for p in sorted(out.iterdir()):
        c.add("output.file", p.name)
        if p.name == "manifest.json":
            c.add_doc("output.manifest", json.loads(p.read_text()), where=str(p))
        elif p.name == "validation_report.json":
            c.add_doc("output.validation_report", json.loads(p.read_text()), where=str(p))
        elif p.name == "synthetic.csv":
            for col in p.read_text().splitlines()[0].split(","):
                c.add("output.synthetic_column", col)  # the values are DP samples: not searched
        else:
            c.published.append((str(p), _text(p)))


def mlflow_run(c: Collected, run_id: str) -> None:
    from tasks.tracking import client

    cl = client()
    run = cl.get_run(run_id)
    for k, v in run.data.params.items():
        c.add("mlflow.param", k, v)
    for k, v in run.data.metrics.items():
        c.add("mlflow.metric", k, v)
    for k, v in run.data.tags.items():
        c.add("mlflow.tag", k, v)
    for di in (run.inputs.dataset_inputs if run.inputs else []):  # mlflow.log_input: what MLflow stored
        ds = di.dataset
        doc = {"name": ds.name, "digest": ds.digest, "source_type": ds.source_type,
               "source": json.loads(ds.source) if ds.source else None,
               "schema": json.loads(ds.schema) if ds.schema else None,
               "profile": json.loads(ds.profile) if ds.profile else None,
               "tags": {t.key: t.value for t in di.tags}}
        c.add_doc("mlflow.dataset", {k: v for k, v in doc.items() if v is not None}, where=f"mlflow dataset {ds.name}")

    def walk(path=None):
        for a in cl.list_artifacts(run_id, path):
            if a.is_dir:
                yield from walk(a.path)
            else:
                yield a.path

    import mlflow

    for path in walk():
        c.add("mlflow.artifact", path)
        if Path(path).suffix in TEXT_SUFFIXES and not path.endswith(".png"):
            local = Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=path))
            c.published.append((f"mlflow artifact {path}", _text(local)))
    for m in cl.search_logged_models(experiment_ids=[run.info.experiment_id]):
        if m.source_run_id != run_id:
            continue
        for k, v in (m.tags or {}).items():
            c.add("mlflow.logged_model_tag", k, v)
        local = Path(mlflow.artifacts.download_artifacts(artifact_uri=m.artifact_location))
        for f in local.rglob("*"):
            if f.is_file():
                c.add("mlflow.artifact", "model/" + str(f.relative_to(local)))
                if f.suffix in TEXT_SUFFIXES:
                    c.published.append((f"logged model {f.name}", _text(f)))


def mlflow_registry(c: Collected, name: str, version: str) -> None:
    from tasks.tracking import client

    mv = client().get_model_version(name, version)
    for k, v in (mv.tags or {}).items():
        c.add("mlflow.registry_tag", k, v)


def prefect_flow_run(c: Collected, flow_run_id) -> None:
    """Parameters, every task run's state (and its subflows'), logs and artifacts of one flow run tree."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        ArtifactFilter,
        ArtifactFilterFlowRunId,
        FlowRunFilter,
        FlowRunFilterId,
        FlowRunFilterParentFlowRunId,
        LogFilter,
        LogFilterFlowRunId,
    )

    with get_client(sync_client=True) as cl:
        root = cl.read_flow_run(flow_run_id)
        for k in flatten_keys(root.parameters):
            c.add("prefect.flow_param", k, published=False)
        c.published.append(("prefect flow-run parameters", json.dumps(root.parameters, default=str)))
        runs = [root]
        frontier = [root.id]
        while frontier:
            kids = cl.read_flow_runs(flow_run_filter=FlowRunFilter(
                parent_flow_run_id=FlowRunFilterParentFlowRunId(any_=frontier)))
            runs += kids
            frontier = [k.id for k in kids]
        ids = [r.id for r in runs]
        for r in runs:
            c.add("prefect.state", f"flow {r.name}:{r.state.type.value.title()}:{r.state.message or ''}",
                  r.state.message or "")
        for t in cl.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=ids))):
            msg = t.state.message or "" if t.state else ""
            c.add("prefect.state", f"{t.task_key.rsplit('-', 1)[0]}:{t.state.type.value.title()}:{msg}", msg)
        for log in cl.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=ids))):
            c.add("prefect.log", log.message, log.message)
        for a in cl.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=ids))):
            c.add("prefect.artifact", a.key or a.type, a.data)
            c.published.append((f"prefect artifact {a.key}", str(a.description or "")))


def sqlite_db(c: Collected, prefix: str, path: Path) -> None:
    """Every table and column of a ledger database (their values are searched too: ledgers can be shared)."""
    db = sqlite3.connect(path)
    try:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"):
            cols = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
            rows = db.execute(f"SELECT * FROM {table}").fetchall()
            for i, col in enumerate(cols):
                c.items.add((f"{prefix}.{table}", col))
                c.published.append((f"{prefix}.{table}.{col}", json.dumps([r[i] for r in rows], default=str)))
    finally:
        db.close()


def number_pattern(n: int) -> re.Pattern:
    """``n`` as a standalone number: not inside a longer number, a hex id or a decimal fraction."""
    return re.compile(rf"(?<![0-9A-Za-z.,]){n}(?![0-9A-Za-z]|\.[0-9])")


#: Published places whose values are the user's configuration (their keys are checked by the inventory): a config
#: number that happens to equal a count (pair_max_cells: 400, say) is not a leak, so only hashes are searched there.
CONFIG_PLACES = ("mlflow.param:", "prefect flow-run parameters")


def leaks(c: Collected, *, numbers: dict[str, int], hashes: dict[str, str], skip=()) -> list[str]:
    """Where a published text holds one of the exact counts or a content hash of the private rows."""
    found = []
    for where, text in c.published:
        if any(s in where for s in skip):
            continue
        for name, n in ({} if where.startswith(CONFIG_PLACES) else numbers).items():
            if number_pattern(n).search(text):
                found.append(f"{name} ({n}) in {where}")
        for name, h in hashes.items():
            if h[:16] in text:
                found.append(f"{name} in {where}")
    return found
