"""Scrub and mask per table (dpsyn.relational.prepare): keys kept for linking, identifiers and L1 dropped, a person's
own identifiers removed from their child rows' text, k-anonymity refused before any budget is reserved."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dpsyn.errors import ConfigError, SchemaError
from dpsyn.masking import MaskConfig
from dpsyn.relational import load_dataset_schema, parse_dataset_schema, read_dataset, run_dataset
from dpsyn.relational.prepare import prepare_dataset

DATA = Path(__file__).resolve().parents[2] / "data" / "synthea"


@pytest.fixture(scope="module")
def tables():
    ds = load_dataset_schema("synthea")
    t = read_dataset(ds, DATA)
    p0 = t["patients"].iloc[0]
    # a note in the first patient's condition naming them (their surname and SSN), and the same words in another
    # patient's row, where they are not that person's identifiers
    cond = t["conditions"].copy()
    mine = cond.index[cond["PATIENT"] == p0["Id"]][0]
    other = cond.index[cond["PATIENT"] != p0["Id"]][0]
    cond["DESCRIPTION"] = cond["DESCRIPTION"].astype("object")
    cond.loc[mine, "DESCRIPTION"] = f"Follow-up for {p0['LAST']} ssn {p0['SSN']} (finding)"
    cond.loc[other, "DESCRIPTION"] = "Acute bronchitis (disorder)"
    bare = cond.index[cond["PATIENT"] == p0["Id"]][1]
    cond.loc[bare, "DESCRIPTION"] = f"Seen, ref {p0['SSN'].replace('-', '')}"
    t["conditions"] = cond
    med = t["medications"].copy()
    med["DESCRIPTION"] = med["DESCRIPTION"].astype("object")
    med.loc[med.index[0], "DESCRIPTION"] = "Ask jane.roe@example.org re Acetaminophen 325 MG Oral Tablet"
    med.loc[med.index[1], "DESCRIPTION"] = "Acetaminophen 325 MG Oral Tablet"
    med.loc[med.index[2], "DESCRIPTION"] = "vancomycin 1000 MG Injection"
    t["medications"] = med
    return ds, t, p0, mine, bare


def test_keys_stay_identifiers_and_l1_go_inputs_untouched(tables):
    ds, t, *_ = tables
    before = {k: v.copy() for k, v in t.items()}
    out = prepare_dataset(ds, t)
    for k in t:
        pd.testing.assert_frame_equal(t[k], before[k])
    assert "Id" in out["patients"] and out["patients"]["Id"].equals(t["patients"]["Id"])
    assert not {"SSN", "FIRST", "LAST", "ADDRESS", "LAT", "LON", "PASSPORT"} & set(out["patients"].columns)
    assert {"GENDER", "BIRTHDATE", "HEALTHCARE_EXPENSES"} <= set(out["patients"].columns)
    for c in ds.children:
        assert c.ref.foreign_key in out[c.name] and "ENCOUNTER" not in out[c.name]
        assert out[c.name][c.ref.foreign_key].equals(t[c.name][c.ref.foreign_key])
        assert len(out[c.name]) == len(t[c.name])


def test_a_persons_own_identifiers_leave_their_child_rows_text(tables):
    ds, t, p0, mine, bare = tables
    out = prepare_dataset(ds, t)
    text = out["conditions"].loc[mine, "DESCRIPTION"]
    assert p0["LAST"] not in text and p0["SSN"] not in text
    # the SSN written without its dashes: the deny-list matches its digits
    plain = out["conditions"].loc[bare, "DESCRIPTION"]
    assert p0["SSN"].replace("-", "") not in plain and plain.startswith("Seen, ref ")
    assert text.startswith("Follow-up for ") and text.endswith("(finding)")
    # a checked pattern (an e-mail) anywhere; drug names and doses are a terminology's words, not identifiers
    meds = out["medications"]["DESCRIPTION"]
    assert "jane.roe@example.org" not in meds.iloc[0] and "Acetaminophen 325 MG Oral Tablet" in meds.iloc[0]
    assert meds.iloc[1] == "Acetaminophen 325 MG Oral Tablet" and meds.iloc[2] == "vancomycin 1000 MG Injection"
    # a text without identifiers is unchanged
    unchanged = t["conditions"]["DESCRIPTION"] == "Acute bronchitis (disorder)"
    assert (out["conditions"].loc[unchanged, "DESCRIPTION"] == "Acute bronchitis (disorder)").all()


def test_k_anonymity_is_refused_before_any_budget_is_reserved(tables, tmp_path):
    ds, t, *_ = tables
    with pytest.raises(ConfigError, match="mask.k"):
        prepare_dataset(ds, t, mask=MaskConfig(k=5))
    ledger = tmp_path / "budget.db"
    with pytest.raises(ConfigError, match="mask.k"):
        run_dataset("synthea", DATA, tmp_path / "out", privacy={"epsilon": 3.0}, mask={"k": 5},
                    ledger_url=f"sqlite:///{ledger}", lineage_url=f"sqlite:///{tmp_path / 'lineage.db'}")
    from dpsyn.privacy.budget import BudgetLedger

    assert BudgetLedger(f"sqlite:///{ledger}").status() == []  # nothing reserved, nothing charged
    assert not (tmp_path / "out").exists()


def test_a_selected_l1_text_column_is_a_schema_error(tmp_path):
    d = Path(__file__).resolve().parents[3] / "dpsyn" / "schemas" / "datasets"
    cond = (d / "synthea_conditions.yaml").read_text().replace("{name: DESCRIPTION, kind: text, tier: L2}",
                                                               "{name: DESCRIPTION, kind: text, tier: L1}")
    (tmp_path / "c.yaml").write_text(cond)
    (tmp_path / "p.yaml").write_text((d / "synthea_patients.yaml").read_text())
    text = f"""
schema_version: 1
kind: dataset
name: t
person: {{table: patients, key: Id}}
tables:
  - {{name: patients, schema: {tmp_path / 'p.yaml'}}}
  - name: conditions
    schema: {tmp_path / 'c.yaml'}
    foreign_key: PATIENT
    max_rows_per_person: 10
    select: {{DESCRIPTION: {{max_per_person: 2, max_values: 20}}}}
"""
    with pytest.raises(SchemaError, match="tier L1, which masking drops"):
        parse_dataset_schema(text)
