"""A run on a table with a declared privacy unit: every person's rows bounded, the guarantee per person, fresh ids."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pandas as pd
import pytest
from loose_gate import LOOSE

from dpsyn.config import SynthesizeConfig
from dpsyn.pipeline.tracker import NullTracker

pytestmark = pytest.mark.slow

SCHEMA = """
name: visits
target: readmitted
population_size: 100000
privacy_unit: {column: patient, max_rows_per_person: 3}
columns:
  - {name: patient, kind: identifier}
  - {name: age, kind: numeric, bounds: [0, 100], integer: true, n_bins: 10}
  - {name: ward, kind: categorical, domain: [A, B, C]}
  - {name: readmitted, kind: categorical, domain: ["no", "yes"]}
"""


class _Recording(NullTracker):
    def __init__(self):
        self.privacy = []

    def log_privacy(self, run_id, privacy):
        self.privacy.append(privacy)


@pytest.fixture(scope="module")
def visits(tmp_path_factory):
    rng = np.random.default_rng(3)
    n_persons = 1500
    per = rng.choice([1, 2, 3, 8], n_persons, p=[0.5, 0.25, 0.15, 0.1])
    person = np.repeat(np.arange(n_persons), per)
    age = rng.integers(18, 95, n_persons)[person]
    ward = rng.choice(["A", "B", "C"], len(person))
    y = np.where(rng.random(len(person)) < np.where(ward == "A", 0.6, 0.2), "yes", "no")
    folder = tmp_path_factory.mktemp("visits")
    data = folder / "visits.csv"
    pd.DataFrame({"patient": [f"MRN-{100000 + p}" for p in person], "age": age, "ward": ward,
                  "readmitted": y}).to_csv(data, index=False)
    schema = folder / "visits.yaml"
    schema.write_text(SCHEMA)
    return data, schema


def test_a_person_level_run_states_the_unit_bounds_rows_and_writes_fresh_ids(visits, tmp_path):
    from dpsyn.pipeline import run

    data, schema = visits
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    out = tmp_path / "out"
    tracker = _Recording()
    result = run(SynthesizeConfig(data=data, table_schema=str(schema), out=out, validation=LOOSE, register_model=False,
                                  experiment="person-unit", budget={"population": "visits"},
                                  privacy={"epsilon": 2.0}), tracker=tracker)
    assert hashlib.sha256(data.read_bytes()).hexdigest() == digest  # the input is never modified
    manifest = json.loads((out / "manifest.json").read_text())
    relation = "add/remove one person (patient) with all their rows (at most 3 per person)"
    assert manifest["guarantee"]["neighbouring"] == relation
    assert relation in manifest["guarantee"]["statement"]
    assert result["epsilon_spent"] <= 2.0
    (privacy,) = tracker.privacy
    assert privacy["neighbouring"] == relation and privacy["rows_per_unit"] == 3
    labels = [m["label"] for m in privacy["mechanisms"]]
    assert "rows_per_person" in labels and "rows" in labels  # the rows-per-person histogram: a release of its own
    syn = pd.read_csv(out / "synthetic.csv")
    real_ids = set(pd.read_csv(data)["patient"])
    assert "patient" in syn.columns and not set(syn["patient"]) & real_ids
    per = syn["patient"].value_counts()
    assert per.max() <= 3 and per.nunique() > 1  # persons with several rows, never more than the bound
