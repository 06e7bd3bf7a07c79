"""Long CLI commands (validate, scrub, scan, audit risk and fairness, run --dataset) show progress while they work:
a line for the command and a bar per stage the library reports; under --json on a pipe nothing is drawn."""

from __future__ import annotations

import pytest
import typer

from dpsyn.errors import InputError
from dpsyn.progress import report, set_reporter
from dpsyn_cli.common import handle


def _work():
    report("gate: checks", 1, 4)
    report("gate: checks", 4, 4)
    return 42


def test_the_display_shows_the_command_and_each_reported_stage(capsys):
    assert handle(_work, as_json=False, verbose=False, progress="validate synthetic.csv") == 42
    err = capsys.readouterr().err
    assert "validate synthetic.csv" in err and "gate: checks" in err and "4/4" in err
    assert set_reporter(None) is None  # the reporter is removed afterwards


def test_json_on_a_pipe_draws_nothing(capsys):
    assert handle(_work, as_json=True, verbose=False, progress="scan for PII") == 42
    assert capsys.readouterr().err == ""


def test_a_failure_is_still_one_line_and_removes_the_reporter(capsys):
    def bad():
        report("scrub", 1, 2)
        raise InputError("the file has no header")

    with pytest.raises(typer.Exit) as e:
        handle(bad, as_json=False, verbose=False, progress="scrub data.csv")
    assert e.value.exit_code == 2
    assert "error: the file has no header" in capsys.readouterr().err
    assert set_reporter(None) is None
