"""benchmarks/relational.py's person-level task (issue 21): one row per patient, labelled by any of their
encounters, scored with the encounter count as a feature."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import relational  # noqa: E402

from dpsyn.schema import load_schema  # noqa: E402


def test_a_patient_is_positive_when_any_encounter_is_and_keeps_its_first_encounter():
    schema = load_schema("diabetes130")
    df = pd.DataFrame({relational.PERSON: ["a", "b", "a", "c", "a"],
                       "readmitted": ["NO", "<30", "<30", ">30", "NO"],
                       "age": ["[10-20)", "[20-30)", "[30-40)", "[40-50)", "[50-60)"]})
    p = relational.person_frame(df, schema)
    assert list(p["age"]) == ["[10-20)", "[20-30)", "[40-50)"]  # first encounters, in order of appearance
    assert list(p["readmitted"]) == ["<30", "<30", "NO"]  # a's second encounter makes a positive; c's >30 not
    assert list(p[relational.ENCOUNTERS]) == [3.0, 1.0, 1.0]
    assert relational.PERSON not in p.columns


def test_without_patient_ids_every_row_is_a_patient_with_one_encounter():
    schema = load_schema("diabetes130")
    df = pd.DataFrame({"readmitted": ["NO", "<30", ">30"], "age": ["[10-20)"] * 3})
    p = relational.person_frame(df, schema)
    assert list(p["readmitted"]) == ["NO", "<30", "NO"] and np.all(p[relational.ENCOUNTERS] == 1.0)


def test_the_task_schema_adds_the_count_as_a_numeric_feature():
    schema = load_schema("diabetes130")
    task = relational.person_schema(schema)
    assert task.column(relational.ENCOUNTERS).kind.value == "numeric"
    assert [c.name for c in task.columns][:-1] == [c.name for c in schema.columns]
