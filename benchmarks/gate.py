"""Validation-gate benchmark: false passes on broken tables, false fails on real splits, per dataset × ε.

    python benchmarks/gate.py --out benchmarks/results/gate

For each dataset (adult, diabetes130 one encounter per patient, titanic, nltcs: ../shared/data, tables this
project did not make), two disjoint random halves of the real rows: A is the gate's real side (``--rows`` rows,
or half the table when it is smaller), B stands in for the synthetic table. B unchanged is a table that
must pass (false-fail rate); B broken on purpose must fail (false-pass rate):

* target constant: the target set to its most common value in B;
* target shuffled: the target permuted against the other columns (its marginal unchanged);
* tail removed: the values of the widest numeric column above B's 90th percentile redrawn from those below;
* column constant: the non-target column with the most even distribution set to its most common value;
* independent: every column permuted on its own (every one-way marginal unchanged, every association gone).

On diabetes130 a last case at 20,000 rows gives 400 male rows a pregnancy code (a hard rule).
Each cell runs ``--seeds`` gates with fresh DP noise, as a run does: the noisy row count (10 % of ε alone) and
the gate's release (its 20 % share) on one accountant. The utility check needs a holdout and a DP reference
model; it is off here (``utility=false``): the rates below are those of the fidelity, tail, constant, rule and
target-signal checks. A cell reads ``passed/uninformative/failed`` over the seeds.
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

CASES = ["real split", "target constant", "target shuffled", "tail removed", "column constant", "independent"]


def load(name: str) -> tuple:
    """(schema, rows): the synthesis suite's loader (benchmarks/suite.py), its train and test splits together."""
    from suite import load as suite_load

    schema, train, test = suite_load(name)
    return schema, pd.concat([train, test], ignore_index=True)


def broken(case: str, b: pd.DataFrame, schema, rng: np.random.Generator) -> pd.DataFrame | None:
    out = b.copy()
    t = schema.target
    cols = [c for c in schema.synthesizable_columns() if c.name in out.columns]
    if case == "real split":
        return out
    if case == "target constant":
        out[t] = out[t].mode().iloc[0]
    elif case == "target shuffled":
        out[t] = out[t].to_numpy()[rng.permutation(len(out))]
    elif case == "tail removed":
        num = [c for c in cols if c.kind.value == "numeric" and c.name != t and out[c.name].nunique() > 10]
        if not num:
            return None
        c = max(num, key=lambda c: out[c.name].nunique()).name
        cut = out[c].quantile(0.9)
        low = out.loc[out[c] <= cut, c].to_numpy()
        high = out[c] > cut
        out.loc[high, c] = rng.choice(low, int(high.sum()))
    elif case == "column constant":
        other = [c.name for c in cols if c.name != t]
        c = min(other, key=lambda c: out[c].value_counts(normalize=True, dropna=False).iloc[0])
        out[c] = out[c].mode().iloc[0]
    elif case == "independent":
        for c in cols:
            out[c.name] = out[c.name].to_numpy()[rng.permutation(len(out))]
    return out


def gate_once(stats, synth, schema, config, eps: float, seed: int, n: int) -> str:
    """One gate as a run would do it; 'refused' when the noisy count cannot even bound the sensitivity."""
    from dpsyn.errors import InputError

    try:
        return _gate(stats, synth, schema, config, eps, seed, n)
    except InputError:
        return None


def _gate(stats, synth, schema, config, eps: float, seed: int, n: int):
    from dpsyn.privacy import NoiseSource, PrivacyAccountant, default_delta, plan_counts, release_counts
    from dpsyn.validation import plan_validation, validate

    acct = PrivacyAccountant(epsilon=eps, delta=default_delta(schema.population_size))
    plan = plan_counts(acct, 0.1)
    plan_validation(acct, config)
    noise = NoiseSource(secure=False, seed=seed)
    counts = release_counts({"train": n}, plan, accountant=acct, noise=noise)
    return validate(None, synth, schema, config, accountant=acct, noise=noise, real_stats=stats, counts=counts)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["adult", "diabetes130", "titanic", "nltcs"])
    ap.add_argument("--eps", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--out", default="benchmarks/results/gate")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    from dpsyn.validation import ValidationConfig, real_statistics_for
    from dpsyn.validation.rules import expand_icd9

    config = ValidationConfig(utility=False)
    partial = Path(args.out).with_suffix(".partial.jsonl")
    rows = [json.loads(x) for x in partial.read_text().splitlines()] if partial.exists() else []
    done = {(r["dataset"], r["rows"], r["epsilon"], r["case"]) for r in rows}
    t_start = time.time()
    for name in args.datasets:
        schema, df = load(name)
        rng = np.random.default_rng(0)
        perm = rng.permutation(len(df))
        n = min(args.rows, len(df) // 2)
        a, b = df.iloc[perm[:n]].reset_index(drop=True), df.iloc[perm[n:2 * n]].reset_index(drop=True)
        stats = real_statistics_for(a, schema, config)
        cases = [(c, broken(c, b, schema, np.random.default_rng(1))) for c in CASES]
        if name == "diabetes130":
            m = 20000
            a2, b2 = df.iloc[perm[:m]].reset_index(drop=True), df.iloc[perm[m:2 * m]].reset_index(drop=True)
            preg = expand_icd9(["630-679", "V22-V24", "V27"], schema.column("diag_1").domain)
            bad = b2.copy()
            idx = bad.index[:400]
            bad.loc[idx, "diag_1"], bad.loc[idx, "gender"] = preg[0], "Male"
            stats2 = real_statistics_for(a2, schema, config)
        for eps in args.eps:
            todo = [(c, s, stats, n) for c, s in cases if s is not None]
            if name == "diabetes130":
                todo += [("real split (20,000 rows)", b2, stats2, m), ("400 males with a pregnancy code", bad, stats2, m)]
            for case, synth, st, rows_n in todo:
                t0 = time.time()
                verdicts, names = [], {}
                if (name, rows_n, eps, case) in done:
                    continue
                for seed in range(args.seeds):
                    rep = gate_once(st, synth, schema, config, eps, seed, rows_n)
                    verdicts.append(rep.verdict if rep is not None else "uninformative")  # refused: not judged
                    for c in rep.failures() if rep is not None else []:
                        names[c.name] = names.get(c.name, 0) + 1
                row = {"dataset": name, "rows": rows_n, "epsilon": eps, "case": case,
                       "passed": verdicts.count("passed"), "uninformative": verdicts.count("uninformative"),
                       "failed": verdicts.count("failed"), "seeds": args.seeds,
                       "top_failures": sorted(names, key=names.get, reverse=True)[:4],
                       "seconds_per_gate": round((time.time() - t0) / args.seeds, 2)}
                rows.append(row)
                print(json.dumps(row), flush=True)
                with open(partial, "a") as f:  # resumable: a rerun skips the cells already measured
                    f.write(json.dumps(row) + "\n")
    write([r for r in rows if r["dataset"] in args.datasets], args, time.time() - t_start)
    partial.unlink()


def write(rows, args, total_s):
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = shlex.join(["python", "benchmarks/gate.py", *sys.argv[1:]])
    out.with_suffix(".json").write_text(json.dumps({"command": cmd, "total_s": total_s, "rows": rows}, indent=1))
    lines = ["# Validation gate: false passes and false fails", "", f"Command: `{cmd}` ({total_s / 60:.0f} min on 2 "
             "shared cores). Defaults of `ValidationConfig`, utility check off (no holdout here). Each cell: seeds "
             "passed / uninformative (nothing published) / failed. A real split must pass; every other case must "
             "not.", "",
             "The ε = 0.3 column is 'uninformative' at 2,000 rows by design: the preflight refuses those runs "
             "(`dpsyn.validation.preflight`). `target:signal` (the synthetic target's association with the other "
             "columns, a permutation test on the synthetic table alone) is what fails a shuffled target that the "
             "noisy real side cannot resolve (diabetes130's at 2,000 rows).", ""]
    by = {}
    for r in rows:
        by.setdefault((r["dataset"], r["rows"], r["case"]), {})[r["epsilon"]] = r
    eps = sorted({r["epsilon"] for r in rows})
    lines.append("| dataset | rows | case | " + " | ".join(f"ε = {e:g}" for e in eps) + " | failed by (most often) |")
    lines.append("|---|---|---|" + "---|" * len(eps) + "---|")
    for (ds, n, case), cells in by.items():
        vals = [f"{c['passed']}/{c['uninformative']}/{c['failed']}" if (c := cells.get(e)) else "" for e in eps]
        top = max(cells.values(), key=lambda c: c["epsilon"])["top_failures"]
        lines.append(f"| {ds} | {n:,} | {case} | " + " | ".join(vals) + f" | {', '.join(top[:3])} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
