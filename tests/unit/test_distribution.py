"""Issue 23: the installed distribution holds no top-level ``flows`` or ``tasks`` package (any other project's
``tasks`` would collide with it); they stay folders of the repository, which the CLI finds beside itself."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import typer

REPO = Path(__file__).resolve().parents[2]


def test_the_distribution_installs_only_dpsyn_packages():
    from setuptools import find_packages

    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_packages(where=str(REPO), include=cfg["include"], exclude=cfg.get("exclude", ()))
    assert "dpsyn" in packages and "dpsyn_cli" in packages and "dpsyn.synth" in packages
    assert {p.split(".")[0] for p in packages} == {"dpsyn", "dpsyn_cli"}, packages


def test_the_cli_finds_the_checkouts_flows_from_any_directory(tmp_path):
    """From another working directory, with a foreign top-level ``tasks`` package first on the path, the CLI's
    process imports the checkout's flows and tasks."""
    foreign = tmp_path / "site"
    (foreign / "tasks").mkdir(parents=True)
    (foreign / "tasks" / "__init__.py").write_text("FOREIGN = True\n")
    env = {**os.environ, "PYTHONPATH": str(foreign)}
    code = ("import dpsyn_cli.main, flows.synthesize, tasks.options, tasks; "
            "print(flows.synthesize.__file__); print(tasks.__file__)")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    flows_file, tasks_file = r.stdout.split()
    assert Path(flows_file).resolve() == REPO / "flows" / "synthesize.py"
    assert Path(tasks_file).resolve() == REPO / "tasks" / "__init__.py"


def test_without_the_checkout_a_command_says_what_to_do(capsys):
    from dpsyn_cli.common import handle

    def needs_flows():
        raise ModuleNotFoundError("No module named 'flows'", name="flows")

    try:
        handle(needs_flows, as_json=False, verbose=False)
    except typer.Exit as e:
        assert e.exit_code == 2
    else:
        raise AssertionError("handle did not fail")
    err = capsys.readouterr().err
    assert "needs dpsyn's repository checkout" in err and "pip install -e ." in err and "Traceback" not in err
