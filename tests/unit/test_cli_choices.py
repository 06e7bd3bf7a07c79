"""The CLI's fixed choices: the same names as the registries, listed by --help, a typo refused at parse time."""

from __future__ import annotations

from typer.testing import CliRunner

from dpsyn.privacy import list_accountants
from dpsyn.synth import list_synthesizers
from dpsyn_cli.common import AccountantName, SynthesizerName
from dpsyn_cli.main import app


def test_choices_are_the_registries_names():
    assert sorted(m.value for m in SynthesizerName) == sorted(list_synthesizers())
    assert sorted(m.value for m in AccountantName) == sorted(list_accountants())


def test_a_typo_fails_at_parse_time_naming_the_choices():
    r = CliRunner().invoke(app, ["run", "--data", "x.csv", "--schema", "adult", "--out", "o", "--synthesizer", "pgn"])
    assert r.exit_code == 2
    assert "pgm" in r.output and "dpdsyn" in r.output


def test_help_lists_the_choices():
    r = CliRunner().invoke(app, ["audit", "fairness", "--help"])
    assert r.exit_code == 0 and "dpsgd-s" in r.output and "rdp" in r.output
