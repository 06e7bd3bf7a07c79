"""One contract for every registered synthesizer (cf. scikit-learn's parametrize_with_checks)."""

import pickle
import struct

import numpy as np
import pandas as pd
import pytest

from dpsyn.errors import NotFittedError, UnknownComponentError
from dpsyn.schema import ColumnKind
from dpsyn.synth import create, list_synthesizers

EPSILON = 1.0
FAST = {
    "dpgen": {"epochs": 2, "batch_size": 128, "hidden": 16},
    "dpdsyn": {"epochs": 2, "batch_size": 128, "hidden": 16, "task_epochs": 2},
    "pgm": {"iters": 200, "task": "on", "task_epochs": 2},
}
CANARY_FNLWGT = 987_653  # a value planted in the training rows; must never be stored


@pytest.fixture(scope="module")
def train(adult_sample):
    df = adult_sample.iloc[:1200].copy().reset_index(drop=True)
    df.loc[7, "fnlwgt"] = CANARY_FNLWGT
    return df


@pytest.fixture(scope="module", params=list_synthesizers())
def fitted(request, train, adult_schema):
    name = request.param
    synth = create(name, FAST.get(name, {}), privacy={"epsilon": EPSILON, "delta": 1e-5, "secure_rng": False,
                                                        "noise_seed": 0})
    returned = synth.fit(train, adult_schema)
    return name, synth, returned


def test_fit_returns_self(fitted):
    _, synth, returned = fitted
    assert returned is synth


def test_sample_conforms_to_schema(fitted, adult_schema):
    _, synth, _ = fitted
    out = synth.sample(500, random_state=1)
    assert list(out.columns) == adult_schema.output_columns()
    assert len(out) == 500
    for col in adult_schema.synthesizable_columns():
        s = out[col.name]
        if col.kind == ColumnKind.categorical:
            vals = set(s.dropna())
            assert vals <= set(col.domain), col.name
            if not col.nullable:
                assert s.notna().all(), col.name
        else:
            lo, hi = col.numeric_bounds()
            x = pd.to_numeric(s).dropna().to_numpy(dtype=float)
            assert ((x >= lo) & (x <= hi)).all(), col.name
            if col.integer:
                assert np.all(x == np.round(x)), col.name


def test_seed_reproduces(fitted):
    _, synth, _ = fitted
    a = synth.sample(300, random_state=42)
    b = synth.sample(300, random_state=42)
    c = synth.sample(300, random_state=43)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_spend_within_budget(fitted):
    _, synth, _ = fitted
    assert 0 < synth.privacy_["epsilon_spent"] <= EPSILON
    assert synth.privacy_["delta"] == 1e-5
    assert all(m["noise_multiplier"] > 0 for m in synth.privacy_["mechanisms"])


def test_pickle_holds_no_training_row(fitted, train):
    _, synth, _ = fitted
    blob = pickle.dumps(synth)
    assert str(CANARY_FNLWGT).encode() not in blob
    assert struct.pack("<d", float(CANARY_FNLWGT)) not in blob
    assert struct.pack("<q", CANARY_FNLWGT) not in blob
    # and no frame of training rows hides in its attributes
    assert not any(isinstance(v, (pd.DataFrame, np.ndarray)) and len(v) == len(train) for v in vars(synth).values())


@pytest.mark.parametrize("name", list_synthesizers())
def test_sample_before_fit_raises(name):
    with pytest.raises(NotFittedError):
        create(name).sample(3)


def test_unknown_synthesizer_lists_names():
    with pytest.raises(UnknownComponentError, match="dpgen"):
        create("no-such-synth")
