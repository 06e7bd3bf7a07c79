"""A fitted dpsyn synthesizer as an MLflow pyfunc model: what is logged, and a loader that checks it first.

It lives outside ``dpsyn`` because ``dpsyn`` never imports MLflow. A logged model holds (``tasks.tracking.log_model``):

* ``synthesizer_model.py``: the model's code, :mod:`tasks.synthesizer_model` (MLflow's models-from-code), which
  imports nothing of this repository;
* ``artifacts/model.pkl``: the synthesizer (a fitted model that holds no training row);
* ``artifacts/dpsyn-<version>+<digest>-py3-none-any.whl``: the dpsyn library (:mod:`tasks.model_wheel`), installed
  by the model's ``requirements.txt`` with the pinned runtime it needs (no Prefect, Presidio or ledgers);
* a signature: the parameters ``random_state`` and ``within_bin`` and the output schema of the table (its column
  names and types);

so ``mlflow models serve`` and ``mlflow.pyfunc.load_model`` work in an environment built from the model's own
requirements::

    import mlflow

    model = mlflow.pyfunc.load_model("models:/dpsyn-adult@champion")
    rows = model.predict(500)  # a DataFrame of 500 synthetic rows
    rows = model.predict(500, params={"random_state": 7})  # reproducible
    rows = model.predict(500, params={"within_bin": "uniform"})  # numbers uniform inside their bins

Sampling is post-processing: it costs no privacy budget.

**Verified before loading.** ``log_model`` records the SHA-256 of every file of the logged model (``MLmodel``, the
code, the synthesizer, the wheel, the environment files) as the run and registry-version tag
``dpsyn.artifact_sha256``, in the tracking database, not the artifact store. :func:`load_verified` downloads the
model, checks every file against that tag and only then loads it; a replaced code file or pickle is refused before
it can run. ``load_context`` also checks ``model.pkl`` against the digest in the model's config before unpickling
it (a plain ``mlflow.pyfunc.load_model`` still runs the model's code file first: use :func:`load_verified` where
the artifact store is not trusted)::

    from tasks.pyfunc_model import load_verified
    model = load_verified("models:/dpsyn-adult@champion")
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["ARTIFACT_KEY", "DIGEST_KEY", "DIGESTS_TAG", "MODEL_CODE", "WHEEL_KEY", "artifact_digests", "file_sha256",
           "load_verified", "signature"]

#: the model's code (models-from-code): a file that imports nothing of this repository
MODEL_CODE = Path(__file__).with_name("synthesizer_model.py")
ARTIFACT_KEY = "synthesizer"  # the same names as in synthesizer_model.py, which cannot import them from here
WHEEL_KEY = "dpsyn_wheel"
DIGEST_KEY = "dpsyn_model_sha256"  # in the logged model's config: the synthesizer pickle's SHA-256
DIGESTS_TAG = "dpsyn.artifact_sha256"  # run and version tag: {relative path: SHA-256} of the logged model's files


def file_sha256(path: str | Path) -> str:
    from dpsyn.io import file_sha256 as sha256  # at call time: this module stays light to import

    return sha256(path)


#: written by MLflow into a download of a registered version (its name and version, plain YAML): not the model's
_DOWNLOAD_METADATA = {"registered_model_meta"}


def artifact_digests(model_dir: str | Path) -> dict[str, str]:
    """{path relative to the model folder: SHA-256} of every file of a logged model."""
    root = Path(model_dir)
    return {p.relative_to(root).as_posix(): file_sha256(p) for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).as_posix() not in _DOWNLOAD_METADATA}


def load_verified(model_uri: str, *, expected: dict[str, str] | None = None):
    """Load a logged dpsyn model after checking every file against the digests recorded in the tracking store
    (``expected``, default the registry version's or run's ``dpsyn.artifact_sha256`` tag); ``ValueError`` naming
    the first file that differs, is missing or was added, before anything is unpickled."""
    import tempfile

    import mlflow
    from mlflow.artifacts import download_artifacts

    if expected is None:
        expected = _recorded_digests(model_uri)
    with tempfile.TemporaryDirectory(prefix="dpsyn-model-") as tmp:
        local = download_artifacts(artifact_uri=model_uri, dst_path=tmp)
        found = artifact_digests(local)
        for path in sorted(set(expected) | set(found)):
            if path not in found:
                raise ValueError(f"model file {path} is missing from {model_uri}: refusing to load it")
            if path not in expected:
                raise ValueError(f"model file {path} in {model_uri} was not there when it was logged: refusing to "
                                 "load it")
            if found[path] != expected[path]:
                raise ValueError(f"model file {path} of {model_uri} does not match the SHA-256 recorded when it was "
                                 "logged (replaced or damaged): refusing to load it")
        return mlflow.pyfunc.load_model(local)


def _recorded_digests(model_uri: str) -> dict[str, str]:
    from mlflow.tracking import MlflowClient

    c = MlflowClient()
    tags: dict[str, str] = {}
    if model_uri.startswith("models:/") and not model_uri.startswith("models:/m-"):
        name, _, ref = model_uri.removeprefix("models:/").partition("@")
        if ref:
            mv = c.get_model_version_by_alias(name, ref)
        else:
            name, _, version = model_uri.removeprefix("models:/").partition("/")
            mv = c.get_model_version(name, version)
        tags = dict(mv.tags or {})
        if DIGESTS_TAG not in tags and mv.run_id:
            tags = c.get_run(mv.run_id).data.tags
    elif model_uri.startswith("models:/m-"):
        lm = c.get_logged_model(model_uri.removeprefix("models:/"))
        tags = c.get_run(lm.source_run_id).data.tags if lm.source_run_id else {}
    if DIGESTS_TAG not in tags:
        raise ValueError(f"{model_uri} has no recorded artifact digests ({DIGESTS_TAG}): it cannot be verified")
    return json.loads(tags[DIGESTS_TAG])


def signature(sample):
    """Parameters: ``random_state`` (an int, default None), ``within_bin`` (``"shaped"``, the default, or
    ``"uniform"``: where a number lands inside its public bin, as ``Synthesizer.sample``); outputs: the columns and types of ``sample``, a frame of
    synthetic rows (the table's public schema: names and types, no value is recorded). No input schema, so the row
    count may be given in any of the forms :func:`tasks.synthesizer_model.requested_rows` accepts."""
    from mlflow.models import ModelSignature
    from mlflow.types import ParamSchema, ParamSpec
    from mlflow.types.utils import _infer_schema

    return ModelSignature(inputs=None, outputs=_infer_schema(sample.iloc[:0]) if sample is not None else None,
                          params=ParamSchema([ParamSpec("random_state", "long", None),
                                              ParamSpec("within_bin", "string", "shaped")]))
