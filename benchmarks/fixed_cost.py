"""What a small run costs before any real work: whole-process wall time of dpsyn commands (issue 23, "fixed cost").

    python benchmarks/fixed_cost.py --runs 5 --full-runs 3 --out benchmarks/results/fixed_cost
    python benchmarks/fixed_cost.py --tree /path/to/older/checkout ...   # the same commands on another checkout

Each command runs as its own process (``python -m dpsyn_cli.main ...``) in a fresh ``DPSYN_HOME`` (the full run
also in a warm one: its second run in the same home), timed from start to exit with a monotonic clock; the table
gives the median and the range over the runs. ``--tree`` imports dpsyn from another checkout with this
environment (its editable-install hook removed), so an older commit can be measured beside the current one. The
data is the first 1,000 rows of the shipped Adult sample (public, UCI Adult; dpsyn/data/NOTICE.md). Run it alone: on
2 cores a second job slows every figure.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "dpsyn" / "data" / "adult_sample.data"

RUNNER = """
import runpy, sys
tree = sys.argv.pop(1)
if tree:
    sys.meta_path[:] = [m for m in sys.meta_path if "editable" not in repr(m)]
    sys.path.insert(0, tree)
sys.argv[0] = "dpsyn"
runpy.run_module("dpsyn_cli.main", run_name="__main__")
"""


def _time(args: list[str], *, tree: str, home: Path, expect: int) -> float:
    env = {**__import__("os").environ, "DPSYN_HOME": str(home)}
    for k in ("PREFECT_HOME", "PREFECT_API_URL", "MLFLOW_TRACKING_URI"):
        env.pop(k, None)
    t = time.monotonic()
    r = subprocess.run([sys.executable, "-c", RUNNER, tree, *args], env=env, capture_output=True, text=True)
    wall = time.monotonic() - t
    if r.returncode != expect:
        raise SystemExit(f"{' '.join(args)} exited {r.returncode}, expected {expect}: {(r.stderr or r.stdout)[-1500:]}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="runs of each quick command")
    ap.add_argument("--full-runs", type=int, default=3, help="runs of the full run (fresh and warm home)")
    ap.add_argument("--tree", default="", help="another checkout to import dpsyn from (default: this one)")
    ap.add_argument("--label", default="", help="name of this measurement in the table (default: the tree)")
    ap.add_argument("--out", type=Path, help="write OUT.json (rows appended by label) and OUT.md")
    a = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="dpsyn-fixed-cost-"))
    data = work / "adult1000.data"
    data.write_text("".join(SAMPLE.read_text().splitlines(keepends=True)[:1000]))
    commands = {
        "dpsyn --help": (["--help"], 0),
        "bad input (missing file)": (["run", "--data", str(work / "missing.csv"), "--schema", "adult", "--out",
                                      str(work / "o")], 2),
        "pre-flight refusal (1,000 rows at ε = 1: too few for the gate)": (
            ["run", "--data", str(data), "--schema", "adult", "--out", str(work / "o")], 2),
    }
    rows = []
    for name, (args, code) in commands.items():
        walls = []
        for i in range(a.runs):
            home = work / f"home-{len(rows)}-{i}"
            walls.append(_time(args, tree=a.tree, home=home, expect=code))
            shutil.rmtree(home, ignore_errors=True)
        rows.append({"command": name, "walls": walls})
    fresh, warm = [], []
    for i in range(a.full_runs):  # the full run at ε = 3: a fresh home, then a second run in the same home
        home = work / f"full-{i}"
        for j, kind in enumerate((fresh, warm)):
            out = work / f"out-{i}-{j}"
            kind.append(_time(["run", "--data", str(data), "--schema", "adult", "--out", str(out), "--epsilon", "3",
                               "--json"], tree=a.tree, home=home, expect=0))
        shutil.rmtree(home, ignore_errors=True)
    rows.append({"command": "dpsyn run, 1,000 Adult rows, ε = 3, fresh home", "walls": fresh})
    rows.append({"command": "dpsyn run, 1,000 Adult rows, ε = 3, second run in the home", "walls": warm})
    shutil.rmtree(work, ignore_errors=True)
    label = a.label or (a.tree or "this checkout")
    for r in rows:
        print(f"{label} | {r['command']} | median {statistics.median(r['walls']):.1f} s")
    if a.out:
        path = a.out.with_suffix(".json")
        path.parent.mkdir(parents=True, exist_ok=True)
        old = json.loads(path.read_text()) if path.exists() else {}
        old[label] = {"command": shlex.join(["python", *sys.argv]), "rows": rows}
        path.write_text(json.dumps(old, indent=1))
        _markdown(old, a.out.with_suffix(".md"))


def _markdown(results: dict, path: Path) -> None:
    labels = list(results)
    names = [r["command"] for r in results[labels[0]]["rows"]]
    lines = ["# Fixed cost of a small run (whole process, wall seconds)", "",
             "Median (min–max) over the runs; each command a process of its own, in a fresh DPSYN_HOME unless said;",
             "a 2-core machine, nothing else running. The full run is one run per home (n = 1 each).",
             "Commands:", ""]
    lines += [f"    {results[k]['command']}   # {k}" for k in labels]
    lines += ["", "| command | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for name in names:
        cells = []
        for k in labels:
            w = next((r["walls"] for r in results[k]["rows"] if r["command"] == name), None)
            cells.append(f"{statistics.median(w):.1f} ({min(w):.1f}–{max(w):.1f})" if w else "")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "`--tree` names a checkout of an older commit (e.g. `git worktree add /tmp/old b00f332`), run with this",
              "checkout's environment. The issue's target is ≤ 30 s for the full run and ≤ 2 s for an error; where the",
              "remaining time goes: docs/operations.md, \"What a small run costs\"."]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
