"""The one MLflow adapter: everything dpsyn records in MLflow goes through here.

It uses ``MlflowClient`` with explicit run ids (no global active run), so
tasks in any thread can log to the run. It logs settings, ε, δ and DP
statistics, reports of counts, and the fitted model: never a data value.
The default store is SQLite under ``$DPSYN_HOME`` (see dpsyn.home).

The fitted synthesizer is logged as a pyfunc model (tasks/pyfunc_model.py)
and every run that reaches the validation gate becomes a version of the
registered model ``dpsyn-<schema>``, tagged with ε, δ, cumulative ε, the
training batch and the gate's verdict; the alias ``champion`` moves to a
version only when its gate passed (and its release was published).
"""

from __future__ import annotations

import json
import tempfile
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from prefect import task

from dpsyn.home import dpsyn_home, mlflow_artifact_root, mlflow_tracking_uri

_MAX_PARAM = 500
MODEL_NAME_PREFIX = "dpsyn-"
MODEL_ARTIFACT = "model"  # the logged pyfunc model's name
CHAMPION = "champion"  # the alias of the version that serves: moved only by a passing gate


def client():
    import mlflow
    from mlflow.tracking import MlflowClient

    uri = mlflow_tracking_uri()
    if uri.startswith("sqlite:///"):
        dpsyn_home().mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(uri)
    return MlflowClient(tracking_uri=uri)


def _experiment_id(c, name: str) -> str:
    exp = c.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    location = None
    if mlflow_tracking_uri().startswith("sqlite:///"):
        location = f"{mlflow_artifact_root()}/{name}"
    return c.create_experiment(name, artifact_location=location)


def _flatten(d: dict, prefix: str = "") -> dict[str, str]:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = json.dumps(v, default=str) if isinstance(v, (list, dict)) else str(v)
    return {k: v[:_MAX_PARAM] for k, v in out.items()}


def start_run(experiment: str, params: dict[str, Any], tags: dict[str, str] | None = None) -> str:
    from mlflow.entities import Param, RunTag

    c = client()
    run = c.create_run(_experiment_id(c, experiment), tags={"mlflow.runName": "synthesize", **(tags or {})})
    flat = _flatten(params)
    items = list(flat.items())
    for i in range(0, len(items), 100):
        c.log_batch(run.info.run_id, params=[Param(k, v) for k, v in items[i : i + 100]])
    if tags:
        c.log_batch(run.info.run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])
    return run.info.run_id


def log_metrics(run_id: str, metrics: dict[str, float]) -> None:
    import time

    from mlflow.entities import Metric

    ts = int(time.time() * 1000)
    items = [Metric(k.replace(":", "."), float(v), ts, 0) for k, v in metrics.items() if v is not None]
    c = client()
    for i in range(0, len(items), 500):
        c.log_batch(run_id, metrics=items[i : i + 500])


def log_params(run_id: str, params: dict[str, Any]) -> None:
    from mlflow.entities import Param

    c = client()
    existing = set(c.get_run(run_id).data.params)
    items = [Param(k, v) for k, v in _flatten(params).items() if k not in existing]
    for i in range(0, len(items), 100):
        c.log_batch(run_id, params=items[i : i + 100])


def log_dict(run_id: str, obj: Any, artifact_file: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / Path(artifact_file).name
        p.write_text(json.dumps(obj, indent=2, default=str))
        sub = str(Path(artifact_file).parent) if Path(artifact_file).parent != Path(".") else None
        client().log_artifact(run_id, str(p), artifact_path=sub)


def log_file(run_id: str, path: str | Path, artifact_path: str | None = None) -> None:
    client().log_artifact(run_id, str(path), artifact_path=artifact_path)


def set_tags(run_id: str, tags: dict[str, Any]) -> None:
    c = client()
    for k, v in tags.items():
        c.set_tag(run_id, k, str(v))


def _pip_requirements(wheel: Path) -> list[str]:
    """What the model's own environment installs, pinned to what logged it (no inference: it costs ~11 s and adds
    unrelated packages): MLflow's client and serving (``mlflow-skinny``), cloudpickle, the runtime a synthesizer
    samples with, and the dpsyn wheel logged with the model (a path inside the model folder)."""
    from tasks.model_wheel import pinned, runtime_requirements

    return pinned(("mlflow-skinny", "cloudpickle")) + runtime_requirements() + [f"artifacts/{wheel.name}"]


def log_model(run_id: str, model_path: str | Path) -> str:
    """Log the pickled synthesizer at ``model_path`` as the run's pyfunc model ``model``; return its URI
    (``models:/<model_id>``), also set as the run tag ``dpsyn.model_uri``.

    The files land under the run's experiment (``.../models/<model_id>/artifacts/``): ``MLmodel``, the model's code
    (``synthesizer_model.py``, tasks/synthesizer_model.py), ``artifacts/model.pkl`` (the synthesizer),
    ``artifacts/dpsyn-…whl`` (the library, tasks/model_wheel.py) and the environment files. The signature's output
    schema is the table's columns and types, read off one synthetic row (post-processing of the DP model); no input
    example: nothing but the fitted model and public facts is written.
    """
    import pickle

    import mlflow
    from mlflow.models import Model

    from tasks.model_wheel import build_wheel
    from tasks.pyfunc_model import (
        ARTIFACT_KEY,
        DIGEST_KEY,
        DIGESTS_TAG,
        MODEL_CODE,
        WHEEL_KEY,
        artifact_digests,
        file_sha256,
        signature,
    )

    c = client()
    run = c.get_run(run_id)
    with open(model_path, "rb") as f:  # this run's own pickle, written by its fit stage
        synth = pickle.load(f)
    sample = synth.sample(1, random_state=0)  # for the output schema's names and types only
    # Created here so that it belongs to the run's experiment: Model.log would put it in the
    # process's active experiment (the Default one, with artifacts under ./mlruns).
    logged = c.create_logged_model(run.info.experiment_id, name=MODEL_ARTIFACT, source_run_id=run_id,
                                   tags={"dpsyn.kind": "synthesizer"})
    with tempfile.TemporaryDirectory(prefix="dpsyn-wheel-") as wheel_dir, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "no input example": on purpose, never real rows
        wheel = build_wheel(wheel_dir)
        # mlflow.pyfunc.log_model with the run made explicit: pyfunc.log_model takes the run only
        # from the (thread-local) active run, which this adapter never sets.
        info = Model.log(
            None, name=MODEL_ARTIFACT, flavor=mlflow.pyfunc, run_id=run_id, model_id=logged.model_id,
            python_model=str(MODEL_CODE), artifacts={ARTIFACT_KEY: str(model_path), WHEEL_KEY: str(wheel)},
            pip_requirements=_pip_requirements(wheel), signature=signature(sample),
            model_config={DIGEST_KEY: file_sha256(model_path)},
        )
    from mlflow.artifacts import download_artifacts

    with tempfile.TemporaryDirectory() as tmp:  # the digests of what the store now holds, kept in the tracking DB
        digests = artifact_digests(download_artifacts(artifact_uri=info.model_uri, dst_path=tmp))
    c.set_tag(run_id, DIGESTS_TAG, json.dumps(digests, sort_keys=True))
    c.set_tag(run_id, "dpsyn.model_uri", info.model_uri)
    return info.model_uri


def _ensure_registered_model(c, name: str) -> None:
    from mlflow.exceptions import MlflowException

    try:
        c.create_registered_model(name, description="dpsyn synthesizers fitted on one dataset (schema)")
    except MlflowException as e:
        if e.error_code not in ("RESOURCE_ALREADY_EXISTS", "ALREADY_EXISTS"):
            raise


def register_model(run_id: str, name: str, tags: dict[str, Any] | None = None, *, model_uri: str | None = None,
                   cumulative_epsilon: float | None = None) -> str:
    """A new version of ``name`` from the run's pyfunc model (``model_uri``, default the run tag
    ``dpsyn.model_uri``), tagged with ``tags`` and ``cumulative_epsilon``; return the version.

    Not idempotent (each call makes a version): never retry it blindly. Boolean tags are written
    ``true``/``false``. ``cumulative_epsilon`` is the population's lifetime spend (budget ledger). The
    alias is not touched here: see set_champion.
    """
    from mlflow.exceptions import MlflowException

    c = client()
    if model_uri is None:
        model_uri = c.get_run(run_id).data.tags.get("dpsyn.model_uri")
        if model_uri is None:
            raise MlflowException(f"run {run_id} has no logged pyfunc model (tag dpsyn.model_uri); log_model first")
    _ensure_registered_model(c, name)
    tags = {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in (tags or {}).items()}
    if cumulative_epsilon is not None:  # the population's lifetime spend from the budget ledger
        tags["cumulative_epsilon"] = f"{cumulative_epsilon:.6f}"
    from tasks.pyfunc_model import DIGESTS_TAG

    digests = c.get_run(run_id).data.tags.get(DIGESTS_TAG)
    if digests is not None:  # the version carries the digests its loader checks (tasks.pyfunc_model.load_verified)
        tags[DIGESTS_TAG] = digests
    model_id = model_uri.removeprefix("models:/") if model_uri.startswith("models:/m-") else None
    mv = c.create_model_version(name, model_uri, run_id=run_id, tags=tags, model_id=model_id)
    version = str(mv.version)
    set_tags(run_id, {"dpsyn.registered_model": name, "dpsyn.registered_version": version})
    return version


def champion_info(name: str) -> dict[str, Any] | None:
    """The ``champion`` version of ``name`` with its tags and its run's tags (None: no such model or alias)."""
    from mlflow.exceptions import MlflowException

    c = client()
    try:
        mv = c.get_model_version_by_alias(name, CHAMPION)
    except MlflowException:
        return None
    run_tags = c.get_run(mv.run_id).data.tags if mv.run_id else {}
    return {"name": name, "version": str(mv.version), "tags": dict(mv.tags or {}), "run_id": mv.run_id,
            "run_tags": dict(run_tags)}


def set_champion(name: str, version: str) -> None:
    """Point the alias ``champion`` of ``name`` at ``version`` (idempotent)."""
    client().set_registered_model_alias(name, CHAMPION, str(version))


def _versions(c, name: str) -> list:
    if "'" in name:
        raise ValueError("a registered model name with a quote cannot be searched")
    out, token = [], None
    while True:
        page = c.search_model_versions(f"name = '{name}'", max_results=1000, page_token=token)
        out.extend(page)
        token = page.token
        if not token:
            return out


def _float(s: str | None) -> float | None:
    try:
        return None if s is None else float(s)
    except ValueError:
        return None


def list_registered_models(name: str | None = None, prefix: str = MODEL_NAME_PREFIX) -> list[dict[str, Any]]:
    """The registered models ``name`` (or every one whose name starts with ``prefix``) and their versions,
    newest first, as plain dicts (values are tags and ids, never data). Raises MlflowException if
    ``name`` is not registered or the store cannot be read."""
    c = client()
    if name is not None:
        models = [c.get_registered_model(name)]
    else:
        models, token = [], None
        while True:
            page = c.search_registered_models(max_results=1000, page_token=token)
            models.extend(m for m in page if m.name.startswith(prefix))
            token = page.token
            if not token:
                break
    out = []
    for rm in sorted(models, key=lambda m: m.name):
        by_version: dict[str, list[str]] = {}
        for alias, v in (rm.aliases or {}).items():
            by_version.setdefault(str(v), []).append(alias)
        versions = []
        for mv in sorted(_versions(c, rm.name), key=lambda v: -int(v.version)):
            t = mv.tags or {}
            gate = t.get("gate_passed")
            versions.append({
                "version": str(mv.version),
                "aliases": sorted(by_version.get(str(mv.version), [])),
                "epsilon": _float(t.get("epsilon")),
                "delta": _float(t.get("delta")),
                "cumulative_epsilon": _float(t.get("cumulative_epsilon")),
                "gate_passed": None if gate is None else gate.lower() == "true",
                "training_batch": t.get("training_batch"),
                "run_id": mv.run_id,
                "created": datetime.fromtimestamp(mv.creation_timestamp / 1000, UTC).isoformat(timespec="seconds"),
            })
        out.append({"name": rm.name, "aliases": {a: str(v) for a, v in sorted((rm.aliases or {}).items())},
                    "versions": versions})
    return out


# -- the training batch as an MLflow dataset input: metadata only -------------------------------------------------
_COLSPEC = {"numeric": "double", "categorical": "string", "datetime": "datetime", "text": "string",
            "identifier": "string"}


def training_dataset(batch: dict, schema):
    """The training batch as an MLflow ``MetaDataset``: no rows, no profile, only public values.

    name: the schema's name; source: a ``code`` source whose tags name the batch (its random id, the input's
    file name, the window) and the schema's fingerprint; schema: the columns the release carries and their types
    from the schema (never inferred from data); digest: SHA-256 of the batch id and the schema fingerprint
    (MLflow would otherwise hash the config itself; a pandas dataset would hash the rows and profile their
    count).
    """
    import hashlib

    from mlflow.data.code_dataset_source import CodeDatasetSource
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.types import ColSpec, DataType, Schema

    fp = schema.fingerprint()
    tags = {"dpsyn.training_batch": batch["batch_id"], "dpsyn.source": batch.get("source"),
            "dpsyn.window_start": batch.get("window_start"), "dpsyn.window_end": batch.get("window_end"),
            "dpsyn.schema_fingerprint": fp}
    tags = {k: str(v) for k, v in tags.items() if v is not None}
    keep = set(schema.output_columns())
    cols = []
    for c in schema.columns:
        if c.name in keep:
            kind = str(getattr(c.kind, "value", c.kind))
            dtype = "long" if kind == "numeric" and c.integer else _COLSPEC.get(kind, "string")
            cols.append(ColSpec(type=DataType[dtype], name=c.name))
    digest = hashlib.sha256(f"{batch['batch_id']}:{fp}".encode()).hexdigest()[:16]
    return MetaDataset(CodeDatasetSource(tags=tags), name=schema.name, digest=digest, schema=Schema(cols))


def log_training_input(run_id: str, batch: dict, schema) -> None:
    """Log :func:`training_dataset` as the run's input (context ``training``); MLflow dedups a repeat."""
    from mlflow.entities import DatasetInput, InputTag

    ds = training_dataset(batch, schema)
    client().log_inputs(run_id, datasets=[DatasetInput(dataset=ds._to_mlflow_entity(),
                                                       tags=[InputTag("mlflow.data.context", "training")])])


# -- links out of the run: Prefect artifacts and `dpsyn audit trace` ----------------------------------------------
def _ui_base(uri: str) -> str | None:
    """The MLflow UI's address for an http(s) tracking URI, without credentials; None for any other store."""
    from urllib.parse import urlsplit, urlunsplit

    u = urlsplit(uri)
    if u.scheme not in ("http", "https") or not u.hostname:
        return None
    host = u.hostname + (f":{u.port}" if u.port else "")
    return urlunsplit((u.scheme, host, u.path.rstrip("/"), "", ""))


def run_links(run_id: str, registered: dict | None = None) -> list[dict[str, str]]:
    """Links to the MLflow run and its registered version: the MLflow UI's pages when the tracking URI is
    http(s) (credentials removed), else the ``runs:/`` and ``models:/`` URIs (a SQLite or file store has no UI).
    Values are ids, names and the server's address: public configuration."""
    uri = mlflow_tracking_uri()
    base = _ui_base(uri)
    run = client().get_run(run_id)
    name = run.data.tags.get("mlflow.runName", run_id)
    exp = run.info.experiment_id
    no_ui = ("The tracking store is not an MLflow server, so there is no page to open: the link is the "
             "{what} URI (`mlflow ui --backend-store-uri <MLFLOW_TRACKING_URI>` shows it).")
    links = [{"key": "mlflow-run", "link_text": f"MLflow run {name}",
              "link": f"{base}/#/experiments/{exp}/runs/{run_id}" if base else f"runs:/{run_id}",
              "description": f"The MLflow run of this flow run (experiment {exp}, run {run_id})."
                             + ("" if base else " " + no_ui.format(what="run's"))}]
    if registered and registered.get("version"):
        m, v = registered["name"], str(registered["version"])
        links.append({"key": "mlflow-model", "link_text": f"registered model {m} v{v}",
                      "link": f"{base}/#/models/{m}/versions/{v}" if base else f"models:/{m}/{v}",
                      "description": f"The version of {m} this run registered."
                                     + ("" if base else " " + no_ui.format(what="model version's"))})
    return links


def orchestration(run_id: str) -> dict[str, str | None] | None:
    """What an MLflow run says about the orchestrator run that made it: ``run_id`` (the Prefect flow run's id
    when ``orchestrator`` is ``prefect``), ``run_name``, ``orchestrator``. None when the run is not in this
    tracking store (a SQLite store that does not exist is not created)."""
    from mlflow.exceptions import MlflowException

    uri = mlflow_tracking_uri()
    if uri.startswith("sqlite:///") and not Path(uri.removeprefix("sqlite:///")).exists():
        return None
    try:
        tags = client().get_run(run_id).data.tags
    except MlflowException:
        return None
    rid = tags.get("dpsyn.run_id")
    orch = tags.get("dpsyn.orchestrator")
    if orch is None and rid and _is_uuid(rid) and "-" in rid:  # runs logged before the tag: Prefect's ids are UUIDs
        orch = "prefect"
    return {"run_id": rid, "run_name": tags.get("mlflow.runName"), "orchestrator": orch}


def _is_uuid(s: str) -> bool:
    import uuid

    try:
        uuid.UUID(s)
    except ValueError:
        return False
    return True


def end_run(run_id: str, status: str = "FINISHED") -> None:
    client().set_terminated(run_id, status=status)


def mirror_lineage(
    run_id: str,
    release,
    *,
    ledger_url: str | None = None,
    set_tag: Callable[[str, str, str], None] | None = None,
) -> dict[str, str]:
    """Set the lineage of a release as tags on its MLflow run; return the tags.

    ``release`` is a :class:`Release`, its dict, or a watermark code to look up
    in the ledger. ``set_tag`` is an ``MlflowClient().set_tag``-compatible
    callable; by default :func:`set_tags` of this adapter.
    """
    from dpsyn.errors import InputError
    from dpsyn.lineage import Ledger, Release, lineage_tags

    if isinstance(release, str):
        lin = Ledger(ledger_url).get(release)
        if lin is None:
            raise InputError(f"watermark code {release} is not in the lineage ledger")
        release = lin.release
    rel = Release.model_validate(release)
    tags = lineage_tags(rel, ledger=ledger_url)
    if set_tag is None:
        set_tags(run_id, tags)
    else:
        for k, v in tags.items():
            set_tag(run_id, k, v)
    return tags


# -- the pipeline's tracker on MLflow, and the tasks -----------------------------------------------------------------
NOCACHE = dict(persist_result=False, retries=2, retry_delay_seconds=2)


def run_params(config) -> dict:
    """A run config as MLflow params: everything but the noise seed (a seed of the DP noise would let anyone
    subtract it; issue 19, finding 8); a ledger URL's password as ``***``."""
    from dpsyn.sqlite import hide_password

    params = config.model_dump(mode="json", exclude={"privacy": {"noise_seed"}})
    if isinstance(params.get("budget"), dict) and "ledger_url" in params["budget"]:
        params["budget"]["ledger_url"] = hide_password(params["budget"]["ledger_url"])
    for key in ("lineage_url", "ledger_url"):
        if key in params:
            params[key] = hide_password(params[key])
    return params


def log_privacy(run_id: str, privacy: dict | None) -> None:
    """ε spent, δ, accountant, and every mechanism of the run (logged even when the run fails)."""
    if privacy is None:
        return
    metrics = {
        "epsilon_spent": privacy["epsilon_spent"],
        "target_epsilon": privacy["target_epsilon"],
    }
    # settings, not measurements: δ and each mechanism's sample rate and steps are params (fixed for the run)
    params = {"training.delta": privacy["delta"]}
    for label, eps in privacy.get("epsilon_alone_by_mechanism", {}).items():
        metrics[f"epsilon_alone.{label}"] = eps
    for m in privacy.get("mechanisms", []):
        metrics[f"noise_multiplier.{m['label']}"] = m["noise_multiplier"]
        params[f"training.sample_rate.{m['label']}"] = m["sample_rate"]
        params[f"training.steps.{m['label']}"] = m["steps"]
    log_metrics(run_id, metrics)
    log_params(run_id, params)
    set_tags(run_id, {"dpsyn.accountant": privacy["accountant"], "dpsyn.epsilon_spent": f"{privacy['epsilon_spent']:.6f}"})
    log_dict(run_id, privacy, "privacy/privacy.json")
    if privacy.get("epsilon_curve"):
        log_epsilon_curve(run_id, privacy)


def log_epsilon_curve(run_id: str, privacy: dict) -> None:
    """The run's ε(δ) curve as a PNG, with the target marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d, e = zip(*privacy["epsilon_curve"], strict=True)
    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=120)
    ax.semilogx(d, e, marker="o")
    ax.axvline(privacy["delta"], color="grey", ls="--", lw=1, label=f"δ = {privacy['delta']:g}")
    ax.axhline(privacy["target_epsilon"], color="red", ls=":", lw=1, label=f"target ε = {privacy['target_epsilon']:g}")
    ax.set_xlabel("δ")
    ax.set_ylabel("ε spent")
    ax.set_title(f"ε(δ) of the run ({privacy['accountant']})")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "epsilon_delta.png"
        fig.savefig(p)
        plt.close(fig)
        client().log_artifact(run_id, str(p), artifact_path="privacy")


def log_results(run_id: str, *, fit_summary: dict, batch: dict, validation: dict, watermark: dict,
                report_html: str | None = None, ge_docs: str | None = None,
                extra_metrics: dict[str, float] | None = None) -> None:
    """Settings, DP statistics and reports of a run that reached the gate. ``batch`` is the training batch's public
    record (random id, file name, noisy row count); the scrub and mask reports hold exact counts and are not
    logged (they stay with the data owner in $DPSYN_HOME/operator/<run id>/)."""
    log_params(run_id, {"synth": fit_summary.get("params", {}), "training": fit_summary.get("training", {})})
    from dpsyn.validation import ValidationReport

    rep = ValidationReport.model_validate(validation)
    metrics = rep.metrics()
    metrics["validation_noise_std"] = rep.noise_std
    metrics["rows_real_estimate"] = batch["rows_estimate"]
    metrics["rows_synthetic"] = rep.n_synthetic
    metrics.update(extra_metrics or {})
    log_metrics(run_id, metrics)
    set_tags(run_id, {
        "dpsyn.training_batch": batch["batch_id"],
        "dpsyn.watermark_code": watermark["code"],
        "dpsyn.watermark_key_id": watermark["key_id"],
        "dpsyn.gate_passed": rep.is_valid(),
    })
    log_dict(run_id, validation, "reports/validation_report.json")
    if report_html and Path(report_html).exists():
        log_file(run_id, report_html, artifact_path="reports")
    if ge_docs and Path(ge_docs).is_dir():  # Great Expectations' validation result and Data Docs (synthetic table)
        client().log_artifacts(run_id, str(ge_docs), artifact_path="reports/great_expectations")
    log_dict(run_id, batch, "reports/training_batch.json")
    table_schema = client().get_run(run_id).data.params.get("table_schema")
    if table_schema:  # the config's schema (a logged param): the batch as a metadata-only dataset input
        from dpsyn.schema import load_schema

        log_training_input(run_id, batch, load_schema(table_schema))


class MlflowTracker:
    """The pipeline's :class:`dpsyn.pipeline.Tracker` on MLflow (this module is the one MLflow adapter)."""

    def start(self, config, tags: dict[str, str]) -> str:
        return start_run(config.experiment, run_params(config), tags)

    def log_privacy(self, run_id: str, privacy: dict | None) -> None:
        log_privacy(run_id, privacy)

    def log_results(self, run_id: str, **kw) -> None:
        log_results(run_id, **kw)

    def log_model(self, run_id: str, model_path: str) -> str | None:
        return log_model(run_id, model_path)

    def register(self, run_id: str, name: str, tags: dict[str, Any], *, model_uri: str | None,
                 cumulative_epsilon: float | None) -> str | None:
        return register_model(run_id, name, tags, model_uri=model_uri, cumulative_epsilon=cumulative_epsilon)

    def set_champion(self, name: str, version: str) -> None:
        set_champion(name, version)

    def mirror_lineage(self, run_id: str, code: str, lineage_url: str | None) -> None:
        mirror_lineage(run_id, code, ledger_url=lineage_url)

    def end(self, run_id: str, status: str) -> None:
        end_run(run_id, status)


TRACKER = MlflowTracker()


@task(name="mlflow-start-run", **NOCACHE)
def start_run_task(config, ctx):
    """Open the run's MLflow run (its config as params, the guarantee as tags); the context notes its id."""
    from dpsyn.pipeline.run import start_tracking

    ctx = start_tracking(config, ctx, TRACKER)
    set_tags(ctx.tracker_run_id, {"dpsyn.orchestrator": "prefect"})  # dpsyn.run_id is the flow run's id
    return ctx


@task(name="mlflow-log-privacy", **NOCACHE)
def log_privacy_task(ctx, privacy: dict | None):
    """ε spent, δ, accountant and every mechanism of the run."""
    TRACKER.log_privacy(ctx.tracker_run_id, privacy)
    return ctx.update(privacy_logged=True)


@task(name="mlflow-log-results", **NOCACHE)
def log_results_task(ctx, *, fit_summary: dict, manifest: dict, validation: dict) -> None:
    """Settings, the gate's DP statistics and its reports."""
    from dpsyn.pipeline import WorkDir

    TRACKER.log_results(ctx.tracker_run_id, fit_summary=fit_summary, batch=manifest["training_batch"],
                        validation=validation, watermark=manifest["watermark"],
                        report_html=str(ctx.work / WorkDir.REPORT_HTML), ge_docs=str(ctx.work / WorkDir.GE_DOCS),
                        extra_metrics={"cumulative_epsilon": manifest["cumulative_epsilon"]})


@task(name="mlflow-log-model", persist_result=False, retries=0)
def log_model_task(ctx) -> str:
    """The fitted synthesizer as the run's pyfunc model; its URI (no retry: it would log a second model)."""
    from dpsyn.pipeline import WorkDir

    return TRACKER.log_model(ctx.tracker_run_id, str(ctx.work / WorkDir.MODEL))


@task(name="mlflow-register-model", persist_result=False, retries=0)
def register_model_task(config, ctx, manifest: dict, model_uri: str | None) -> dict:
    """One new registry version per run that reached the gate (no retry: a retry could register twice)."""
    from dpsyn.pipeline.manifest import model_name, registry_tags
    from dpsyn.schema import load_schema

    name = model_name(config, load_schema(config.table_schema).name)
    version = TRACKER.register(ctx.tracker_run_id, name, registry_tags(manifest), model_uri=model_uri,
                               cumulative_epsilon=manifest["cumulative_epsilon"])
    return {"name": name, "version": version}


@task(name="mlflow-set-champion", **NOCACHE)
def set_champion_task(registered: dict) -> None:
    """Move the alias ``champion`` to the run's version (idempotent, so it may retry)."""
    TRACKER.set_champion(registered["name"], registered["version"])


@task(name="mlflow-mirror-lineage", **NOCACHE)
def mirror_lineage_task(ctx, code: str, lineage_url: str | None) -> None:
    """Mirror the ledger's record of the release into MLflow tags on the run."""
    TRACKER.mirror_lineage(ctx.tracker_run_id, code, lineage_url)


@task(name="mlflow-end-run", **NOCACHE)
def end_run_task(ctx, status: str) -> None:
    TRACKER.end(ctx.tracker_run_id, status)


# -- related tables (flows/dataset.py) --------------------------------------------------------------------------
def start_dataset_run(config, run_id: str) -> str:
    """The MLflow run of one dataset run: its config as params; the dpsyn run id (the flow run's) as a tag."""
    params = config.model_dump(mode="json", exclude={"privacy": {"noise_seed"}})  # a noise seed is never logged
    return start_run(config.experiment, params,
                     tags={"mlflow.runName": config.run_name(), "dpsyn.flow": "synthesize-dataset", "dpsyn.run_id": run_id,
                           "dpsyn.orchestrator": "prefect"})


def log_dataset_result(mlflow_run_id: str, *, manifest: dict | None, reports: Path | None) -> None:
    """What a dataset run released: ε spent and every mechanism, the gate's verdict, each table's code, the
    manifest and the gate's report (DP outputs and ids only: dpsyn/privacy/inventory.yaml)."""
    if manifest is not None:
        p = manifest["privacy"]
        log_metrics(mlflow_run_id, {"epsilon_spent": p["epsilon_spent"], "delta": p["delta"],
                                    "target_epsilon": p["target_epsilon"],
                                    "gate_passed": float(manifest["gate"]["verdict"] == "passed"),
                                    **{f"rows_synthetic.{t}": v["rows"] for t, v in manifest["tables"].items()}})
        set_tags(mlflow_run_id, {"dpsyn.neighbouring": p["neighbouring"], "dpsyn.accountant": p["accountant"],
                                 "dpsyn.epsilon_spent": f"{p['epsilon_spent']:.6g}",
                                 "dpsyn.gate_passed": manifest["gate"]["verdict"] == "passed",
                                 "dpsyn.gate_verdict": manifest["gate"]["verdict"],
                                 "dpsyn.training_batch": manifest["watermark"]["training_batch"],
                                 "dpsyn.watermark_key_id": manifest["watermark"]["key_id"],
                                 **{f"dpsyn.watermark_code.{t}": v["watermark_code"]
                                    for t, v in manifest["tables"].items()}})
        log_params(mlflow_run_id, {"budget_shares": manifest["budget_shares"]})
        log_dict(mlflow_run_id, manifest, "reports/manifest.json")
    for f in ("validation_report.json", "validation_report.html"):
        if reports is not None and (Path(reports) / f).exists():
            log_file(mlflow_run_id, Path(reports) / f, "reports")
