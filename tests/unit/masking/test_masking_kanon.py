"""dpsyn.masking: k-anonymity (Datafly: generalize, then suppress) through mask_table and k_anonymize."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from dpsyn.errors import ConfigError, SchemaError
from dpsyn.masking import (
    DEFAULT_K,
    MaskConfig,
    equivalence_class_sizes,
    k_anonymize,
    mask_table,
)
from dpsyn.schema import parse_schema

SECRET_ZIP = "99871"  # a planted, unique postcode: it must never appear in a report or message

BANDS_5 = [f"[{lo}-{lo + 5})" for lo in range(0, 150, 5)]
BANDS_10 = [f"[{lo}-{lo + 10})" for lo in range(0, 150, 10)]
ZIP3 = [f"{i:03d}" for i in range(1000)]
ZIP2 = [f"{i:02d}" for i in range(100)]

# Generalized QIs whose schema domains (public: every band, every prefix) cover every ladder level.
CONFORMING = f"""
name: kanon
columns:
  - {{name: id, kind: identifier, tier: L1}}
  - {{name: age, kind: categorical, generalize: age_band_5, domain: {BANDS_5 + BANDS_10}, tier: L3,
     quasi_identifier: true, nullable: true}}
  - {{name: zip, kind: categorical, generalize: "postcode_prefix:3", domain: {ZIP3 + ZIP2}, tier: L3,
     quasi_identifier: true, nullable: true}}
  - {{name: sex, kind: categorical, domain: [F, M], tier: L3, quasi_identifier: true}}
  - {{name: los, kind: numeric, bounds: [0, 30], tier: L2}}
"""

# The usual Adult-style declaration: age is numeric, so age bands do not fit it.
NUMERIC_AGE = """
name: kanon_numeric
columns:
  - {name: age, kind: numeric, bounds: [0, 110], tier: L3, quasi_identifier: true}
  - {name: sex, kind: categorical, domain: [F, M], tier: L3, quasi_identifier: true}
"""


@pytest.fixture(scope="module")
def schema():
    return parse_schema(CONFORMING)


@pytest.fixture
def frame():
    rng = np.random.default_rng(7)
    n = 400
    zips = rng.choice(["02139", "02141", "02115", "10001", "10013", "10027"], size=n)
    zips[17] = SECRET_ZIP
    return pd.DataFrame(
        {
            "id": [f"r{i}" for i in range(n)],
            "age": rng.integers(18, 90, size=n).astype(str),
            "zip": pd.array(zips, dtype="string"),
            "sex": pd.array(rng.choice(["F", "M"], size=n), dtype="string"),
            "los": rng.integers(0, 30, size=n).astype(float),
        }
    )


LADDERS = {"age": ["age_band_10", "suppress"], "zip": ["postcode_prefix:2", "suppress"]}


def _class_sizes(df, cols=("age", "zip", "sex")):
    return equivalence_class_sizes(df, list(cols))


# -- config -----------------------------------------------------------------------------------


def test_config_default_is_off_and_k_true_means_default_k():
    assert MaskConfig().k is None
    assert MaskConfig(k=True).k == DEFAULT_K == 5
    assert MaskConfig(k=False).k is None
    assert MaskConfig.model_validate({"k": 7, "max_suppression": 0.1}).k == 7


@pytest.mark.parametrize(
    "bad",
    [{"k": 1}, {"k": 0}, {"max_suppression": 1.5}, {"max_suppression": -0.1}, {"kk": 5},
     {"ladders": {"age": ["age_band_7"]}}, {"ladders": {"zip": ["postcode_prefix:0"]}}],
)
def test_config_rejects_bad_settings(bad):
    with pytest.raises(ValidationError):
        MaskConfig(**bad)


def test_unknown_ladder_hierarchy_error_lists_valid_names():
    with pytest.raises(ValidationError) as info:
        MaskConfig(k=5, ladders={"age": ["age_band_7"]})
    assert "age_band_10" in str(info.value) and "ladder of 'age'" in str(info.value)


def test_off_is_the_tier_only_behaviour(schema, frame):
    a, ra = mask_table(frame, schema)
    b, rb = mask_table(frame, schema, MaskConfig())
    pd.testing.assert_frame_equal(a, b)
    assert ra == rb and ra.k_anonymity is None and ra.conforms
    assert len(a) == len(frame)


# -- the algorithm ----------------------------------------------------------------------------


def test_result_is_k_anonymous_and_report_counts_add_up(schema, frame):
    out, report = mask_table(frame, schema, MaskConfig(k=5, max_suppression=0.05, ladders=LADDERS))
    ka = report.k_anonymity
    assert ka is not None and ka.k == 5
    assert ka.quasi_identifiers == ["age", "zip", "sex"]
    assert ka.rows_in == len(frame) and ka.rows_suppressed == len(frame) - len(out)
    assert ka.rows_suppressed <= 0.05 * len(frame)
    assert (_class_sizes(out) >= 5).all()
    assert ka.k_achieved == int(_class_sizes(out).min()) >= 5
    assert ka.equivalence_classes == len(out[["age", "zip", "sex"]].drop_duplicates())
    assert report.conforms  # every ladder level is in the public domains
    assert set(out.index) <= set(frame.index)
    assert "id" not in out.columns and list(out.columns) == ["age", "zip", "sex", "los"]


def test_generalizes_the_qi_with_most_distinct_values_first(schema, frame):
    # age_band_5 over 18-89 gives ~15 values, zip3 gives 3 (plus the planted one): age climbs first.
    out, report = mask_table(frame, schema, MaskConfig(k=5, max_suppression=0.05, ladders=LADDERS))
    ka = report.k_anonymity
    assert ka.levels["age"] >= 1
    assert ka.generalized["age"] == LADDERS["age"][ka.levels["age"] - 1]
    assert ka.levels["sex"] == 0 and "sex" not in ka.generalized
    if ka.levels["age"] == 1:
        assert set(out["age"].dropna()) <= set(BANDS_10)


def test_no_generalization_when_suppression_alone_is_within_budget(schema, frame):
    out, report = mask_table(frame, schema, MaskConfig(k=2, max_suppression=1.0, ladders=LADDERS))
    ka = report.k_anonymity
    assert ka.levels == {"age": 0, "zip": 0, "sex": 0} and ka.generalized == {}
    assert set(out["age"].dropna()) <= set(BANDS_5)
    assert (_class_sizes(out) >= 2).all()
    assert SECRET_ZIP[:3] not in set(out["zip"].dropna())  # the unique planted row is suppressed


def test_zero_suppression_generalizes_until_no_row_is_at_risk(schema, frame):
    out, report = mask_table(frame, schema, MaskConfig(k=5, max_suppression=0.0, ladders=LADDERS))
    assert report.k_anonymity.rows_suppressed == 0 and len(out) == len(frame)
    assert (_class_sizes(out) >= 5).all()


def test_exhausted_ladders_fail_closed_with_counts_only(schema, frame):
    with pytest.raises(ConfigError) as info:
        mask_table(frame, schema, MaskConfig(k=50, max_suppression=0.0, ladders={"age": ["age_band_10"]}))
    msg = str(info.value)
    assert "k=50" in msg and f"of {len(frame)} rows" in msg and "max_suppression" in msg
    assert SECRET_ZIP not in msg and "[" not in msg.split("(e.g.")[0]


def test_missing_is_one_value_when_grouping():
    df = pd.DataFrame({"a": ["x", None, "x", None, "y"], "b": [1.0, np.nan, 1.0, np.nan, 2.0]})
    assert equivalence_class_sizes(df, ["a", "b"]).tolist() == [2, 2, 2, 2, 1]
    assert equivalence_class_sizes(df, []).tolist() == [5] * 5
    assert equivalence_class_sizes(df.iloc[:0], ["a"]).tolist() == []


def test_fewer_rows_than_k():
    df = pd.DataFrame({"q": ["a", "a", "b"]})
    with pytest.raises(ConfigError, match="3 of 3 rows"):
        k_anonymize(df, quasi_identifiers=["q"], k=5)
    out, rep = k_anonymize(df, quasi_identifiers=["q"], k=5, max_suppression=1.0)
    assert len(out) == 0 and rep.rows_suppressed == 3 and rep.k_achieved is None and rep.equivalence_classes == 0


def test_ladder_levels_read_the_source_values():
    df = pd.DataFrame({"age": ["[30-35)", "[35-40)", "[30-35)", "[35-40)"]})
    source = pd.DataFrame({"age": ["31", "36", "33", "39"]})
    out, rep = k_anonymize(df, quasi_identifiers=["age"], k=4, max_suppression=0.0,
                           ladders={"age": ["age_band_10"]}, source=source)
    assert out["age"].tolist() == ["[30-40)"] * 4 and rep.levels == {"age": 1}


def test_deterministic_and_input_untouched(schema, frame):
    before = frame.copy(deep=True)
    cfg = MaskConfig(k=5, ladders=LADDERS)
    a, ra = mask_table(frame, schema, cfg)
    b, rb = mask_table(frame, schema, cfg)
    pd.testing.assert_frame_equal(a, b)
    assert ra == rb
    pd.testing.assert_frame_equal(frame, before)


def test_report_and_logs_hold_no_values(schema, frame, caplog):
    caplog.set_level("DEBUG", logger="dpsyn")
    _, report = mask_table(frame, schema, MaskConfig(k=5, ladders=LADDERS))
    blob = report.model_dump_json() + caplog.text
    assert SECRET_ZIP not in blob and SECRET_ZIP[:3] not in blob
    assert "r17" not in blob and "[" not in report.k_anonymity.model_dump_json().replace('["', "").replace('"]', "")


# -- schema conformance and the errors of misuse -----------------------------------------------


def test_numeric_qi_generalized_to_bands_is_returned_but_reported():
    schema = parse_schema(NUMERIC_AGE)
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"age": rng.integers(18, 90, 300).astype(float),
                       "sex": pd.array(rng.choice(["F", "M"], 300), dtype="string")})
    out, report = mask_table(df, schema, MaskConfig(k=5, max_suppression=0.05, ladders={"age": ["age_band_10"]}))
    assert out["age"].dropna().str.match(r"^\[\d+-\d+\)$").all()  # exported as bands (dpsyn scrub)
    assert list(report.nonconforming_columns) == ["age"] and not report.conforms
    assert "non-numeric" in report.nonconforming_columns["age"]
    with pytest.raises(SchemaError) as info:
        report.raise_if_nonconforming(schema.name)
    msg = str(info.value)
    assert "'age'" in msg and "kanon_numeric" in msg and "[" not in msg


def test_suppress_top_level_on_non_nullable_qi_is_reported():
    schema = parse_schema(NUMERIC_AGE)
    df = pd.DataFrame({"age": [20.0, 30.0, 40.0, 50.0], "sex": pd.array(["F"] * 4, dtype="string")})
    out, report = mask_table(df, schema, MaskConfig(k=4, max_suppression=0.0, ladders={"age": ["suppress"]}))
    assert out["age"].isna().all() and len(out) == 4
    assert "missing value(s)" in report.nonconforming_columns["age"]


def test_no_quasi_identifiers_is_an_error():
    schema = parse_schema("name: noqi\ncolumns:\n  - {name: x, kind: numeric, bounds: [0, 1]}\n")
    with pytest.raises(ConfigError, match="no kept column as quasi_identifier"):
        mask_table(pd.DataFrame({"x": [0.1] * 10}), schema, MaskConfig(k=5))


def test_ladder_for_a_column_that_is_not_a_qi_is_an_error(schema, frame):
    with pytest.raises(ConfigError, match="not kept quasi-identifiers.*los"):
        mask_table(frame, schema, MaskConfig(k=5, ladders={"los": ["suppress"]}))


def test_l1_quasi_identifier_is_dropped_not_anonymized():
    schema = parse_schema(
        """
name: l1qi
columns:
  - {name: dob, kind: datetime, bounds: ["1900-01-01", "2025-01-01"], tier: L1, quasi_identifier: true}
  - {name: sex, kind: categorical, domain: [F, M], tier: L3, quasi_identifier: true}
"""
    )
    df = pd.DataFrame({"dob": pd.to_datetime(["1980-01-02"] * 6), "sex": ["F"] * 6})
    out, report = mask_table(df, schema, MaskConfig(k=5))
    assert "dob" not in out.columns and report.k_anonymity.quasi_identifiers == ["sex"]
