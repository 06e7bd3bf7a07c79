"""Dataset schemas (dpsyn.relational.schema): the shipped synthea dataset, and clear errors for bad ones."""

from __future__ import annotations

import pytest

from dpsyn.errors import SchemaError
from dpsyn.relational import load_dataset_schema, parse_dataset_schema

_BASE = """
schema_version: 1
kind: dataset
name: t
person: {table: patients, key: Id}
tables:
  - {name: patients, schema: %s}
  - name: conditions
    schema: %s
    foreign_key: PATIENT
    max_rows_per_person: 10
"""


def _paths():
    from importlib import resources

    d = resources.files("dpsyn") / "schemas" / "datasets"
    return str(d / "synthea_patients.yaml"), str(d / "synthea_conditions.yaml")


def test_shipped_synthea_dataset():
    ds = load_dataset_schema("synthea")
    assert ds.tables() == ["patients", "conditions", "medications"]
    assert ds.unit == "patients.Id"
    assert "add/remove one person (patients.Id)" in ds.relation() and "at most 100 conditions" in ds.relation()
    cond = ds.children[0]
    assert cond.count_edges()[-1] == 100 and cond.count_edges()[0] == 0
    assert set(cond.ref.select) == {"DESCRIPTION"}


def test_a_child_needs_its_key_and_bound():
    p, c = _paths()
    text = (_BASE % (p, c)).replace("    max_rows_per_person: 10\n", "")
    with pytest.raises(SchemaError, match="max_rows_per_person"):
        parse_dataset_schema(text)


def test_conditioning_on_an_unknown_person_column_is_refused():
    p, c = _paths()
    text = _BASE % (p, c) + "    condition_on: [NOPE]\n"
    with pytest.raises(SchemaError, match="conditions on 'NOPE'"):
        parse_dataset_schema(text)


def test_selecting_a_non_text_column_is_refused():
    p, c = _paths()
    text = _BASE % (p, c) + "    select: {START: {}}\n"
    with pytest.raises(SchemaError, match="declare it kind: text"):
        parse_dataset_schema(text)


def test_foreign_key_must_be_an_identifier():
    p, c = _paths()
    text = (_BASE % (p, c)).replace("foreign_key: PATIENT", "foreign_key: DESCRIPTION")
    with pytest.raises(SchemaError, match="must be an identifier column"):
        parse_dataset_schema(text)


def test_unknown_dataset_name():
    with pytest.raises(SchemaError, match="dataset schema not found"):
        load_dataset_schema("no_such_dataset")


def test_person_flags_and_target_are_read():
    ds = load_dataset_schema("synthea")
    assert ds.target == "DEATHDATE" and ds.target_known_column == "DEATHDATE__known"
    cond = ds.children[0]
    assert cond.flag_columns()["conditions__hypertension"] == "hypertension"
    assert cond.ref.person_flags.label("copd") == "chronic obstructive pulmonary disease"
    assert cond.ref.person_flags.label("heart_failure") == "heart failure"


@pytest.mark.parametrize(("flags", "message"), [
    ("{column: NOPE, patterns: {a: a}}", "not a text or categorical column"),
    ("{column: DESCRIPTION, patterns: {a: '('}}", "not a regular expression"),
    ("{column: DESCRIPTION, patterns: {bad-name: a}}", "letters, digits and _ only"),
    ("{column: DESCRIPTION, patterns: {copd: emphysema}}", "label 'copd' does not match its pattern"),
    ("{column: DESCRIPTION, patterns: {a: a}, labels: {b: b}}", "names no pattern"),
])
def test_bad_person_flags_are_refused_with_what_to_fix(flags, message):
    p, c = _paths()
    with pytest.raises(SchemaError, match=message):
        parse_dataset_schema(_BASE % (p, c) + f"    person_flags: {flags}\n")


def test_a_target_must_be_a_categorical_or_nullable_person_column():
    p, c = _paths()
    with pytest.raises(SchemaError, match="target 'GENDER_X' is not a synthesizable column"):
        parse_dataset_schema(_BASE % (p, c) + "target: GENDER_X\n")
    with pytest.raises(SchemaError, match="must be categorical, or nullable"):
        parse_dataset_schema(_BASE % (p, c) + "target: BIRTHDATE\n")
    assert parse_dataset_schema(_BASE % (p, c) + "target: GENDER\n").target_known_column is None
