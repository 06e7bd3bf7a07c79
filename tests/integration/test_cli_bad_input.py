"""Bad input exits 2 with one clear line: no traceback, no output folder, input untouched."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ADULT_LINE = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K\n"


def _cli(*args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPSYN_HOME": str(home), "PREFECT_HOME": str(home / "prefect")}
    return subprocess.run(
        [sys.executable, "-m", "dpsyn_cli.main", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _digest(p: Path) -> str | None:
    return hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else None


def _write(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


CASES = {
    "missing file": (lambda d: d / "nope.csv", "adult", "not found"),
    "empty file": (lambda d: _write(d / "empty.data", b""), "adult", "empty"),
    "columns do not match": (lambda d: _write(d / "short.data", b"39, State-gov, 77516\n"), "adult", "fields"),
    "not UTF-8": (lambda d: _write(d / "latin1.data", ADULT_LINE.replace("State-gov", "Stat\xe9-gov").encode("latin-1")),
                  "adult", "UTF-8"),
    "malformed schema": (lambda d: _write(d / "ok.data", ADULT_LINE.encode()),
                         "MALFORMED", "malformed schema"),
    "value outside domain": (lambda d: _write(d / "dom.data", ADULT_LINE.replace("State-gov", "ZZ-SECRET").encode()),
                             "adult", "outside the declared domain"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_exits_2(case, tmp_path):
    make, schema, needle = CASES[case]
    data = make(tmp_path)
    if schema == "MALFORMED":
        schema = str(_write(tmp_path / "bad.yaml", b"name: x\ncolumns: [ {name: a, kind: numeric} ]\n"))
    before = _digest(data)
    out = tmp_path / "out"
    r = _cli("run", "--data", str(data), "--schema", schema, "--out", str(out), home=tmp_path / "home")
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ") and needle in lines[0]
    assert "Traceback" not in r.stderr + r.stdout
    assert "ZZ-SECRET" not in r.stderr + r.stdout
    assert not out.exists()
    assert _digest(data) == before


@pytest.mark.parametrize("eps", ["0", "-1"])
def test_nonpositive_epsilon_exits_2(eps, tmp_path, adult_sample_path):
    out = tmp_path / "out"
    r = _cli("run", "--data", str(adult_sample_path), "--schema", "adult", "--out", str(out), "--epsilon", eps,
             home=tmp_path / "home")
    assert r.returncode == 2
    assert "epsilon" in r.stderr and "Traceback" not in r.stderr
    assert not out.exists()


def test_non_empty_output_is_refused(tmp_path, adult_sample_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    r = _cli("run", "--data", str(adult_sample_path), "--schema", "adult", "--out", str(out), home=tmp_path / "home")
    assert r.returncode == 2 and "not empty" in r.stderr
    assert (out / "keep.txt").read_text() == "mine"


def test_json_error_is_one_object(tmp_path):
    r = _cli("run", "--data", str(tmp_path / "nope.csv"), "--schema", "adult", "--out", str(tmp_path / "o"), "--json",
             home=tmp_path / "home")
    import json

    assert r.returncode == 2
    obj = json.loads(r.stdout)
    assert obj["exit_code"] == 2 and "not found" in obj["error"]


def test_usage_error_exits_2(tmp_path):
    r = _cli("run", "--schema", "adult", home=tmp_path / "home")
    assert r.returncode == 2
