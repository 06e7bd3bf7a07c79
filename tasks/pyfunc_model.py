"""A fitted dpsyn synthesizer as an MLflow pyfunc model.

It lives outside ``dpsyn`` because ``dpsyn`` never imports MLflow. The
logged model holds the synthesizer's pickle (``artifacts/model.pkl``, a
fitted model that holds no training row) and this small wrapper; loading it
needs ``dpsyn`` installed, not imported (unpickling imports it)::

    import mlflow

    model = mlflow.pyfunc.load_model("models:/dpsyn-adult@champion")
    rows = model.predict(500)  # a DataFrame of 500 synthetic rows
    rows = model.predict(500, params={"random_state": 7})  # reproducible

``predict`` takes the number of rows: an int, a one-element list, array or
Series, ``{"n": 500}``, or a DataFrame with one row in a column ``n`` (or a
single cell). Sampling is post-processing: it costs no privacy budget.

This module imports neither Prefect nor dpsyn at import time, so loading a
model stays light.

**Verified before unpickling.** ``log_model`` records the SHA-256 of every file
of the logged model (``MLmodel``, the wrapper ``python_model.pkl``, the
synthesizer ``artifacts/model.pkl``, the environment files) as the run and
registry-version tag ``dpsyn.artifact_sha256``, in the tracking database, not
the artifact store. :func:`load_verified` downloads the model, checks every file
against that tag and only then loads it; a replaced pickle is refused before it
can run code. ``load_context`` also checks ``model.pkl`` against the digest in
the model's config before unpickling it (a plain ``mlflow.pyfunc.load_model``
still unpickles the wrapper first: use :func:`load_verified` where the artifact
store is not trusted)::

    from tasks.pyfunc_model import load_verified
    model = load_verified("models:/dpsyn-adult@champion")
"""

from __future__ import annotations

import json
import numbers
import pickle
from pathlib import Path
from typing import Any

import mlflow.pyfunc

__all__ = ["ARTIFACT_KEY", "DIGEST_KEY", "DIGESTS_TAG", "SynthesizerModel", "artifact_digests", "file_sha256",
           "load_verified", "requested_rows", "signature"]

ARTIFACT_KEY = "synthesizer"
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


def requested_rows(model_input: Any) -> int:
    """The row count a ``predict`` input asks for (see the module docstring); ValueError if unclear."""
    import numpy as np
    import pandas as pd

    value = model_input
    if isinstance(value, pd.DataFrame):
        if "n" in value.columns:
            value = value["n"]
        elif value.shape == (1, 1):
            value = value.iloc[0, 0]
        else:
            raise ValueError("predict expects a DataFrame with a column 'n' (one row) or a single cell")
    if isinstance(value, dict):
        if "n" not in value:
            raise ValueError("predict expects {'n': number of rows}")
        value = value["n"]
    if isinstance(value, (pd.Series, np.ndarray, list, tuple)):
        flat = np.asarray(value, dtype=object).ravel()
        if flat.size != 1:
            raise ValueError(f"predict expects one row count, got {flat.size} values")
        value = flat[0]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"the row count must be a whole number, got {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        n = int(value)
    elif float(value).is_integer():  # 50.0, as JSON clients may send it
        n = int(value)
    else:
        raise ValueError("the row count must be a whole number")
    if n < 0:
        raise ValueError("the row count must be ≥ 0")
    return n


class SynthesizerModel(mlflow.pyfunc.PythonModel):
    """Pyfunc wrapper: ``predict(n)`` → ``synthesizer.sample(n, random_state=params['random_state'])``."""

    # No type hints on purpose: ``requested_rows`` checks the row count itself and the signature has no input schema.
    # MLflow otherwise warns at class creation ("Add type hints to the `predict` method"), under a filter of its own
    # that overrides the caller's, on every run that logs a model. The opt-out its own PythonModel subclasses use.
    _skip_type_hint_validation = True

    def load_context(self, context) -> None:
        path = context.artifacts[ARTIFACT_KEY]
        expected = (getattr(context, "model_config", None) or {}).get(DIGEST_KEY)
        if expected is None or file_sha256(path) != expected:
            raise ValueError("the synthesizer file (artifacts/model.pkl) does not match the SHA-256 recorded when it "
                             "was logged: refusing to unpickle it (replaced or damaged)")
        with open(path, "rb") as f:
            self.synthesizer = pickle.load(f)  # imports the dpsyn synthesizer class it was saved from

    def predict(self, context, model_input, params: dict[str, Any] | None = None):
        n = requested_rows(model_input)
        random_state = (params or {}).get("random_state")
        return self.synthesizer.sample(n, random_state=None if random_state is None else int(random_state))


def signature():
    """Parameters only: ``random_state`` (an int, default None). No input schema, so the row count
    may be given in any of the forms ``requested_rows`` accepts; no output schema (it is the table's)."""
    from mlflow.models import ModelSignature
    from mlflow.types import ParamSchema, ParamSpec

    return ModelSignature(inputs=None, outputs=None, params=ParamSchema([ParamSpec("random_state", "long", None)]))
