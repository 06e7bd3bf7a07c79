"""Issue 26's bars, read from the committed suite tables (benchmarks/results/suite_eps*.json):

    python benchmarks/suite_bars.py [--out benchmarks/results/suite_bars.md]

At ε = 1 and 3: dpsyn's default (pgm) has TSTR AUC (gbm and logreg, each) ≥ the best trivial baseline's and ≥
MST's, and 2-way TVD ≤ the independent baseline's and ≤ MST's; at ε = 0.3 it is not worse than the independent
baseline on either. Plus: no numeric bin holding ≥ 1 % of the real rows is empty in the synthetic table (ε ≥ 1).
Means over the seeds present; a cell with a missing method is reported as missing, never as passed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results"
TRIVIAL = ("independent", "naive_bayes")


def _means(rows: list[dict]) -> dict:
    out = {}
    for key in ("gbm", "logreg"):
        v = [r["tstr"][key]["roc_auc"] for r in rows if isinstance(r.get("tstr"), dict) and key in r["tstr"]]
        out[key] = float(np.mean(v)) if v else None
    for key in ("tvd2", "n_empty_bins"):
        v = [r[key] for r in rows if r.get(key) is not None]
        out[key] = float(np.mean(v)) if v else None
    out["seeds"] = len(rows)
    return out


def bars(eps: float) -> list[dict]:
    path = RESULTS / f"suite_eps{eps:g}.json"
    if not path.exists():
        return []
    rows = [r for r in json.loads(path.read_text())["rows"] if not r.get("error")]
    by: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        by.setdefault((r["dataset"], r["method"]), []).append(r)
    out = []
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        m = {meth: _means(rs) for (d, meth), rs in by.items() if d == ds}
        if "pgm" not in m:
            continue
        p, fails = m["pgm"], []
        for key in ("gbm", "logreg"):
            rivals = [x for x in TRIVIAL if x in m] + (["mst"] if eps >= 1 and "mst" in m else [])
            if eps < 1:
                rivals = ["independent"] if "independent" in m else []
            for x in rivals:
                if p[key] is None or m[x][key] is None or p[key] < m[x][key]:
                    fails.append(f"{key} < {x}")
        for x in (["independent", "mst"] if eps >= 1 else ["independent"]):
            if x not in m:
                fails.append(f"{x} missing")
            elif p["tvd2"] > m[x]["tvd2"]:
                fails.append(f"TVD > {x}")
        if eps >= 1 and (p["n_empty_bins"] or 0) > 0:
            fails.append("empty bins")
        out.append({"dataset": ds, "epsilon": eps, "methods": m, "fails": fails})
    return out


def _cell(m: dict, key: str, meths: tuple[str, ...]) -> str:
    return " / ".join("–" if meth not in m or m[meth][key] is None else f"{m[meth][key]:.3f}" for meth in meths)


def markdown() -> str:
    lines = ["# Issue 26's bars from the suite tables", "",
             "Command: `python benchmarks/suite_bars.py --out benchmarks/results/suite_bars.md` (reads "
             "suite_eps0.3/1/3.json; the rows' own commands are in each suite_eps*.md). Means over the seeds present. "
             "Bars at ε ≥ 1: pgm's TSTR AUC ≥ naive_bayes', independent's and MST's (gbm and logreg each), 2-way TVD ≤ "
             "independent's and MST's, no empty bin ≥ 1 %; at ε = 0.3: not worse than independent on either.", "",
             "| table | ε | seeds | gbm: pgm / independent / naive_bayes / MST | logreg: same | 2-way TVD: same | "
             "empty bins (pgm) | bars |", "|---|---|---|---|---|---|---|---|"]
    for eps in (0.3, 1.0, 3.0):
        for b in bars(eps):
            m, meths = b["methods"], ("pgm", "independent", "naive_bayes", "mst")
            verdict = "pass" if not b["fails"] else "FAIL: " + ", ".join(b["fails"])
            lines.append(f"| {b['dataset']} | {eps:g} | {m['pgm']['seeds']} | {_cell(m, 'gbm', meths)} | "
                         f"{_cell(m, 'logreg', meths)} | {_cell(m, 'tvd2', meths)} | "
                         f"{m['pgm']['n_empty_bins']:.1f} | {verdict} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    text = markdown()
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
