"""dpsyn.masking.hierarchies: table-driven cases, malformed input becomes missing, registry fails closed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpsyn.errors import ConfigError, UnknownComponentError
from dpsyn.masking import (
    age_band_5,
    age_band_10,
    describe_hierarchies,
    get_hierarchy,
    icd9_category,
    icd9_chapter,
    icd10_category,
    list_hierarchies,
    month,
    register_hierarchy,
    suppress,
    year,
    zip3,
)
from dpsyn.masking.hierarchies import ICD9_CHAPTERS

NA = None  # expected: missing


def _one(fn, value, dtype=None):
    s = pd.Series([value], dtype=dtype) if dtype else pd.Series([value], dtype=object)
    out = fn(s)
    assert len(out) == 1
    v = out.iloc[0]
    return None if pd.isna(v) else v


AGE_CASES = [
    # value, 5-year band, 10-year band
    (37, "[35-40)", "[30-40)"),
    (37.9, "[35-40)", "[30-40)"),
    ("37", "[35-40)", "[30-40)"),
    (" 40 ", "[40-45)", "[40-50)"),
    (0, "[0-5)", "[0-10)"),
    (149.5, "[145-150)", "[140-150)"),
    (150, NA, NA),  # implausible (>= MAX_AGE)
    (-1, NA, NA),
    ("thirty", NA, NA),
    ("", NA, NA),
    (None, NA, NA),
    (np.nan, NA, NA),
    (np.inf, NA, NA),
    (True, NA, NA),
]


@pytest.mark.parametrize(("value", "band5", "band10"), AGE_CASES)
def test_age_bands(value, band5, band10):
    assert _one(age_band_5, value) == band5
    assert _one(age_band_10, value) == band10


def test_age_band_on_float_column_matches_diabetes_labels():
    out = age_band_10(pd.Series([5.0, 95.0, np.nan], index=[4, 2, 9]))
    assert out.iloc[:2].tolist() == ["[0-10)", "[90-100)"] and pd.isna(out.iloc[2])
    assert list(out.index) == [4, 2, 9]


@pytest.mark.parametrize(("spec", "value", "expected"), [("age_band:20", 37, "[20-40)"), ("age_band:1", 37, "[37-38)")])
def test_parametrized_age_band(spec, value, expected):
    assert _one(get_hierarchy(spec), value) == expected


POSTCODE_CASES = [
    ("postcode_prefix:3", "02139", "021"),
    ("postcode_prefix:3", "10001-1234", "100"),
    ("postcode_prefix:3", "SW1A 1AA", "SW1"),
    ("postcode_prefix:3", "k1a 0b1", "K1A"),
    ("postcode_prefix:3", "  75008", "750"),
    ("postcode_prefix:2", "75008", "75"),
    ("postcode_prefix:5", "SW1A 1AA", NA),  # the outward code has only four characters
    ("postcode_prefix:3", "12", NA),
    ("postcode_prefix:3", "@@@@", NA),
    ("postcode_prefix:3", "", NA),
    ("postcode_prefix:3", None, NA),
    ("zip3", "02139", "021"),
    ("zip3", "10001-1234", "100"),
    ("zip3", "SW1A", NA),
    ("zip3", "12", NA),
]


@pytest.mark.parametrize(("spec", "value", "expected"), POSTCODE_CASES)
def test_postcodes(spec, value, expected):
    assert _one(get_hierarchy(spec), value, dtype="string") == expected


@pytest.mark.parametrize("spec", ["postcode_prefix:3", "zip3"])
def test_numeric_postcodes_become_missing_not_wrong_prefixes(spec):
    out = get_hierarchy(spec)(pd.Series([2139.0, 10001.0]))  # leading zero already lost
    assert out.isna().all()


@pytest.mark.parametrize(
    ("value", "expected_year", "expected_month"),
    [
        ("2020-03-17", "2020-01-01", "2020-03-01"),
        ("2021-11-30 10:15", "2021-01-01", "2021-11-01"),
        (pd.Timestamp("1999-12-31"), "1999-01-01", "1999-12-01"),
        ("2020-13-45", NA, NA),
        ("not a date", NA, NA),
        ("12", NA, NA),
        ("", NA, NA),
        (None, NA, NA),
    ],
)
def test_dates(value, expected_year, expected_month):
    for fn, expected in ((year, expected_year), (month, expected_month)):
        got = _one(fn, value)
        assert (got is None and expected is None) or got == pd.Timestamp(expected)


def test_dates_keep_a_datetime_column_datetime():
    s = pd.Series(pd.to_datetime(["2020-03-17", None]))
    out = month(s)
    assert pd.api.types.is_datetime64_any_dtype(out)
    assert out.iloc[0] == pd.Timestamp("2020-03-01") and pd.isna(out.iloc[1])


ICD9_CASES = [
    # code, category, chapter
    ("250.83", "250", "240-279"),
    ("250", "250", "240-279"),
    ("8", "8", "001-139"),
    ("001.1", "001", "001-139"),
    ("139.9", "139", "001-139"),
    ("140", "140", "140-239"),
    (" 414.01", "414", "390-459"),
    ("428", "428", "390-459"),
    ("999", "999", "800-999"),
    ("V57.1", "V57", "V01-V91"),
    ("v01", "V01", "V01-V91"),
    ("V91", "V91", "V01-V91"),
    ("E888", "E888", "E000-E999"),
    ("E888.9", "E888", "E000-E999"),
    ("000", "000", NA),  # category 000 does not exist
    ("V00", "V00", NA),
    ("V92.1", "V92", NA),
    ("1000", NA, NA),
    ("25083", NA, NA),  # dotless form is ambiguous with the file's dropped zeros
    ("250.83x", NA, NA),
    ("?", NA, NA),
    ("not-a-code", NA, NA),
    ("", NA, NA),
    (None, NA, NA),
]


@pytest.mark.parametrize(("code", "category", "chapter"), ICD9_CASES)
def test_icd9(code, category, chapter):
    assert _one(icd9_category, code, dtype="string") == category
    assert _one(icd9_chapter, code, dtype="string") == chapter


def test_icd9_chapters_cover_001_to_999_without_gaps():
    assert ICD9_CHAPTERS[0][0] == 1 and ICD9_CHAPTERS[-1][1] == 999
    for (_, hi, _), (lo, _, _) in zip(ICD9_CHAPTERS, ICD9_CHAPTERS[1:], strict=False):
        assert lo == hi + 1
    for lo, hi, label in ICD9_CHAPTERS:
        assert _one(icd9_chapter, str(lo)) == label and _one(icd9_chapter, str(hi)) == label


@pytest.mark.parametrize(
    ("code", "category"),
    [
        ("E11.65", "E11"),
        ("E1165", "E11"),
        ("e11.65", "E11"),
        ("E11", "E11"),
        ("E11.", "E11"),
        ("C7A.00", "C7A"),
        ("U07.1", "U07"),
        (" I10 ", "I10"),
        ("11.65", NA),
        ("E1", NA),
        ("E11.65432", NA),
        ("EE1.1", NA),
        ("", NA),
        (None, NA),
    ],
)
def test_icd10_category(code, category):
    assert _one(icd10_category, code, dtype="string") == category


@pytest.mark.parametrize("fn", [age_band_10, icd9_category, icd9_chapter, icd10_category, zip3, year, suppress])
def test_hierarchies_keep_length_and_index_on_mixed_junk(fn):
    s = pd.Series([object(), 3.5, None, "x" * 500, b"\x00", -7], index=[10, 11, 12, 13, 14, 15], dtype=object)
    out = fn(s)
    assert list(out.index) == list(s.index)


def test_suppress_keeps_dtype_and_blanks_every_value():
    num = suppress(pd.Series([1.0, 2.0]))
    assert num.dtype == "float64" and num.isna().all()
    txt = suppress(pd.Series(["a", None], dtype="string"))
    assert txt.dtype == "string" and txt.isna().all()


# -- registry ---------------------------------------------------------------------------------


def test_registry_lists_every_builtin_with_usage():
    names = set(list_hierarchies())
    assert {"age_band", "age_band_5", "age_band_10", "postcode_prefix", "zip3", "month", "year",
            "icd9_category", "icd9_chapter", "icd10_category", "suppress"} <= names
    usage = describe_hierarchies()
    assert "postcode_prefix:N" in usage and "age_band:W" in usage and "zip3" in usage


@pytest.mark.parametrize(
    ("spec", "error", "fragment"),
    [
        ("no_such", UnknownComponentError, "postcode_prefix:N"),
        ("postcode_prefix", ConfigError, "needs an argument"),
        ("postcode_prefix:", ConfigError, "needs an argument"),
        ("postcode_prefix:0", ConfigError, "from 1 to 9"),
        ("postcode_prefix:10", ConfigError, "from 1 to 9"),
        ("postcode_prefix:three", ConfigError, "from 1 to 9"),
        ("postcode_prefix:-3", ConfigError, "from 1 to 9"),
        ("age_band:0", ConfigError, "from 1 to 150"),
        ("age_band:2.5", ConfigError, "from 1 to 150"),
        ("zip3:2", ConfigError, "takes no argument"),
    ],
)
def test_get_hierarchy_fails_closed(spec, error, fragment):
    with pytest.raises(error) as info:
        get_hierarchy(spec)
    assert fragment in str(info.value)


def test_unknown_name_lists_every_valid_name():
    with pytest.raises(UnknownComponentError) as info:
        get_hierarchy("icd11_category")
    for usage in describe_hierarchies():
        assert usage in str(info.value)


def test_spec_whitespace_is_tolerated():
    assert _one(get_hierarchy(" postcode_prefix : 2 "), "02139", ) == "02"


def test_register_parametrized_and_replace():
    def decade_factory(arg: str):
        n = int(arg)
        return lambda s: (pd.to_numeric(s, errors="coerce") // n * n).astype("Int64")

    register_hierarchy("test_round_down", decade_factory, parametrized=True, arg="N")
    try:
        assert get_hierarchy("test_round_down:10")(pd.Series([37])).tolist() == [30]
        with pytest.raises(ConfigError, match="bad argument"):
            get_hierarchy("test_round_down:x")  # the factory's ValueError becomes a ConfigError
        with pytest.raises(ValueError, match="already registered"):
            register_hierarchy("test_round_down", lambda s: s)
        register_hierarchy("test_round_down", lambda s: s, force=True)
        with pytest.raises(ConfigError, match="takes no argument"):
            get_hierarchy("test_round_down:10")
    finally:
        from dpsyn.masking import hierarchies

        hierarchies._HIERARCHIES.pop("test_round_down", None)
        hierarchies._FACTORIES.pop("test_round_down", None)


@pytest.mark.parametrize("bad", ["Upper", "with:colon", "", "1abc"])
def test_register_rejects_bad_names(bad):
    with pytest.raises(ValueError, match="lower-case"):
        register_hierarchy(bad, lambda s: s)
