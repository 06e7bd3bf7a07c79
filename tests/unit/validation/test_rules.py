"""Clinical-logic rules: YAML → Great Expectations suite → violation counts → gate checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsyn.errors import ConfigError, SchemaError
from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant
from dpsyn.schema import parse_schema
from dpsyn.validation import ValidationConfig, validate
from dpsyn.validation.rules import RuleSet, compile_suite, expand_icd9, load_rules, violation_counts

SCHEMA = parse_schema("""
name: clinic
columns:
  - {name: gender, kind: categorical, domain: [Female, Male]}
  - {name: diag_1, kind: categorical, domain: ["174", "185", "250", "650", "V27", "E850"]}
  - {name: diag_2, kind: categorical, domain: ["174", "185", "250", "650", "V27", "E850"], nullable: true}
  - {name: diag_3, kind: categorical, domain: ["174", "185", "250", "650", "V27", "E850"], nullable: true}
  - {name: stay, kind: numeric, bounds: [0, 30], integer: true}
  - {name: admit_day, kind: numeric, bounds: [0, 400], integer: true}
  - {name: discharge_day, kind: numeric, bounds: [0, 400], integer: true}
""")

RULES = """
version: 1
name: clinic-rules
tolerance: 0.01
rules:
  - name: pregnancy_female
    if: {columns: [diag_1, diag_2, diag_3], icd9: ["630-679", "V27"]}
    then: {column: gender, in: [Female]}
  - name: prostate_male
    if: {column: diag_1, icd9: ["185"]}
    then: {column: gender, not_in: [Female]}
  - name: stay_1_14
    range: {column: stay, min: 1, max: 14}
  - name: known_gender
    allowed: {column: gender, in: [Female, Male]}
  - name: discharge_after_admit
    order: {left: discharge_day, op: ">=", right: admit_day}
"""


@pytest.fixture(scope="module")
def rules(tmp_path_factory):
    p = tmp_path_factory.mktemp("rules") / "r.yaml"
    p.write_text(RULES)
    return load_rules(p)


def _clean(n=400, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(["Female", "Male"], n)
    d1 = np.where(g == "Female", rng.choice(["174", "250", "650", "V27"], n), rng.choice(["185", "250", "E850"], n))
    admit = rng.integers(0, 300, n)
    return pd.DataFrame({"gender": g, "diag_1": d1, "diag_2": pd.Series(["250"] * n, dtype="string"),
                         "diag_3": pd.Series(["E850"] * n, dtype="string"),
                         "stay": rng.integers(1, 15, n).astype(float), "admit_day": admit.astype(float),
                         "discharge_day": (admit + rng.integers(0, 20, n)).astype(float)})


def test_expand_icd9_uses_the_declared_domain():
    dom = ["1", "174", "175", "185", "630", "679", "680", "V22", "V24", "V25", "V27", "E850"]
    assert expand_icd9(["630-679"], dom) == ["630", "679"]
    assert expand_icd9(["V22-V24", "174"], dom) == ["174", "V22", "V24"]
    assert expand_icd9(["850"], dom) == []  # E850 is not 850


def test_clean_table_violates_nothing(rules):
    counts = violation_counts(_clean(), rules, SCHEMA)
    assert set(counts) == {"rule:pregnancy_female", "rule:prostate_male",
                           "rule:stay_1_14", "rule:known_gender", "rule:discharge_after_admit"}
    assert sum(counts.values()) == 0


def test_each_kind_of_rule_counts_its_violations(rules):
    df = _clean()
    preg = df["diag_1"].isin(["650", "V27"])
    df.loc[preg, "gender"] = "Male"  # pregnancy codes given to males
    df.loc[[20, 21], "diag_3"] = "650"  # and two more through the third diagnosis
    df.loc[[20, 21], "diag_1"] = "250"
    df.loc[[20, 21], "gender"] = "Male"
    df.loc[:9, "stay"] = 20.0  # out of range
    df.loc[10:14, "discharge_day"] = df.loc[10:14, "admit_day"] - 1  # discharged before admission
    df.loc[[15, 16], "diag_1"] = "185"
    df.loc[[15, 16], "gender"] = "Female"
    counts = violation_counts(df, rules, SCHEMA)
    preg2 = df["diag_1"].isin(["650", "V27"]) | df["diag_3"].isin(["650", "V27"])
    assert counts["rule:pregnancy_female"] == int((preg2 & (df["gender"] != "Female")).sum()) > 2
    assert counts["rule:stay_1_14"] == 10
    assert counts["rule:discharge_after_admit"] == 5
    assert counts["rule:prostate_male"] == 2
    assert counts["rule:known_gender"] == 0


def test_missing_values_violate_nothing(rules):
    df = _clean()
    df["diag_2"] = pd.Series([pd.NA] * len(df), dtype="string")
    df.loc[:4, "stay"] = np.nan
    assert sum(violation_counts(df, rules, SCHEMA).values()) == 0


def test_compiled_suite_is_great_expectations(rules):
    suite = compile_suite(rules, SCHEMA)
    types = sorted(e.expectation_type for e in suite.expectations)
    assert types == ["expect_column_pair_values_a_to_be_greater_than_b", "expect_column_values_to_be_between",
                     "expect_column_values_to_be_in_set", "expect_column_values_to_be_in_set",
                     "expect_column_values_to_not_be_in_set"]
    conditional = [e for e in suite.expectations if e.row_condition is not None]
    assert len(conditional) == 2


@pytest.mark.parametrize(
    "text, error, match",
    [
        ("version: 1\nname: x\nrules: []\n", ConfigError, "rules"),
        ("version: 1\nname: x\nrules:\n  - {name: a, range: {column: stay}, allowed: {column: gender, in: [M]}}\n",
         ConfigError, "exactly one"),
        ("version: 1\nname: x\nrules:\n  - {name: a, if: {column: diag_1, icd9: ['6x0']}, then: {column: gender, in: [F]}}\n",
         ConfigError, "ICD-9"),
        ("version: 1\nname: x\nrules:\n  - {name: a, if: {column: diag_1, in: ['250']}}\n", ConfigError, "both"),
        ("version: 1\nname: x\nrules:\n  - {name: a, range: {column: shoe_size, min: 1}}\n", SchemaError, "shoe_size"),
        ("version: 1\nname: x\nrules:\n  - {name: a, range: {column: stay, min: 1}}\n  - {name: a, range: {column: stay}}\n",
         ConfigError, "unique"),
        ("{not yaml", ConfigError, "YAML"),
    ],
)
def test_bad_rules_are_refused_clearly(tmp_path, text, error, match):
    p = tmp_path / "bad.yaml"
    p.write_text(text)
    with pytest.raises(error, match=match):
        violation_counts(_clean(20), load_rules(p), SCHEMA)


def test_unknown_rules_file_lists_the_shipped_ones():
    with pytest.raises(ConfigError, match="diabetes130"):
        load_rules("no-such-rules")


def test_shipped_diabetes_rules_fit_the_shipped_schema():
    from dpsyn.schema import load_schema

    rs = load_rules("diabetes130")
    rs.check_against(load_schema("diabetes130"))
    names = {r.name for r in rs.rules}
    assert {"pregnancy_only_female", "female_genital_only_female", "female_breast_cancer_only_female",
            "male_genital_only_male", "prostate_cancer_only_male", "time_in_hospital_1_14"} <= names
    assert isinstance(rs, RuleSet) and rs.tolerance == 0.005


def _gate(real, synth, rules_path, seed=0, epsilon=1.0):
    acct = PrivacyAccountant(epsilon=epsilon, delta=1e-5)
    cfg = ValidationConfig(rules=str(rules_path), ks_threshold=0.3, tvd_threshold=0.3, pair_max_cells=0)
    rep = validate(real, synth, SCHEMA, cfg, accountant=acct, noise=NoiseSource(secure=False, seed=seed),
                   counts=NoisyCounts.public(train=len(real)))
    return rep, acct


def _hard(text: str, *, keep_soft: tuple[str, ...] = ()) -> str:
    """The rules file with every rule (but ``keep_soft``) declared hard."""
    out = []
    for line in text.splitlines():
        out.append(line)
        if line.startswith("  - name: ") and line.split(": ", 1)[1] not in keep_soft:
            out.append("    hard: true")
    return "\n".join(out) + "\n"


def test_hard_rules_are_judged_on_the_synthetic_table_alone(tmp_path):
    """An impossible combination needs no real statistic: no noise, no ε, tolerance 0, failed by name."""
    from dpsyn.validation import real_statistics_for

    p = tmp_path / "r.yaml"
    p.write_text(_hard(RULES))
    real = _clean(2000, seed=1)
    good = _clean(2000, seed=2)
    rep, acct = _gate(real, good, p)
    assert rep.is_valid(), [(c.name, c.status) for c in rep.checks if not c.passed]
    assert [m.label for m in acct.ledger] == ["validation.fidelity"]
    hard = [c for c in rep.checks if c.statistic == "hard_rule"]
    assert sorted(c.name for c in hard) == sorted(f"rule:{n}" for n in (
        "pregnancy_female", "prostate_male", "stay_1_14", "known_gender", "discharge_after_admit"))
    assert all(c.noise_std == 0.0 and c.threshold == 0.0 and c.value == 0.0 for c in hard)
    cfg = ValidationConfig(rules=str(p), pair_max_cells=0)
    assert real_statistics_for(real, SCHEMA, cfg).rules == {}  # nothing about the rules is read from real rows
    # the release holds no rule statistic: the primary noise is that of the fidelity families alone
    sigma = acct.ledger[0].noise_multiplier
    d = ValidationConfig()
    assert rep.noise_std == pytest.approx(sigma * np.sqrt(1 + d.detail_weight + 2 * d.hist_weight) / 1999)
    bad = good.copy()
    bad.loc[bad.index[:40], ["diag_1", "gender"]] = ["650", "Male"]  # 2 % males with a pregnancy code
    rep, _ = _gate(real, bad, p)
    failed = {c.name for c in rep.failures()}
    assert "rule:pregnancy_female" in failed
    preg = next(c for c in rep.checks if c.name == "rule:pregnancy_female")
    assert preg.value == pytest.approx(40 / 2000) and preg.limit == 0.0
    assert failed <= {"rule:pregnancy_female", "gate:worst", "one_way:worst", "tvd:diag_1", "tvd:gender"}


def test_soft_rules_are_charged_and_judged_against_the_noisy_real_rate(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text(_hard(RULES, keep_soft=("pregnancy_female", "stay_1_14")))
    real = _clean(20000, seed=1)
    good = _clean(20000, seed=2)
    rep, acct = _gate(real, good, p, epsilon=4.0)  # a 1-point rate tolerance needs the precision
    assert rep.is_valid(), [(c.name, c.status) for c in rep.checks if not c.passed]
    stay = next(c for c in rep.checks if c.name == "rule:stay_1_14")
    assert stay.statistic == "rule_excess_rate" and stay.noise_std > 0 and stay.status == "passed"
    preg = next(c for c in rep.checks if c.name == "rule:pregnancy_female")
    assert preg.statistic == "rule_conditional_violation_rate" and preg.value == 0.0
    bad = good.copy()
    bad.loc[bad["diag_1"].isin(["650", "V27"]), "gender"] = "Male"
    rep, _ = _gate(real, bad, p, epsilon=4.0)
    assert "rule:pregnancy_female" in [c.name for c in rep.failures()]
    assert next(c for c in rep.checks if c.name == "rule:pregnancy_female").value == 1.0


def test_no_rules_when_none_are_shipped_for_the_schema():
    rep, _ = _gate(_clean(300), _clean(300, seed=3), "none")
    assert not any(c.statistic == "rule_violation_rate" for c in rep.checks)
    rep = validate(_clean(300), _clean(300, seed=3), SCHEMA, ValidationConfig(),  # auto: no clinic.yaml shipped
                   accountant=PrivacyAccountant(epsilon=1.0, delta=1e-5), noise=NoiseSource(secure=False, seed=0),
                   counts=NoisyCounts.public(train=300))
    assert not any(c.statistic == "rule_violation_rate" for c in rep.checks)


def test_rare_condition_falls_back_to_the_share_of_all_rows(tmp_path):
    """Too few real rows meet the condition to estimate a conditional rate under DP noise."""
    p = tmp_path / "r.yaml"
    p.write_text(RULES)
    real = _clean(300, seed=1)
    real.loc[real["diag_1"] == "185", "diag_1"] = "250"
    real.loc[:1, "diag_1"] = "185"  # two prostate rows, both male
    real.loc[:1, "gender"] = "Male"
    rep, _ = _gate(real, _clean(300, seed=2), p)
    prost = next(c for c in rep.checks if c.name == "rule:prostate_male")
    assert prost.statistic == "rule_violation_rate"


def test_data_docs_for_the_synthetic_table(rules, tmp_path):
    """GE's own result and Data Docs: counts per rule, no row values (BASIC, no partial lists)."""
    from dpsyn.validation.rules import data_docs

    df = _clean()
    # Ten out-of-range stays, a value no other row has. Its digits must not be able to turn up in the page's
    # run timestamp (…T093227.023440Z once held "27.0"): 86.375 cannot, as no clock field reaches 86.
    df.loc[:9, "stay"] = 86.375
    result, index = data_docs(df, rules, SCHEMA, tmp_path / "docs")
    assert index.exists() and index.name == "index.html"
    pages = list((tmp_path / "docs").rglob("*.html"))
    assert any("validations" in p.parts for p in pages) and any("expectations" in p.parts for p in pages)
    assert result["success"] is False
    by_check = {r["expectation_config"]["meta"]["dpsyn_check"]: r for r in result["results"]}
    assert by_check["rule:stay_1_14"]["result"]["unexpected_count"] == 10
    assert all(not r["result"].get("partial_unexpected_list") for r in result["results"])
    page = next(p for p in pages if "validations" in p.parts).read_text()
    assert "86.375" not in page and "86.38" not in page


def test_compile_suite_needs_no_context_of_the_callers():
    """In a fresh interpreter, with no Great Expectations context made beforehand (it raised
    DataContextRequiredError)."""
    import subprocess
    import sys

    code = ("from dpsyn.validation.rules import compile_suite, load_rules\n"
            "from dpsyn.schema import load_schema\n"
            "s = compile_suite(load_rules('diabetes130'), load_schema('diabetes130'))\n"
            "print(len(s.expectations))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert int(r.stdout.strip().splitlines()[-1]) > 3


EXPECT_RULES = """
version: 1
name: clinic-expect
rules:
  - name: diag_1_is_a_code
    expect:
      type: expect_column_values_to_match_regex
      kwargs: {column: diag_1, regex: "^[VE]?[0-9]{1,3}$"}
  - name: stay_not_null
    expect: {type: expect_column_values_to_not_be_null, kwargs: {column: stay}}
    hard: true
  - name: admit_discharge_differ
    expect:
      type: expect_select_column_values_to_be_unique_within_record
      kwargs: {column_list: [admit_day, discharge_day]}
"""


def test_any_great_expectations_map_expectation_by_name(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text(EXPECT_RULES)
    rules = load_rules(p)
    types = sorted(e.expectation_type for e in compile_suite(rules, SCHEMA).expectations)
    assert types == ["expect_column_values_to_match_regex", "expect_column_values_to_not_be_null",
                     "expect_select_column_values_to_be_unique_within_record"]
    df = _clean()
    df["discharge_day"] = df["admit_day"] + 1
    df.loc[:2, "diag_1"] = "not-a-code"
    df.loc[3:4, "discharge_day"] = df.loc[3:4, "admit_day"]
    counts = violation_counts(df, rules, SCHEMA)
    assert counts == {"rule:diag_1_is_a_code": 3, "rule:stay_not_null": 0, "rule:admit_discharge_differ": 2}
    # and they gate: soft ones against the noisy real rate, the hard one on the synthetic table alone
    real = _clean(20000, seed=1)
    real["discharge_day"] = real["admit_day"] + 1
    good = real.copy()
    rep, acct = _gate(real, good, p, epsilon=4.0)  # a rate check needs the precision (as for the shapes above)
    assert rep.is_valid(), [(c.name, c.status) for c in rep.checks if not c.passed]
    bad = good.copy()
    bad.loc[bad.index[:2000], "discharge_day"] = bad.loc[bad.index[:2000], "admit_day"]  # 10 % break a soft rule
    rep, _ = _gate(real, bad, p, epsilon=4.0)
    assert "rule:admit_discharge_differ" in {c.name for c in rep.failures()}
    stat = next(c for c in rep.checks if c.name == "rule:admit_discharge_differ")
    assert stat.statistic == "rule_excess_rate" and stat.noise_std > 0


@pytest.mark.parametrize(
    "expect, match",
    [
        ({"type": "expect_table_row_count_to_be_between", "kwargs": {}}, "row-by-row"),
        ({"type": "expect_column_values_to_be_purple", "kwargs": {"column": "stay"}}, "no Great Expectations"),
        ({"type": "expect_column_values_to_match_regex", "kwargs": {"column": "shoe", "regex": "x"}}, "shoe"),
        ({"type": "expect_column_values_to_match_regex", "kwargs": {"column": "stay", "bogus": 1}}, "kwargs"),
    ],
)
def test_bad_expectation_rules_are_refused_clearly(tmp_path, expect, match):
    import yaml

    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump({"version": 1, "name": "x", "rules": [{"name": "a", "expect": expect}]}))
    with pytest.raises((ConfigError, SchemaError), match=match):
        violation_counts(_clean(20), load_rules(p), SCHEMA)
