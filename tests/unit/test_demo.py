"""build_demo_input writes a deterministic, readable demo table with known fake PII."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

from dpsyn.demo import DemoInput, build_demo_input
from dpsyn.errors import InputError
from dpsyn.io import read_table
from dpsyn.schema import ColumnKind, load_schema

REPO_ROOT = Path(__file__).resolve().parents[2]
N = 150

SSN_RE = re.compile(r"^(\d{3})-(\d{2})-(\d{4})$")
PHONE_RE = re.compile(r"^(\(\d{3}\) |\d{3}-)555-01\d{2}$")
EMAIL_RE = re.compile(r"^[a-z0-9._]+@example\.(com|org|net)$")


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> DemoInput:
    return build_demo_input(tmp_path_factory.mktemp("demo"), n_rows=N, seed=7)


@pytest.fixture(scope="module")
def demo_df(demo):
    return read_table(demo.data_path, load_schema(demo.schema_path))


def test_writes_csv_and_schema(demo):
    assert demo.data_path.name == "adult_demo.csv" and demo.data_path.is_file()
    assert demo.schema_path.name == "adult_demo.yaml" and demo.schema_path.is_file()
    shipped = (resources.files("dpsyn") / "schemas" / "adult_demo.yaml").read_text(encoding="utf-8")
    assert demo.schema_path.read_text(encoding="utf-8") == shipped


def test_deterministic_for_a_seed(tmp_path, demo):
    again = build_demo_input(tmp_path / "again", n_rows=N, seed=7)
    assert again.data_path.read_bytes() == demo.data_path.read_bytes()
    assert again.seeded_values == demo.seeded_values
    other = build_demo_input(tmp_path / "other", n_rows=N, seed=8)
    assert other.data_path.read_bytes() != demo.data_path.read_bytes()


def test_reads_with_its_schema(demo, demo_df):
    schema = load_schema(demo.schema_path)
    assert schema.name == "adult_demo" and schema.target == "income"
    assert demo_df.shape == (N, 20)
    assert list(demo_df.columns) == schema.column_names
    header = demo.data_path.read_text(encoding="utf-8").splitlines()[0]
    assert header.split(",") == schema.column_names
    kinds = {c.name: (c.kind, c.pii.value, c.tier.value) for c in schema.columns}
    assert kinds["name"] == (ColumnKind.identifier, "person", "L1")
    assert kinds["email"] == (ColumnKind.identifier, "email", "L1")
    assert kinds["ssn"] == (ColumnKind.identifier, "ssn", "L1")
    assert kinds["phone"] == (ColumnKind.identifier, "phone", "L1")
    assert kinds["note"] == (ColumnKind.text, "free_text", "L2")


def test_adult_columns_are_the_shipped_sample(demo_df):
    with resources.as_file(resources.files("dpsyn") / "data" / "adult_sample.data") as p:
        sample = read_table(p, load_schema("adult")).iloc[:N]
    for col in sample.columns:
        assert demo_df[col].equals(sample[col]), col


def test_template_uses_only_columns_without_hyphens():
    schema = load_schema("adult_demo")
    template = schema.column("note").template
    fields = re.findall(r"{([^{}]+)}", template)
    assert fields and all(f in schema.column_names and "-" not in f for f in fields)
    row = {c: "x" for c in schema.column_names}
    assert template.format(**row)


def test_every_seeded_value_is_in_the_raw_file(demo):
    raw = demo.data_path.read_text(encoding="utf-8")
    missing = [v for v in demo.seeded_values if v not in raw]
    assert not missing


def test_seeded_values_cover_every_identifier(demo, demo_df):
    seeded = set(demo.seeded_values)
    assert len(seeded) == len(demo.seeded_values)
    for col in ("name", "email", "ssn", "phone"):
        values = demo_df[col]
        assert values.notna().all() and values.is_unique, col
        assert set(values) <= seeded, col
    for full in demo_df["name"]:
        first, last = full.split(" ")
        assert first in seeded and last in seeded
    for full, note in zip(demo_df["name"], demo_df["note"], strict=True):
        assert full in note


def test_identifier_formats(demo_df):
    for ssn in demo_df["ssn"]:
        m = SSN_RE.match(ssn)
        assert m, "bad SSN format"
        area, group, serial = m.groups()
        assert area != "000" and area != "666" and not area.startswith("9")
        assert group != "00" and serial != "0000"
        assert ssn not in ("078-05-1120", "123-45-6789")
    assert all(PHONE_RE.match(p) for p in demo_df["phone"])
    assert all(EMAIL_RE.match(e) for e in demo_df["email"])
    notes = demo_df["note"]
    assert notes.str.contains("@").any() and notes.str.contains("555-01").any()


def test_full_sample_by_default(tmp_path):
    d = build_demo_input(tmp_path, seed=0)
    df = read_table(d.data_path, load_schema(d.schema_path))
    assert len(df) == 4000
    assert df["workclass"].isna().any()  # "?" written for missing, as in the original
    assert len(set(d.seeded_values)) >= 4 * 4000


@pytest.mark.parametrize("n_rows", [0, -1, 4001, 2.5])
def test_bad_n_rows(tmp_path, n_rows):
    with pytest.raises(InputError, match="n_rows"):
        build_demo_input(tmp_path, n_rows=n_rows)


def test_demo_does_not_import_prefect_or_mlflow():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    code = "import sys, dpsyn.demo; print(sorted(m for m in ('prefect', 'mlflow') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "[]"

