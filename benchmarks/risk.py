"""Privacy-risk attacks on dpsyn's synthesizers (Adult): shadow-model MIA, attribute inference, DCR.

    python benchmarks/risk.py --eps 1 4 --methods copy dpdsyn --out benchmarks/results/risk

Per (method, ε):

* shadow-model membership inference (dpsyn.audit.risk.shadow_mia): ``--targets``
  target records (half the rarest of the reference data, half at random), each
  included with probability 1/2 in a run of ``--train-rows`` rows; the attack
  learns from ``--shadows`` runs and is scored on ``--eval-runs`` others; TPR at
  FPR 0.1%, 1%, 10% and AUC, for all targets and for the rare half;
* attribute inference on the schema's L2 columns and the DCR diagnostic, from
  one fit on ``--train-rows`` rows of adult.data against as many adult.test rows.

``copy`` (outputs its training rows) is the non-private control every attack
must catch.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 4.0])
    ap.add_argument("--methods", nargs="+", default=["copy", "dpdsyn"])
    ap.add_argument("--targets", type=int, default=100)
    ap.add_argument("--shadows", type=int, default=4)
    ap.add_argument("--eval-runs", type=int, default=2)
    ap.add_argument("--train-rows", type=int, default=3000)
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="benchmarks/results/risk")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    from utility import load

    from dpsyn.audit.risk import attribute_inference, dcr_diagnostic, sensitive_columns, shadow_mia
    from dpsyn.synth import create

    schema, train, test, _ = load("adult")
    rows = []
    for method in args.methods:
        for eps in ([None] if method == "copy" else args.eps):
            def fit_sample(df, seed, method=method, eps=eps):
                if method == "copy":
                    return df.copy()
                model = create(method, {}, privacy={"epsilon": eps, "delta": args.delta, "secure_rng": False,
                                                    "noise_seed": seed}).fit(df, schema)
                return model.sample(len(df), random_state=seed)

            t0 = time.time()
            mia = shadow_mia(fit_sample, train, schema, n_targets=args.targets, shadows=args.shadows,
                             eval_runs=args.eval_runs, train_rows=args.train_rows, seed=args.seed,
                             progress=lambda i, n, tag=f"{method} ε={eps}": print(f"  {tag}: run {i}/{n}", flush=True))
            rng = np.random.default_rng(args.seed)
            members = train.iloc[rng.choice(len(train), args.train_rows, replace=False)].reset_index(drop=True)
            non_members = test.iloc[rng.choice(len(test), args.train_rows, replace=False)].reset_index(drop=True)
            synth = fit_sample(members, args.seed)
            attrs = attribute_inference(members, non_members, synth, schema, sensitive_columns(schema), seed=args.seed)
            dcr = dcr_diagnostic(members, non_members, synth, schema, seed=args.seed)
            rows.append({"method": method, "epsilon": eps, "seconds": round(time.time() - t0, 1),
                         "mia": mia.model_dump(), "attributes": [a.model_dump() for a in attrs],
                         "dcr": dcr.model_dump()})
            print(json.dumps(rows[-1]), flush=True)
    write(rows, Path(args.out), shlex.join(["python", *sys.argv]), args)


def write(rows, out: Path, cmd: str, args) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"command": cmd, "rows": rows}, indent=1))

    def claimed(r):
        return "none (not DP)" if r["epsilon"] is None else f"{r['epsilon']:g}"

    lines = ["# Privacy-risk attacks (Adult)", "", f"Command: `{cmd}`", "",
             f"Machine: {os.cpu_count()} cores. δ = {args.delta:g}. Each run trains on {args.train_rows} rows of "
             "adult.data; non-members come from adult.test.", "",
             f"## Shadow-model membership inference ({args.targets} targets, half of them the rarest records; "
             f"{args.shadows} shadow runs to train the attack, {args.eval_runs} runs to score it)", "",
             "| method | claimed ε | AUC | TPR @ FPR 0.1% | TPR @ 1% | TPR @ 10% | rare: AUC | rare: TPR @ 1% | s |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        m = r["mia"]
        t, to = m["tpr_at_fpr"], m["outliers_tpr_at_fpr"]
        lines.append(f"| {r['method']} | {claimed(r)} | {m['auc']:.3f} | {t['0.001']:.3f} | {t['0.01']:.3f} | "
                     f"{t['0.1']:.3f} | {m['outliers_auc']:.3f} | {to['0.01']:.3f} | {r['seconds']} |")
    lines += ["", "## Attribute inference (L2 columns; a model trained on the synthetic table predicts the column "
              "from all others)", "",
              "| method | claimed ε | column | accuracy members | accuracy non-members | majority | member advantage | "
              "AUC member vs not | TPR @ 1% |", "|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        for a in r["attributes"]:
            lines.append(f"| {r['method']} | {claimed(r)} | {a['column']} | {a['accuracy_members']:.3f} | "
                         f"{a['accuracy_non_members']:.3f} | {a['accuracy_majority']:.3f} | "
                         f"{a['member_advantage']:+.3f} | {a['auc']:.3f} | {a['tpr_at_fpr']['0.01']:.3f} |")
    lines += ["", "## Distance to closest record (diagnostic only; Hamming distance over the public encoding)", "",
              "| method | claimed ε | share closer to train | exact copies of train | exact copies of holdout | "
              "median DCR train | median DCR holdout |", "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        d = r["dcr"]
        lines.append(f"| {r['method']} | {claimed(r)} | {d['share_closer_to_train']:.3f} | "
                     f"{d['exact_copies_of_train']:.3f} | {d['exact_copies_of_holdout']:.3f} | "
                     f"{d['median_dcr_train']:g} | {d['median_dcr_holdout']:g} |")
    lines += ["", "Attacks are measured, not bounded: a DP synthesizer at ε limits every attack's TPR at FPR α to "
              "at most e^ε·α + δ; these numbers show what concrete attacks achieve. Adult's encoding has many "
              "duplicate rows, so exact copies of holdout rows are expected even for a private generator."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
