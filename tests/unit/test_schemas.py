"""The shipped schemas load, read the shipped sample, and malformed schemas fail clearly."""

from __future__ import annotations

import hashlib
import importlib.util
from importlib import resources
from pathlib import Path

import pytest

from dpsyn.errors import SchemaError
from dpsyn.io import read_table
from dpsyn.schema import ColumnKind, Tier, list_builtin_schemas, load_schema

REPO_ROOT = Path(__file__).resolve().parents[2]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
ADULT_DIR = SHARED_DATA / "adult"
DIABETES_CSV = SHARED_DATA / "diabetes130" / "diabetic_data.csv"
DATA_DIR = resources.files("dpsyn") / "data"


def _sample_path() -> Path:
    return Path(str(DATA_DIR / "adult_sample.data"))


# -- shipped schemas -------------------------------------------------------------------


def test_expected_schemas_are_shipped():
    assert {"adult", "adult_demo", "diabetes130"} <= set(list_builtin_schemas())


@pytest.mark.parametrize("name", list_builtin_schemas())
def test_every_shipped_schema_loads(name):
    schema = load_schema(name)
    assert schema.name == name
    assert schema.columns
    assert schema.synthesizable_columns()
    assert schema.fingerprint() == load_schema(name).fingerprint()
    if schema.target is not None:
        assert schema.column(schema.target).kind == ColumnKind.categorical


def test_adult_schema_reads_shipped_sample():
    schema = load_schema("adult")
    df = read_table(_sample_path(), schema)
    assert df.shape == (4000, 15)
    assert list(df.columns) == schema.column_names
    assert set(df["income"].dropna()) <= set(schema.column("income").domain)
    assert df["income"].notna().all()


def test_sample_hash_is_recorded_in_notice():
    digest = hashlib.sha256(_sample_path().read_bytes()).hexdigest()
    notice = (DATA_DIR / "NOTICE.md").read_text(encoding="utf-8")
    assert digest in notice
    assert "CC BY 4.0" in notice and "10.24432/C5XW20" in notice


def test_sample_file_keeps_original_line_format():
    raw = _sample_path().read_bytes()
    assert raw.endswith(b"\n") and not raw.endswith(b"\n\n")
    lines = raw.decode("utf-8").splitlines()
    assert len(lines) == 4000
    assert all(len(line.split(", ")) == 15 for line in lines)


def test_diabetes130_schema_structure():
    schema = load_schema("diabetes130")
    assert len(schema.columns) == 50
    assert schema.target == "readmitted"
    assert schema.column("readmitted").domain == ["NO", ">30", "<30"]
    for ident in ("encounter_id", "patient_nbr"):
        col = schema.column(ident)
        assert (col.kind, col.pii.value, col.tier) == (ColumnKind.identifier, "medical_record", Tier.L1)
    icd9 = schema.column("diag_1").domain
    assert len(icd9) == 999 + 91 + 200
    assert {"1", "8", "38", "250", "999", "V01", "V57", "V91", "E800", "E888", "E999"} <= set(icd9)
    assert not {"008", "250.83", "V00", "E799"} & set(icd9)
    for diag in ("diag_1", "diag_2", "diag_3"):
        col = schema.column(diag)
        assert col.domain == icd9 and col.generalize == "icd9_category" and col.nullable and col.tier == Tier.L2
    assert schema.column("time_in_hospital").bounds == (1.0, 14.0)
    assert schema.column("number_diagnoses").bounds == (1.0, 16.0)


# -- malformed schemas -----------------------------------------------------------------

_GOOD_COL = "  - {name: a, kind: categorical, domain: [u, v]}\n"

MALFORMED = [
    pytest.param("name: x\ncolumns: [\n", "not valid YAML", id="bad-yaml"),
    pytest.param("- just\n- a list\n", "expected a mapping", id="not-a-mapping"),
    pytest.param("name: x\ncolumns:\n  - {name: a, kind: categorical}\n", "need a public 'domain'", id="no-domain"),
    pytest.param(
        "name: x\ncolumns:\n  - {name: a, kind: numeric, bounds: [5, 1]}\n", "low < high", id="bounds-low-gt-high"
    ),
    pytest.param("name: x\ncolumns:\n  - {name: a, kind: numeric}\n", "need public 'bounds", id="no-bounds"),
    pytest.param(
        "name: x\ncolumns:\n  - {name: a, kind: numeric, bounds: [0, 10], bins: [0, 5, 9]}\n",
        "bins must start at bounds[0] and end at bounds[1]",
        id="bins-off-bounds",
    ),
    pytest.param("name: x\ncolumns:\n" + _GOOD_COL + _GOOD_COL, "duplicate column names: a", id="duplicate-columns"),
    pytest.param("name: x\ntarget: y\ncolumns:\n" + _GOOD_COL, "target 'y' is not a column", id="target-not-a-column"),
    pytest.param(
        "name: x\ncolumns:\n  - {name: a, kind: categorical, domain: [u], colour: red}\n",
        "colour",
        id="unknown-column-key",
    ),
    pytest.param("name: x\nowner: me\ncolumns:\n" + _GOOD_COL, "owner", id="unknown-top-level-key"),
    pytest.param(
        "name: x\ncolumns:\n  - {name: a, kind: categorical, domain: [u, u]}\n", "duplicate categories", id="dup-domain"
    ),
    pytest.param("name: x\ncolumns:\n  - {name: a, kind: number}\n", "kind", id="unknown-kind"),
    pytest.param("extends: diabetes13\nname: x\n", "extends: 'diabetes13' is not a shipped schema (one of: adult",
                 id="extends-unknown"),
    pytest.param("extends: diabetes130\nprivacy_unit: {column: patient_nbr, max_rows_per_person: 2}\n",
                 "a schema that extends 'diabetes130' needs a name of its own", id="extends-without-name"),
    pytest.param("extends: diabetes130\nname: x\nprivacy_unit: {column: race, max_rows_per_person: 2}\n",
                 "privacy_unit.column 'race' must be an identifier column", id="extends-then-validated"),
]


@pytest.mark.parametrize(("text", "expected"), MALFORMED)
def test_malformed_schema_raises_one_line_schema_error(tmp_path, text, expected):
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SchemaError) as info:
        load_schema(path)
    message = str(info.value)
    assert "\n" not in message
    assert expected in message
    assert str(path) in message


def test_missing_schema_file_names_the_builtins(tmp_path):
    with pytest.raises(SchemaError, match="not found.*adult"):
        load_schema(tmp_path / "nope.yaml")


def test_non_utf8_schema_file(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(SchemaError, match="not UTF-8"):
        load_schema(path)


# -- the full public datasets, where this checkout has them -------------------------------

needs_adult = pytest.mark.skipif(
    not (ADULT_DIR / "adult.data").is_file() or not (ADULT_DIR / "adult.test").is_file(),
    reason=f"UCI Adult files not found under {ADULT_DIR}",
)
needs_diabetes = pytest.mark.skipif(not DIABETES_CSV.is_file(), reason=f"{DIABETES_CSV} not found")


@needs_adult
@pytest.mark.parametrize(("filename", "n_rows"), [("adult.data", 32561), ("adult.test", 16281)])
def test_adult_schema_reads_full_files(filename, n_rows):
    df = read_table(ADULT_DIR / filename, load_schema("adult"), check_domains=True)
    assert df.shape == (n_rows, 15)
    assert set(df["income"]) == {"<=50K", ">50K"}


@needs_adult
def test_shipped_sample_is_reproducible_from_adult_data():
    script = REPO_ROOT / "benchmarks" / "make_adult_sample.py"
    spec = importlib.util.spec_from_file_location("make_adult_sample", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    raw = (ADULT_DIR / "adult.data").read_bytes()
    assert hashlib.sha256(raw).hexdigest() == module.EXPECTED_SOURCE_SHA256
    assert module.sample_lines(raw) == _sample_path().read_bytes()
    source_lines = set(raw.split(b"\n"))
    assert all(line in source_lines for line in _sample_path().read_bytes().splitlines())


@needs_diabetes
def test_diabetes130_schema_reads_full_file():
    schema = load_schema("diabetes130")
    df = read_table(DIABETES_CSV, schema, check_domains=True)  # diag_* are skipped: generalized later
    assert df.shape == (101766, 50)
    assert df["readmitted"].value_counts().to_dict() == {"NO": 54864, ">30": 35545, "<30": 11357}
    icd9 = set(schema.column("diag_1").domain)
    for diag in ("diag_1", "diag_2", "diag_3"):
        category = df[diag].dropna().str.split(".").str[0]  # the 3-character ICD-9 category
        assert category.isin(icd9).all(), diag
    for col in schema.columns:
        if col.kind == ColumnKind.numeric:
            lo, hi = col.numeric_bounds()
            assert df[col.name].between(lo, hi).all(), col.name


def test_diabetes130_patients_is_diabetes130_per_patient_with_its_rules():
    """The shipped person-level diabetes130 (issue 21): the base's columns, target and population, the patient as
    the unit, and the base's shipped clinical rules in the gate."""
    from dpsyn.validation.config import ValidationConfig
    from dpsyn.validation.gate import gate_rules

    base, per = load_schema("diabetes130"), load_schema("diabetes130_patients")
    assert base.privacy_unit is None and base.extends is None
    assert per.extends == "diabetes130" and per.privacy_unit.column == "patient_nbr"
    assert per.privacy_unit.max_rows_per_person == 3
    assert per.columns == base.columns and (per.target, per.population) == (base.target, base.population)
    assert per.unit_kwargs() == {"unit": "patient_nbr", "rows_per_unit": 3}
    assert gate_rules(ValidationConfig(), per).name == gate_rules(ValidationConfig(), base).name
    assert per.fingerprint() != base.fingerprint()


def test_a_users_schema_extends_a_shipped_one_in_a_few_lines(tmp_path):
    """Declaring a unit on a shipped schema needs no copy of its columns; a chain resolves, the top-level keys of
    the extending file win, and the rules follow the chain."""
    from dpsyn.validation.config import ValidationConfig
    from dpsyn.validation.gate import gate_rules

    p = tmp_path / "mine.yaml"
    p.write_text("extends: diabetes130_patients\nname: my_d130\nprivacy_unit: {column: patient_nbr, "
                 "max_rows_per_person: 5}\npopulation: my-hospital\n")
    mine = load_schema(p)
    assert (mine.name, mine.extends, mine.population) == ("my_d130", "diabetes130_patients", "my-hospital")
    assert mine.privacy_unit.max_rows_per_person == 5 and mine.target == "readmitted"
    assert len(mine.columns) == len(load_schema("diabetes130").columns)
    assert gate_rules(ValidationConfig(), mine) is not None  # diabetes130's rules, two steps up
    p.write_text("extends: adult\nname: my_adult\n")
    assert gate_rules(ValidationConfig(), load_schema(p)) is None  # adult ships no rules
