"""The CLI leaves without the interpreter's teardown (3-4 s after a run), but only after every other exit handler
has run, and with the command's own exit code."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import atexit, sys
import dpsyn_cli.main as m

def late():  # registered after the CLI's own handler, as Prefect, MLflow or logging register theirs
    open(sys.argv[1], "w").write("ran")

real_app = m.app
def app():
    atexit.register(late)
    {body}
m.app = app
m.main()
"""


@pytest.mark.parametrize(("body", "code"), [
    ("print('done')", 0),
    ("raise SystemExit(2)", 2),
    ("sys.exit(1)", 1),
    ("raise RuntimeError('boom')", 1),
])
def test_every_later_exit_handler_runs_and_the_exit_code_is_kept(tmp_path, body, code):
    marker = tmp_path / "late"
    r = subprocess.run([sys.executable, "-c", SCRIPT.format(body=body), str(marker)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == code, r.stderr[-2000:]
    assert marker.read_text() == "ran"
    if code == 0:
        assert r.stdout == "done\n"  # flushed before leaving


def test_version_through_the_entry_point():
    r = subprocess.run([sys.executable, "-m", "dpsyn_cli.main", "--version"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("dpsyn ")
