"""Structured columns: header hints, sampled classification, column-wise operators, fail closed."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

from dpsyn.errors import InputError, PIIResidualError, UnknownComponentError
from dpsyn.pii import ScrubConfig, scrub_table
from dpsyn.pii.structured import apply_operator, classify_sample, header_hint, sample_values
from dpsyn.schema import parse_schema

PATTERN = ScrubConfig(mode="pattern")

HINTS = [
    ("email", "EMAIL_ADDRESS"),
    ("E-Mail", "EMAIL_ADDRESS"),
    ("contactEmail", "EMAIL_ADDRESS"),
    ("phone_number", "PHONE_NUMBER"),
    ("mobile", "PHONE_NUMBER"),
    ("SSN", "US_SSN"),
    ("patient_mrn", "MEDICAL_RECORD_NUMBER"),
    ("dob", "DATE_OF_BIRTH"),
    ("date_of_birth", "DATE_OF_BIRTH"),
    ("first_name", "PERSON"),
    ("patientName", "PERSON"),
    ("surname", "PERSON"),
    ("name", "PERSON"),
    ("home_address", "ADDRESS"),
    ("zip", "LOCATION"),
    ("national_id", "NATIONAL_ID"),
    ("patient_id", "IDENTIFIER"),
    ("uuid", "IDENTIFIER"),
    # no hint
    ("age", None),
    ("education-num", None),
    ("filename", None),
    ("hostname", None),
    ("diagnosis", None),
    ("paid", None),
]


@pytest.mark.parametrize(("column", "expected"), HINTS)
def test_header_hints(column, expected):
    assert header_hint(column) == expected


def test_bare_name_in_tool_tables_is_not_a_person():
    assert header_hint("name", bare_name_is_person=False) is None
    assert header_hint("full_name", bare_name_is_person=False) == "PERSON"


def test_sample_is_bounded_and_spread():
    s = pd.Series([f"v{i}" for i in range(10_000)] + [None] * 50)
    vals = sample_values(s, 200)
    assert len(vals) == 200 and vals[0] == "v0" and vals[-1] == "v9999"
    assert sample_values(pd.Series([1.0, 2.5, None]), 10) == ["1", "2.5"]


SAMPLES = [
    (["a.b@example.org", "c.d@example.net", "e@example.com"], "EMAIL_ADDRESS", 1.0),
    (["234-56-7891", "345-67-8912", "x"], "US_SSN", 2 / 3),
    (["(212) 555-0199", "415-555-0132"], "PHONE_NUMBER", 1.0),
    (["Private", "Self-emp-inc", "State-gov"], None, 0.0),
    (["40", "13", "77516"], None, 0.0),
    # an email inside a longer value covers under half of it: not an email column
    (["please write to a@example.org about the scheduled visit"], None, 0.0),
]


@pytest.mark.parametrize(("values", "entity", "fraction"), SAMPLES)
def test_classify_sample(engine, values, entity, fraction):
    got, frac = classify_sample(values, engine=engine, config=PATTERN)
    assert got == entity and frac == pytest.approx(fraction)


SCHEMA = """
name: contacts
columns:
  - {name: patient_id, kind: identifier, tier: L1}
  - {name: email, kind: identifier, pii: email, tier: L1}
  - {name: contact, kind: categorical, domain: [placeholder], tier: L3}
  - {name: grade, kind: categorical, domain: [a, b], tier: L3}
  - {name: age, kind: numeric, bounds: [0, 110], tier: L3}
"""


def _frame(n: int = 6) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "patient_id": [f"P-{100000 + i}" for i in range(n)],
            "email": [f"person{i}@example.org" for i in range(n)],
            "contact": [f"c{i}@example.net" for i in range(n)],
            "grade": ["a", "b"] * (n // 2),
            "age": np.arange(n, dtype=float) + 30,
        }
    )


@pytest.fixture()
def schema():
    return parse_schema(SCHEMA)


def test_undeclared_pii_column_fails_closed(engine, schema):
    with pytest.raises(PIIResidualError) as err:
        scrub_table(_frame(), schema, PATTERN, engine=engine)
    msg = str(err.value)
    assert "contact" in msg and "EMAIL_ADDRESS" in msg and "100%" in msg
    assert "@" not in msg  # no value in the message


def test_allow_columns_and_column_operators_lift_the_stop(engine, schema):
    out, rep = scrub_table(_frame(), schema, PATTERN.model_copy(update={"allow_columns": ["contact"]}), engine=engine)
    assert list(out["contact"]) == list(_frame()["contact"])
    out, rep = scrub_table(
        _frame(), schema, PATTERN.model_copy(update={"column_operators": {"contact": "replace"}}), engine=engine
    )
    assert set(out["contact"]) == {"[EMAIL_ADDRESS]"}
    assert rep.transformed_columns == ["contact"] and rep.counts["contact"] == {"EMAIL_ADDRESS": 6}


def test_under_threshold_is_not_flagged(engine, schema):
    df = _frame(10)
    df.loc[2:, "contact"] = "placeholder"  # 2 of 10 look like emails
    out, rep = scrub_table(df, schema, PATTERN, engine=engine)
    assert rep.columns["contact"]["detected"] == "EMAIL_ADDRESS" and rep.columns["contact"]["fraction"] == 0.2
    assert rep.columns["contact"]["operator"] is None


@pytest.mark.parametrize(
    ("operator", "check"),
    [
        ("drop", lambda s: s is None),
        ("redact", lambda s: set(s.dropna()) == {""} and s.isna().sum() == 1),
        ("replace", lambda s: set(s.dropna()) == {"[EMAIL_ADDRESS]"}),
        ("hash", lambda s: s.dropna().str.len().eq(64).all() and s[0] == s[1] and s[0] != s[2]),
        ("pseudonym", lambda s: s.dropna().str.match(r"^EMAIL_ADDRESS_[0-9a-f]{8}$").all() and s[0] == s[1]),
    ],
)
def test_apply_operator_column_wise(monkeypatch, operator, check):
    monkeypatch.setenv("DPSYN_PII_HMAC_KEY", "k" * 32)
    s = pd.Series(["a@example.org", "A@Example.org ", "b@example.org", None], dtype="string")
    out = apply_operator(s, operator=operator, entity="EMAIL_ADDRESS")
    assert check(out)
    if out is not None:
        assert not out.dropna().str.contains("@").any()


def test_operators_per_column_and_per_entity(engine, schema, monkeypatch):
    monkeypatch.setenv("DPSYN_PII_HMAC_KEY", "k" * 32)
    cfg = PATTERN.model_copy(
        update={
            "column_operators": {"patient_id": "hash", "contact": "redact"},
            "operators": {"EMAIL_ADDRESS": "pseudonym"},
        }
    )
    df = _frame()
    out, rep = scrub_table(df, schema, cfg, engine=engine)
    assert out["patient_id"].str.len().eq(64).all()  # keyed hash: a join key
    assert out["email"].str.startswith("EMAIL_ADDRESS_").all()  # per-entity operator
    assert set(out["contact"]) == {""}
    assert rep.columns["patient_id"]["operator"] == "hash" and rep.dropped_columns == []
    dumped = json.dumps(rep.to_dict())
    assert not any(v in dumped for v in [*df["email"], *df["contact"], *df["patient_id"]])


def test_hash_without_key_fails_before_work(engine, schema, monkeypatch):
    monkeypatch.delenv("DPSYN_PII_HMAC_KEY", raising=False)
    with pytest.raises(InputError, match="DPSYN_PII_HMAC_KEY"):
        cfg = PATTERN.model_copy(update={"column_operators": {"patient_id": "hash"}, "allow_columns": ["contact"]})
        scrub_table(_frame(), schema, cfg, engine=engine)


@pytest.mark.parametrize(
    ("update", "match"),
    [
        ({"column_operators": {"nope": "drop"}}, "unknown column"),
        ({"allow_columns": ["nope"]}, "unknown column"),
        ({"column_operators": {"email": "shred"}}, "unknown PII operator"),
    ],
)
def test_unknown_names_fail_closed(engine, schema, update, match):
    with pytest.raises(UnknownComponentError, match=match):
        scrub_table(_frame(), schema, PATTERN.model_copy(update=update), engine=engine)


def test_birth_date_column_declared_none_fails_closed(engine):
    schema = parse_schema(
        """
name: dates
columns:
  - {name: birth_date, kind: datetime, bounds: ["1900-01-01", "2030-01-01"]}
  - {name: age, kind: numeric, bounds: [0, 110]}
"""
    )
    df = pd.DataFrame({"birth_date": pd.to_datetime(["1975-03-14", "1980-01-02"]), "age": [50.0, 45.0]})
    with pytest.raises(PIIResidualError, match="birth_date"):
        scrub_table(df, schema, PATTERN, engine=engine)


def test_structured_only_throughput(engine):
    """A sanity bound (the benchmark measures the real figure): no per-row Python work on structured columns."""
    schema = parse_schema(SCHEMA)
    n = 100_000
    df = _frame(n)
    cfg = PATTERN.model_copy(update={"column_operators": {"contact": "replace"}})
    t0 = time.perf_counter()
    out, rep = scrub_table(df, schema, cfg, engine=engine)
    rate = n / (time.perf_counter() - t0)
    assert len(out) == n and rep.dropped_columns == ["patient_id", "email"]
    assert rate > 20_000, f"{rate:.0f} rows/s"
