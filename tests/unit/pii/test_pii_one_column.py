"""Scrubbing alone needs no synthesizable column: a table whose only column is free text."""

from __future__ import annotations

import pandas as pd
import pytest
import typer
from typer.testing import CliRunner

from dpsyn.errors import SchemaError
from dpsyn.schema import parse_schema
from dpsyn_cli.pii_cmds import register

ONE_COLUMN = """
schema_version: 1
name: notes_only
columns:
  - {name: note, kind: text, pii: free_text, tier: L2}
"""
NOTES = ["Call me at (212) 555-0199, SSN 234-56-7891.", "No change since last visit.", None]


def test_dpsyn_scrub_on_a_one_column_free_text_table(tmp_path):
    data, schema, out = tmp_path / "notes.csv", tmp_path / "notes.yaml", tmp_path / "clean.csv"
    pd.DataFrame({"note": NOTES}).to_csv(data, index=False)
    schema.write_text(ONE_COLUMN, encoding="utf-8")
    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)  # a second command keeps Typer from collapsing the app into one command
    cfg = tmp_path / "pii.yaml"
    cfg.write_text("mode: pattern\n", encoding="utf-8")
    res = CliRunner().invoke(app, ["scrub", "--data", str(data), "--schema", str(schema), "--out", str(out),
                                   "--config", str(cfg)])  # fmt: skip
    assert res.exit_code == 0, res.output
    clean = pd.read_csv(out)
    assert list(clean.columns) == ["note"]
    assert clean.loc[0, "note"] == "Call me at [PHONE_NUMBER], SSN [US_SSN]."
    assert clean.loc[1, "note"] == NOTES[1]
    assert "555-0199" not in res.output and "234-56-7891" not in res.output


def test_synthesis_still_needs_a_synthesizable_column():
    from dpsyn.synth import create

    schema = parse_schema(ONE_COLUMN)
    with pytest.raises(SchemaError, match="synthesize"):
        create("dpdsyn").fit(pd.DataFrame({"note": ["a", "b"]}), schema)
