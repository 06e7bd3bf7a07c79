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
"""

from __future__ import annotations

import numbers
import pickle
from typing import Any

import mlflow.pyfunc

__all__ = ["ARTIFACT_KEY", "SynthesizerModel", "requested_rows", "signature"]

ARTIFACT_KEY = "synthesizer"


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

    def load_context(self, context) -> None:
        with open(context.artifacts[ARTIFACT_KEY], "rb") as f:
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
