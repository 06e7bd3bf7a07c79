"""The MLflow pyfunc model of a fitted dpsyn synthesizer, logged as code (MLflow's models-from-code).

``tasks.tracking.log_model`` logs *this file* as the model's code, beside the synthesizer's pickle
(``artifacts/model.pkl``, a fitted model that holds no training row) and a wheel of the ``dpsyn`` library that the
model's ``requirements.txt`` installs. The file imports only MLflow, pandas and the standard library, and nothing of
this repository (no ``tasks`` package at load time), so the model loads in any environment built from its own
requirements::

    import mlflow

    model = mlflow.pyfunc.load_model("models:/dpsyn-adult@champion")
    rows = model.predict(500)  # a DataFrame of 500 synthetic rows
    rows = model.predict(500, params={"random_state": 7})  # reproducible

``predict`` takes the number of rows: an int, a one-element list, array or Series, ``{"n": 500}``, or a DataFrame
with one row in a column ``n`` (or a single cell), so ``mlflow models serve`` answers ``{"inputs": [500]}`` and
``{"dataframe_split": {"columns": ["n"], "data": [[500]]}}``. Sampling is post-processing: it costs no privacy
budget. ``load_context`` checks ``model.pkl`` against the SHA-256 in the model's config before unpickling it.
"""

from __future__ import annotations

import numbers
import pickle
from typing import Any

import mlflow.models
import mlflow.pyfunc
import pandas as pd

ARTIFACT_KEY = "synthesizer"
WHEEL_KEY = "dpsyn_wheel"
DIGEST_KEY = "dpsyn_model_sha256"  # in the logged model's config: the synthesizer pickle's SHA-256


def requested_rows(model_input: Any) -> int:
    """The row count a ``predict`` input asks for (see the module docstring); ValueError if unclear."""
    import numpy as np

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
    """Pyfunc wrapper: ``predict(n)`` → ``synthesizer.sample(n, random_state=params['random_state'],
    within_bin=params['within_bin'])`` (``within_bin``: ``"shaped"``, the library's default, or ``"uniform"``).

    ``model_input`` is hinted as a DataFrame, pyfunc's common input (a served model receives one); the other shapes
    of a row count pass through as well (``requested_rows`` checks them). MLflow infers no input schema from that
    hint; the output schema is the table's (``tasks.pyfunc_model.signature``).
    """

    def load_context(self, context) -> None:
        from dpsyn.io import file_sha256  # dpsyn is installed beside the model (its wheel): the one file hasher

        path = context.artifacts[ARTIFACT_KEY]
        expected = (getattr(context, "model_config", None) or {}).get(DIGEST_KEY)
        if expected is None or file_sha256(path) != expected:
            raise ValueError("the synthesizer file (artifacts/model.pkl) does not match the SHA-256 recorded when it "
                             "was logged: refusing to unpickle it (replaced or damaged)")
        with open(path, "rb") as f:
            self.synthesizer = pickle.load(f)  # imports the dpsyn synthesizer class it was saved from

    def predict(self, context, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> pd.DataFrame:
        n = requested_rows(model_input)
        random_state = (params or {}).get("random_state")
        within_bin = (params or {}).get("within_bin") or "shaped"
        if within_bin not in ("shaped", "uniform"):
            raise ValueError("within_bin must be 'shaped' or 'uniform'")
        return self.synthesizer.sample(n, random_state=None if random_state is None else int(random_state),
                                       within_bin=within_bin)


mlflow.models.set_model(SynthesizerModel())
