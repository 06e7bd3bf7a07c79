"""`dpsyn validate`: exit 0 when every check passes, 1 listing failures, 2 on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dpsyn_cli.main import app


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def _synthetic(adult_sample, tmp_path, corrupt=None):
    """A stand-in synthetic table: the real rows in another order (every distribution exact)."""
    rng = np.random.default_rng(0)
    df = adult_sample.iloc[rng.permutation(len(adult_sample))].reset_index(drop=True)
    if corrupt:
        corrupt(df)
    df["_wm"] = "0123456789abcdef"
    p = tmp_path / "synthetic.csv"
    df.to_csv(p, index=False)
    return p


def test_validate_passes_then_fails_naming_the_check(runner, adult_sample, adult_sample_path, tmp_path):
    good = _synthetic(adult_sample, tmp_path)
    res = runner.invoke(app, ["validate", "--real", str(adult_sample_path), "--synthetic", str(good),
                              "--schema", "adult", "--epsilon", "1", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["passed"] and out["failed"] == [] and 0 < out["epsilon_spent"] <= 1.0

    def shift(df):
        df["hours-per-week"] = (df["hours-per-week"] + 30).clip(upper=99)

    bad = _synthetic(adult_sample, tmp_path, shift)
    res = runner.invoke(app, ["validate", "--real", str(adult_sample_path), "--synthetic", str(bad),
                              "--schema", "adult", "--epsilon", "1"])
    assert res.exit_code == 1
    assert "FAIL ks:hours-per-week" in res.stdout


@pytest.mark.parametrize("args, message", [
    (["--epsilon", "0"], "--epsilon must be > 0"),
    (["--rules", "no-such-rules"], "rules file not found"),
])
def test_validate_bad_input_exits_2(runner, adult_sample, adult_sample_path, tmp_path, args, message):
    syn = _synthetic(adult_sample, tmp_path)
    res = runner.invoke(app, ["validate", "--real", str(adult_sample_path), "--synthetic", str(syn),
                              "--schema", "adult", "--json", *args])
    assert res.exit_code == 2, res.output
    assert message in json.loads(res.stdout)["error"]


def test_validate_missing_file_exits_2(runner, tmp_path):
    res = runner.invoke(app, ["validate", "--real", str(tmp_path / "nope.csv"), "--synthetic",
                              str(tmp_path / "nope2.csv"), "--schema", "adult"])
    assert res.exit_code == 2 and "not found" in res.output
