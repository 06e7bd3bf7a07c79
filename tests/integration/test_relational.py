"""The relational synthesizer end to end on a 40-patient Synthea sample (tests/data/synthea): three tables,
valid foreign keys, fresh ids, per-person bounds, the guarantee per person, the inputs untouched, no identifier
out, atomic publication."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from dpsyn.relational import RelationalSynthesizer, load_dataset_schema, read_dataset, write_dataset

DATA = Path(__file__).resolve().parents[1] / "data" / "synthea"
IDS = {"patients": ["Id", "SSN", "DRIVERS", "PASSPORT", "FIRST", "LAST", "ADDRESS"],
       "conditions": ["ENCOUNTER"], "medications": ["ENCOUNTER", "PAYER"]}


@pytest.fixture(scope="module")
def fitted():
    ds = load_dataset_schema("synthea")
    tables = read_dataset(ds, DATA)
    # a person without a key and a condition of nobody in the persons' table: both must be survivable
    tables["patients"] = pd.concat([tables["patients"], tables["patients"].iloc[[0]].assign(Id=pd.NA)],
                                   ignore_index=True)
    tables["conditions"] = pd.concat([tables["conditions"], tables["conditions"].iloc[[0]].assign(
        PATIENT="no-such-patient")], ignore_index=True)
    before = {k: v.copy() for k, v in tables.items()}
    model = RelationalSynthesizer({"backbone": {"iters": 30}},
                                  privacy={"epsilon": 20.0, "secure_rng": False, "noise_seed": 0}).fit(tables, ds)
    return ds, tables, before, model, model.sample(random_state=0)


def test_inputs_are_not_modified(fitted):
    _, tables, before, _, _ = fitted
    for k in tables:
        pd.testing.assert_frame_equal(tables[k], before[k])


def test_three_tables_with_valid_foreign_keys_and_fresh_ids(fitted):
    ds, tables, _, _, out = fitted
    assert list(out) == ["patients", "conditions", "medications"]
    ids = out["patients"]["Id"]
    assert ids.is_unique and ids.str.fullmatch(r"p[0-9a-f]{12}").all()
    assert not ids.isin(set(tables["patients"]["Id"])).any()
    for c in ds.children:
        fk = out[c.name]["PATIENT"]
        assert fk.isin(set(ids)).all()
        assert fk.value_counts().max() <= c.k
        assert len(out[c.name]) > 0


def test_no_identifier_reaches_the_output(fitted):
    _, tables, _, _, out = fitted
    secrets = {x for t, cols in IDS.items() for c in cols for x in tables[t][c].dropna().astype(str) if x.strip()}
    for name, df in out.items():
        assert not {"SSN", "FIRST", "LAST", "ADDRESS", "ENCOUNTER", "PAYER", "LAT", "LON"} & set(df.columns), name
        for c in df.columns:
            assert not df[c].astype(str).isin(secrets).any(), (name, c)


def test_guarantee_is_per_person_and_within_budget(fitted):
    ds, _, _, model, _ = fitted
    p = model.privacy_
    assert p["epsilon_spent"] <= 20.0 + 1e-9
    assert p["neighbouring"] == ds.relation()
    labels = {m["label"].split(".")[0] for m in p["mechanisms"]}
    assert {"select", "patients", "conditions", "medications"} <= labels
    assert p["tail_delta"] > 0  # the selections' thresholds


def test_selected_domains_hold_only_values_many_persons_share(fitted):
    _, tables, _, model, out = fitted
    cond = tables["conditions"]
    holders = cond.groupby("DESCRIPTION")["PATIENT"].nunique()
    for v in model.domains_["conditions"]["DESCRIPTION"]:
        assert holders[v] >= 2  # a value one person holds is released with probability ≤ δ_sel
    # beside the selected values: the other token and the public labels of the declared person flags
    flags = model.dataset_.children[0].ref.person_flags
    labels = {flags.label(k) for k in flags.patterns}
    assert set(out["conditions"]["DESCRIPTION"].dropna()) <= set(model.domains_["conditions"]["DESCRIPTION"]) | {
        "__other__"} | labels


def test_budget_shares_sum_to_one(fitted):
    from dpsyn.relational import budget_shares

    ds, _, _, model, _ = fitted
    assert sum(budget_shares(ds, model.config).values()) == pytest.approx(1.0)


def test_publication_is_atomic(fitted, tmp_path):
    _, _, _, _, out = fitted
    dest = write_dataset(out, tmp_path / "release", manifest={"dataset": "synthea"})
    assert sorted(p.name for p in dest.iterdir()) == ["conditions.csv", "manifest.json", "medications.csv",
                                                      "patients.csv"]

    class Boom(pd.DataFrame):
        def to_csv(self, *a, **k):
            raise OSError("disk full")

    with pytest.raises(OSError):
        write_dataset({"patients": out["patients"], "conditions": Boom(out["conditions"])}, tmp_path / "half")
    assert not (tmp_path / "half").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".half")]
