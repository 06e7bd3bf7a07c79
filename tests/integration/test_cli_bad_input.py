"""Bad input exits 2 with one clear line: no traceback, no output folder, input untouched."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ADULT_LINE = "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, Male, 2174, 0, 40, United-States, <=50K\n"


def _cli(*args: str, home: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "DPSYN_HOME": str(home), "PREFECT_HOME": str(home / "prefect"),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "dpsyn_cli.main", *args], capture_output=True, text=True, env=env, timeout=120, cwd=cwd
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


# -- issue 24, finding 8: what preflight must catch before any ε is spent -------------------------------------------
def _diabetes_lines(n: int) -> list[str]:
    import gzip

    sample = Path(__file__).resolve().parents[2] / "dpsyn" / "data" / "diabetes130_sample.csv.gz"
    with gzip.open(sample, "rt", encoding="utf-8") as f:
        return [next(f) for _ in range(n)]


def _refused(r, needle: str, *, home: Path, out: Path | None = None) -> None:
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    assert not (home / "budget.db").exists()  # nothing reserved
    if out is not None:
        assert not out.exists()


@pytest.mark.slow  # a process of its own (CLI or run)
def test_a_duplicate_header_name_is_refused_by_name(tmp_path):
    lines = _diabetes_lines(300)
    head = lines[0].rstrip("\n").split(",")
    head[3] = head[2]
    data = _write(tmp_path / "dup.csv", ("".join([",".join(head) + "\n"] + lines[1:])).encode())
    before = _digest(data)
    r = _cli("run", "--data", str(data), "--schema", "diabetes130", "--out", str(tmp_path / "out"), home=tmp_path / "h")
    _refused(r, f"names {head[2]} more than once", home=tmp_path / "h", out=tmp_path / "out")
    assert _digest(data) == before


@pytest.mark.slow  # a process of its own (CLI or run)
def test_a_utf8_bom_before_the_header_is_read(tmp_path):
    data = _write(tmp_path / "bom.csv", b"\xef\xbb\xbf" + "".join(_diabetes_lines(300)).encode())
    r = _cli("run", "--data", str(data), "--schema", "diabetes130", "--out", str(tmp_path / "out"), home=tmp_path / "h")
    _refused(r, "too small for the validation gate", home=tmp_path / "h")  # read as data: the header matched


@pytest.mark.slow  # a process of its own (CLI or run)
def test_a_file_named_like_a_shipped_schema_does_not_replace_it(tmp_path, adult_sample_path):
    (tmp_path / "adult").write_text("name: mine\ncolumns: []\n")
    data = _write(tmp_path / "small.data", "".join(adult_sample_path.read_text().splitlines(True)[:129]).encode())
    r = _cli("run", "--data", str(data), "--schema", "adult", "--out", str(tmp_path / "out"), home=tmp_path / "h",
             cwd=tmp_path)
    _refused(r, "too small for the validation gate", home=tmp_path / "h")  # the shipped schema read the rows


@pytest.mark.slow  # a process of its own (CLI or run)
def test_an_unwritable_out_is_refused_before_anything_is_spent(tmp_path, adult_sample_path):
    (tmp_path / "a_file").write_text("not a folder")
    out = tmp_path / "a_file" / "out"
    r = _cli("run", "--data", str(adult_sample_path), "--schema", "adult", "--out", str(out), home=tmp_path / "h")
    _refused(r, "cannot write the output folder", home=tmp_path / "h")


@pytest.mark.slow  # a process of its own (CLI or run)
def test_an_out_that_holds_the_input_is_refused(tmp_path, adult_sample_path):
    folder = tmp_path / "data"
    folder.mkdir()
    data = _write(folder / "adult.data", adult_sample_path.read_bytes())
    r = _cli("run", "--data", str(data), "--schema", "adult", "--out", str(folder), "--overwrite",
             home=tmp_path / "h")
    _refused(r, "holds the input file", home=tmp_path / "h")
    assert data.read_bytes() == adult_sample_path.read_bytes()


@pytest.mark.slow  # a process of its own (CLI or run)
def test_scrub_refuses_to_overwrite_its_own_input(tmp_path, adult_sample_path):
    data = _write(tmp_path / "adult.csv", b"")  # content never read: refused on the paths alone
    r = _cli("scrub", "--data", str(data), "--schema", "adult", "--out", str(data), "--overwrite", home=tmp_path / "h")
    assert r.returncode == 2 and "is the input file" in r.stderr, r.stderr


@pytest.mark.slow  # a process of its own (CLI or run)
def test_a_cell_larger_than_16_mib_is_exit_2_naming_its_line(tmp_path):
    """Issue 24 (low): a 10 MB field exited 1 (an unexpected error) instead of 2."""
    big = ADULT_LINE.replace("State-gov", "x" * (17 * 1024 * 1024))
    data = _write(tmp_path / "big.data", (ADULT_LINE * 3 + big + ADULT_LINE).encode())
    r = _cli("run", "--data", str(data), "--schema", "adult", "--out", str(tmp_path / "out"), home=tmp_path / "h")
    _refused(r, "big.data line 4 holds a field larger than 16 MiB", home=tmp_path / "h", out=tmp_path / "out")


@pytest.mark.slow  # builds the demo input and reads it
def test_a_demo_too_small_for_its_gate_is_refused_up_front(tmp_path):
    """Issue 24 (low): `dpsyn demo --rows 1000` could fail its own gate after spending ε."""
    r = _cli("demo", "--rows", "1000", "--out", str(tmp_path / "out"), home=tmp_path / "h")
    assert r.returncode == 2, r.stderr
    assert "too small for the validation gate at ε = 1" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "h" / "budget.db").exists() and not (tmp_path / "out").exists()
    assert not list((tmp_path / "h" / "work").glob("*"))  # its raw-identifier input is gone too


@pytest.mark.slow  # five CLI processes
def test_run_takes_a_deployment_config_file_and_options_override_it(tmp_path, adult_sample_path):
    """Issue 23 (CLI): `dpsyn run --config FILE` takes the SynthesizeConfig a deployment takes."""
    data = _write(tmp_path / "small.data", "".join(adult_sample_path.read_text().splitlines(True)[:129]).encode())
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"data: {data}\ntable_schema: adult\nout: {tmp_path / 'out'}\nprivacy: {{epsilon: 2.0}}\n"
                   "validation: {allow_uninformative: false}\n")
    r = _cli("run", "--config", str(cfg), home=tmp_path / "h")
    _refused(r, "too small for the validation gate at ε = 2", home=tmp_path / "h")  # read from the file
    r = _cli("run", "--config", str(cfg), "--epsilon", "0.5", home=tmp_path / "h")
    _refused(r, "at ε = 0.5", home=tmp_path / "h")  # the option wins
    cfg.write_text(f"data: {data}\ntable_schema: adult\n")
    _refused(_cli("run", "--config", str(cfg), home=tmp_path / "h"), "--out is required", home=tmp_path / "h")
    cfg.write_text("- not a mapping\n")
    _refused(_cli("run", "--config", str(cfg), home=tmp_path / "h"), "must hold a mapping", home=tmp_path / "h")
    _refused(_cli("run", "--config", str(tmp_path / "nope.yaml"), home=tmp_path / "h"), "config file not found",
             home=tmp_path / "h")


def test_version_prints_and_exits_0(tmp_path):
    r = _cli("--version", home=tmp_path / "h")
    assert r.returncode == 0 and r.stdout.startswith("dpsyn ")
