"""Per-person flags (dataset ``person_flags``): the persons' model carries them, and each synthetic person's child
rows are drawn to agree with them (dpsyn.relational.synth.draw_flagged, person_summaries, _agree_with_known)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dpsyn.relational import load_dataset_schema
from dpsyn.relational.synth import _agree_with_known, _flag_hits, draw_flagged, person_summaries


def _pool():
    # 3 flags; pool rows: 0 matches flag 0, 1 matches flags 0 and 1, 2 matches flag 2, 3-5 match none
    hits = np.zeros((6, 3), dtype=bool)
    hits[0, 0] = hits[1, 0] = hits[1, 1] = hits[2, 2] = True
    return hits


def test_wanted_flags_are_met_and_others_avoided():
    hits = _pool()
    wanted = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 0], [1, 1, 0]], dtype=bool)
    counts = np.array([3, 2, 4, 2])
    level = np.zeros((6, 1), dtype=np.int64)  # one level that matches everything
    for seed in range(20):
        need, chosen = draw_flagged(hits, level, np.zeros((4, 1), dtype=np.int64), counts, wanted,
                                    np.random.default_rng(seed))
        assert np.bincount(need, minlength=4).tolist() == counts.tolist()  # the sampled number of rows is kept
        for i in range(4):
            got = hits[chosen[need == i]]
            assert (got.any(axis=0) == wanted[i]).all(), (seed, i)  # every wanted flag met, no other flag drawn
        assert set(chosen[need == 0]) <= {0, 3, 4, 5}  # row 1 would add flag 1, which person 0 lacks


def test_fewer_rows_than_flags_meet_a_subset_and_the_finest_level_is_preferred():
    hits = _pool()
    wanted = np.array([[1, 0, 1]], dtype=bool)
    # two levels: the finest (column 0) puts pool rows 2-5 with the person, the last matches everything
    pool_level = np.array([[1, 0], [1, 0], [7, 0], [7, 0], [7, 0], [7, 0]])
    need, chosen = draw_flagged(hits, pool_level, np.array([[7, 0]]), np.array([1]), wanted,
                                np.random.default_rng(1))
    assert len(chosen) == 1 and chosen[0] in (0, 2)
    need, chosen = draw_flagged(hits, pool_level, np.array([[7, 0]]), np.array([3]), wanted,
                                np.random.default_rng(1))
    assert 0 in chosen and 2 in chosen  # flag 0 only at the coarse level: still met
    assert set(chosen) - {0} <= {2, 3, 4, 5}  # the other rows at the person's own level


def test_person_summaries_are_functions_of_each_persons_rows():
    ds = load_dataset_schema("synthea")
    cond = ds.children[0]
    persons = pd.DataFrame({"DEATHDATE": pd.to_datetime([None, "2020-01-01", None])})
    codes = np.array([2, 0, 1])  # the persons' secret codes, in row order
    rows = pd.DataFrame({"DESCRIPTION": ["Essential hypertension (disorder)", "Prediabetes", "Fever"]})
    children = {"conditions": (rows, np.array([0, 2, 2])), "medications": (pd.DataFrame({"DESCRIPTION": []}),
                                                                           np.array([], dtype=np.int64))}
    out = person_summaries(ds, persons, codes, children)
    assert out["conditions__hypertension"].tolist() == ["0", "1", "0"]  # code 0 is the second row
    assert out["conditions__prediabetes"].tolist() == ["1", "0", "0"]
    assert out["conditions__diabetes"].tolist() == ["0", "0", "0"]  # (?<!pre)diabetes
    assert out["DEATHDATE__known"].tolist() == ["0", "1", "0"]
    assert "conditions__hypertension" not in persons  # the input is not modified
    hits = _flag_hits(pd.Series(["heart failure", None, "x"]), cond.ref.person_flags)
    assert hits.sum(axis=1).tolist() == [1, 0, 0]


def test_the_target_agrees_with_its_known_flag():
    values = pd.Series(pd.to_datetime(["2001-01-01", None, "2003-01-01", None]))
    known = pd.Series(["0", "1", "1", "0"])
    out = _agree_with_known(values, known, np.random.default_rng(0))
    assert out.isna().tolist() == [True, False, False, True]
    assert out.iloc[1] == pd.Timestamp("2003-01-01")  # drawn from the known values left
