"""Hard rules held by construction in the synthetic table (post-processing, no ε)."""

from __future__ import annotations

import numpy as np
import pytest

from dpsyn.validation.repair import enforce_hard_rules, violations
from dpsyn.validation.rules import load_rules, rule_counts


@pytest.fixture(scope="module")
def clinic(tmp_path_factory):
    import test_rules as T  # the rule tests' schema and rules, every rule hard

    p = tmp_path_factory.mktemp("r") / "hard.yaml"
    p.write_text(T._hard(T.RULES))
    return T, load_rules(p)


def _broken(T, n=600, seed=0):
    df = T._clean(n, seed=seed)
    df.loc[df.index[:30], ["diag_1", "gender"]] = ["650", "Male"]
    df.loc[df.index[30:40], "stay"] = 20.0
    df.loc[df.index[40:45], "discharge_day"] = df.loc[df.index[40:45], "admit_day"] - 1
    df.loc[df.index[45:50], ["diag_1", "gender"]] = ["185", "Female"]
    df.loc[df.index[50:53], "diag_3"] = "V27"
    return df


def test_masks_agree_with_great_expectations(clinic):
    T, rules = clinic
    df = _broken(T)
    ge = rule_counts(df, rules, T.SCHEMA)
    mine = {k: int(m.sum()) for k, m in violations(df, rules, T.SCHEMA).items()}
    assert mine == {k: v for k, (v, _) in ge.items()} and sum(mine.values()) > 50


def test_enforced_table_breaks_no_hard_rule_and_keeps_its_size(clinic):
    T, rules = clinic
    df = _broken(T)
    fixed, k = enforce_hard_rules(df, rules, T.SCHEMA, np.random.default_rng(0))
    assert k >= 50 and len(fixed) == len(df) and list(fixed.columns) == list(df.columns)
    assert all(v == 0 for v, _ in rule_counts(fixed, rules, T.SCHEMA).values())
    assert (fixed.dtypes == df.dtypes).all()
    again, k2 = enforce_hard_rules(fixed, rules, T.SCHEMA, np.random.default_rng(0))
    assert k2 == 0 and again.equals(fixed)


def test_soft_rules_and_no_rules_leave_the_table_alone(clinic):
    T, _ = clinic
    df = _broken(T)
    soft = load_rules(_write_soft(T))
    assert enforce_hard_rules(df, soft, T.SCHEMA, np.random.default_rng(0))[1] == 0
    assert enforce_hard_rules(df, None, T.SCHEMA, np.random.default_rng(0)) == (df, 0)


def _write_soft(T):
    import tempfile
    from pathlib import Path

    p = Path(tempfile.mkdtemp()) / "soft.yaml"
    p.write_text(T.RULES)
    return p


def test_expect_rules_mask_the_rows_great_expectations_names(tmp_path):
    import test_rules as T

    p = tmp_path / "hard.yaml"
    p.write_text(T._hard(T.EXPECT_RULES))
    rules = load_rules(p)
    df = T._clean(300)
    df["discharge_day"] = df["admit_day"] + 1
    df.index = df.index + 1000  # labels, not positions
    df.loc[df.index[:4], "discharge_day"] = df.loc[df.index[:4], "admit_day"]
    masks = violations(df, rules, T.SCHEMA)
    assert int(masks["rule:admit_discharge_differ"].sum()) == 4 and masks["rule:admit_discharge_differ"].iloc[:4].all()
    counts = rule_counts(df, rules, T.SCHEMA)
    assert all(int(masks[c].sum()) == counts[c][0] for c in masks)
    out, replaced = enforce_hard_rules(df, rules, T.SCHEMA, np.random.default_rng(0))
    assert replaced == 4 and len(out) == len(df) and not any(m.any() for m in violations(out, rules, T.SCHEMA).values())
