"""Whole-person canary audit (issue 21): is the per-patient guarantee empirically consistent, and is a row-level
guarantee a per-patient one?

    python benchmarks/audit_person.py --eps 1 --rows 20 --seeds 0 1 --out benchmarks/results/audit_person

The one-run audit of dpsyn.audit.canaries (Steinke, Nasr & Jagielski 2023) with *persons* as canaries: m made-up
patients, each with ``--rows`` encounters that all carry one record drawn uniformly over diabetes130's public
encoding plus an audit column in which each canary has a value of its own (real encounters: ``none``), each
patient joining the training encounters (all of ../shared/data/diabetes130's training patients,
split as in benchmarks/relational.py) with all their rows, or not at all, with probability 1/2. Adding or removing
one canary is adding or removing one person: the neighbouring relation of a person-level guarantee. One fit per
(method, seed); each canary is scored white-box by the fitted ``pgm``'s log-likelihood of its record (dominated by
the model's probability of the canary's own audit cell, i.e. by the noisy one-way release of that column); guesses IN
for the top m/10 and OUT for the bottom m/10; ε lower bound at 95 % confidence.

* ``unit``: dpsyn with ``patient_nbr`` as the privacy unit (bound k = 3): a canary's rows are bounded to 3 like
  anyone's and every mechanism is charged per patient. Bar: ε_lb ≤ ε.
* ``row``: today's row-level ``pgm`` at the same ε, which claims ε per *row*; per patient it is only
  ``rows`` · ε (group privacy). The audit tests the per-patient reading of that claim: ε_lb > ε refutes it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

DELTA = 1e-5
K = 3


AUDIT_COLUMN = "audit_cell"


def with_audit_column(schema, m: int):
    """The schema plus one categorical column whose domain gives every canary a cell of its own (real rows hold
    ``none``): the canary's influence on the released one-way marginal of that column is what the score reads."""
    from dpsyn.schema import Column, ColumnKind

    col = Column(name=AUDIT_COLUMN, kind=ColumnKind.categorical, domain=["none"] + [f"c{i}" for i in range(m)])
    cols = list(schema.columns)
    at = next((i for i, c in enumerate(cols) if c.name == schema.target), len(cols))
    return schema.model_copy(update={"columns": cols[:at] + [col] + cols[at:]})


def canary_persons(schema, m: int, rows: int, rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(one record per canary, the canaries' encounters: ``rows`` copies each with a canary patient id). Each
    canary is a record drawn uniformly over the public encoding with its own audit cell."""
    from dpsyn.audit.canaries import make_canaries

    records = make_canaries(schema, m, rng=rng)
    records[AUDIT_COLUMN] = [f"c{i}" for i in range(m)]
    rows_df = records.loc[np.repeat(np.arange(m), rows)].reset_index(drop=True)
    rows_df["patient_nbr"] = pd.Series([f"canary-{i}" for i in np.repeat(np.arange(m), rows)], dtype="string")
    return records, rows_df


def audit_once(method: str, schema, train: pd.DataFrame, eps: float, seed: int, m: int, rows: int) -> dict:
    from dpsyn.audit.canaries import run_audit
    from dpsyn.schema import PrivacyUnit
    from dpsyn.synth import create

    rng = np.random.default_rng(1000 + seed)
    schema = with_audit_column(schema, m)
    train = train.assign(**{AUDIT_COLUMN: "none"})
    records, canary_rows = canary_persons(schema, m, rows, rng)
    included = rng.random(m) < 0.5
    joined = canary_rows.loc[np.repeat(included, rows)]
    for c in train.columns:
        if c not in joined.columns:
            joined[c] = pd.NA
    data = pd.concat([train, joined[list(train.columns)]], ignore_index=True)
    data = data.iloc[rng.permutation(len(data))].reset_index(drop=True)
    use = schema.model_copy(update={"privacy_unit": PrivacyUnit(column="patient_nbr", max_rows_per_person=K)}) \
        if method == "unit" else schema.model_copy(update={"privacy_unit": None})
    privacy = {"epsilon": eps, "delta": DELTA, "secure_rng": False, "noise_seed": seed}
    t0 = time.time()
    model = create("pgm", {}, privacy=privacy).fit(data, use)
    fit_s = time.time() - t0
    res = run_audit(model.log_likelihood(records), included, delta=DELTA, score="log-likelihood (white-box)",
                    rng=np.random.default_rng(seed))
    return {"method": method, "epsilon": eps, "seed": seed, "rows_per_canary": rows,
            "claim": f"ε={eps:g} per patient" if method == "unit" else f"ε={eps:g} per row (≤ {rows * eps:g} per patient)",
            "epsilon_spent": model.privacy_["epsilon_spent"], "fit_s": round(fit_s, 1), **res.model_dump()}


def main(argv=None):
    from relational import load

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0])
    ap.add_argument("--rows", type=int, default=20, help="encounters per canary patient")
    ap.add_argument("--canaries", type=int, default=1000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--methods", nargs="+", default=["unit", "row"], choices=["unit", "row"])
    ap.add_argument("--out", default="benchmarks/results/audit_person")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    out = Path(args.out)
    path = out.with_suffix(".json")
    saved = json.loads(path.read_text()) if path.exists() else {"rows": []}
    saved["command"] = "python benchmarks/audit_person.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    schema, train, _ = load()
    done = {(r["method"], r["epsilon"], r["seed"], r["rows_per_canary"]) for r in saved["rows"]}
    for eps in args.eps:
        for seed in args.seeds:
            for method in args.methods:
                if (method, eps, seed, args.rows) in done:
                    continue
                r = audit_once(method, schema, train, eps, seed, args.canaries, args.rows)
                print({k: r[k] for k in ("method", "epsilon", "seed", "correct", "epsilon_lower_bound", "fit_s")},
                      flush=True)
                saved["rows"].append(r)
                path.write_text(json.dumps(saved, indent=1))
    write_markdown(saved, out.with_suffix(".md"), args)


def write_markdown(saved: dict, path: Path, args) -> None:
    lines = ["# Whole-person canary audit (diabetes130, patient_nbr)", "",
             f"Command: `{saved['command']}`. {args.canaries} canary patients, each with the stated number of "
             f"identical encounters, each included (all rows) with probability 1/2; white-box score: the fitted "
             f"pgm's log-likelihood of the canary's record; guesses: top and bottom {args.canaries // 10}; "
             f"δ = {DELTA:g}; 95 % confidence. A lower bound above the claimed ε per patient refutes it. Machine: 2 "
             "cores, shared with other jobs while this ran (fit times inflated).", "",
             "| method | claim | ε per patient claimed | rows per canary | seed | ε spent (accountant) | correct / guesses "
             "| ε lower bound | verdict (per patient) | fit s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|---:|"]
    for r in sorted(saved["rows"], key=lambda r: (r["epsilon"], r["rows_per_canary"], r["method"], r["seed"])):
        verdict = "claim refuted" if r["epsilon_lower_bound"] > r["epsilon"] else "consistent"
        lines.append(f"| {r['method']} | {r['claim']} | {r['epsilon']:g} | {r['rows_per_canary']} | {r['seed']} | "
                     f"{r['epsilon_spent']:.3f} | {r['correct']} / {r['k_in'] + r['k_out']} | "
                     f"{r['epsilon_lower_bound']:.3f} | {verdict} | {r['fit_s']} |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
