"""The gate on dpsyn's own output: how often a run of the default synthesizer passes its gate.

    python benchmarks/gate_synth.py --out benchmarks/results/gate_synth

benchmarks/gate.py measures the gate on real halves (must pass) and broken tables (must fail). This measures
what a user meets: per dataset and seed, ``--rows`` real rows go through a run's steps as ``dpsyn run`` does
them (dpsyn.pipeline.stages): a 20 % holdout by secret coins, the noisy counts (10 % of ε), the gate's share
planned (20 %, and the utility reference's 10 %), the synthesizer (``pgm``, defaults) fitted on the rest of
the budget, as many synthetic rows as the noisy training count, the hard rules enforced, and the gate with its
defaults (utility check on). A cell reads passed / uninformative / failed over the seeds, with the checks that
failed most often, the checks whose exact value (the same gate run without noise, utility off: benchmark only)
exceeds its threshold, the noisy TSTR AUC the gate saw, and the exact TSTR AUC on the holdout (benchmark only:
read without noise).
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


def one_run(name: str, schema, df: pd.DataFrame, *, rows: int, eps: float, seed: int, synthesizer: str) -> dict:
    from dpsyn.privacy import NoiseSource, PrivacyAccountant, default_delta, plan_counts, release_counts
    from dpsyn.synth import create
    from dpsyn.validation import ValidationConfig, gate_rules, plan_validation, validate
    from dpsyn.validation.metrics import tstr_scores
    from dpsyn.validation.repair import enforce_hard_rules
    from dpsyn.validation.utility import positive_label, split_holdout

    config = ValidationConfig()
    rng = np.random.default_rng(seed)
    real = df.iloc[rng.permutation(len(df))[:rows]].reset_index(drop=True)
    noise = NoiseSource(secure=False, seed=seed)
    train, holdout = split_holdout(real, config.holdout_share, noise=noise)
    delta = default_delta(schema.population_size)
    acct = PrivacyAccountant(epsilon=eps, delta=delta)
    plan = plan_counts(acct, 0.1, groups=("train", "holdout"))
    counts = release_counts({"train": len(train), "holdout": len(holdout)}, plan, accountant=acct, noise=noise)
    plan_validation(acct, config, n_train=counts.estimate("train"))
    t0 = time.time()
    synth = create(synthesizer, {}, privacy={"epsilon": eps, "delta": delta, "secure_rng": False,
                                             "noise_seed": seed})
    synth.fit(train, schema, accountant=acct, rows=counts)
    fit_s = time.time() - t0
    out = synth.sample(int(counts.estimate("train")), random_state=seed)
    out, _ = enforce_hard_rules(out, gate_rules(config, schema), schema, np.random.default_rng(seed))
    rep = validate(train, out, schema, config, accountant=acct, noise=noise, holdout=holdout, counts=counts)
    acct.check()
    # benchmark only: the same gate without noise, to name the checks whose exact value exceeds its threshold
    exact_rep = validate(train, out, schema, config, accountant=PrivacyAccountant(epsilon=eps, delta=delta),
                         noise=_NoNoise(), holdout=None, counts=counts)
    over = sorted(((c.value - c.threshold, c.name) for c in exact_rep.checks
                   if c.statistic not in ("hard_rule", "target_signal_p") and c.value > c.threshold), reverse=True)
    positive = positive_label(schema, config.utility_positive)
    exact = tstr_scores(out, holdout, schema, positive=positive, models=("gbm",))["gbm"]["roc_auc"]
    return {"verdict": rep.verdict, "failed": [c.name for c in rep.failures()],
            "exact_over_threshold": [f"{name} +{x:.3f}" for x, name in over[:4]],
            "uninformative": len(rep.uninformative()), "noisy_tstr_auc": (rep.utility or {}).get("auc_tstr"),
            "exact_tstr_auc": exact, "fit_s": round(fit_s, 1), "epsilon_spent": acct.epsilon()}


class _NoNoise:
    """A noise source that adds nothing (benchmark diagnostics on public data only; never in a run)."""

    def normal_numpy(self, n: int, std: float):
        return np.zeros(n)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["adult", "nltcs", "diabetes130"])
    ap.add_argument("--eps", nargs="+", type=float, default=[1.0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--dataset-seeds", nargs="*", default=[], metavar="NAME=K",
                    help="fewer seeds for a slow dataset, e.g. diabetes130=5")
    ap.add_argument("--rows", type=int, default=2500, help="real rows per run (2,000 train + 500 holdout)")
    ap.add_argument("--synthesizer", default="pgm")
    ap.add_argument("--out", default="benchmarks/results/gate_synth")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    from gate import load

    seeds = {k: int(v) for k, v in (x.split("=", 1) for x in args.dataset_seeds)}
    partial = Path(args.out).with_suffix(".partial.jsonl")
    runs = [json.loads(x) for x in partial.read_text().splitlines()] if partial.exists() else []
    done = {(r["dataset"], r["epsilon"], r["seed"]) for r in runs}
    t_start = time.time()
    for name in args.datasets:
        schema, df = load(name)
        for eps in args.eps:
            for seed in range(seeds.get(name, args.seeds)):
                if (name, eps, seed) in done:
                    continue
                r = {"dataset": name, "rows": args.rows, "epsilon": eps, "seed": seed,
                     **one_run(name, schema, df, rows=args.rows, eps=eps, seed=seed, synthesizer=args.synthesizer)}
                runs.append(r)
                print(json.dumps(r), flush=True)
                with open(partial, "a") as f:
                    f.write(json.dumps(r) + "\n")
    write([r for r in runs if r["dataset"] in args.datasets], args, time.time() - t_start)
    partial.unlink()


def write(runs, args, total_s):
    out = Path(args.out)
    cmd = shlex.join(["python", "benchmarks/gate_synth.py", *sys.argv[1:]])
    out.with_suffix(".json").write_text(json.dumps({"command": cmd, "total_s": total_s, "runs": runs}, indent=1))
    lines = ["# The gate on dpsyn's own output", "", f"Command: `{cmd}` ({total_s / 60:.0f} min on 2 cores). "
             f"Synthesizer `{args.synthesizer}` with its defaults; `ValidationConfig()` defaults (utility check "
             "on, 20 % holdout). Each row: runs passed / uninformative / failed, the checks that failed (runs), the "
             "noisy TSTR AUC the gate released and the exact one on the holdout (mean over runs; benchmark "
             "only), fit seconds.", "",
             "| dataset | rows | ε | passed/uninformative/failed | failed by | exact values over their threshold "
             "(runs) | noisy TSTR AUC | exact TSTR AUC | fit s |",
             "|---|---:|---:|---|---|---|---:|---:|---:|"]
    by = {}
    for r in runs:
        by.setdefault((r["dataset"], r["rows"], r["epsilon"]), []).append(r)
    for (ds, n, eps), rs in by.items():
        v = [r["verdict"] for r in rs]
        names = {}
        for r in rs:
            for f in r["failed"]:
                names[f] = names.get(f, 0) + 1
        top = ", ".join(f"{k} ({c})" for k, c in sorted(names.items(), key=lambda kv: -kv[1])[:4])
        overs = {}
        for r in rs:
            for f in r.get("exact_over_threshold", []):
                overs[f.split(" ")[0]] = overs.get(f.split(" ")[0], 0) + 1
        over = ", ".join(f"{k} ({c})" for k, c in sorted(overs.items(), key=lambda kv: -kv[1])[:4])
        noisy = [r["noisy_tstr_auc"] for r in rs if r["noisy_tstr_auc"] is not None]
        lines.append(f"| {ds} | {n:,} | {eps:g} | {v.count('passed')}/{v.count('uninformative')}/{v.count('failed')}"
                     f" | {top} | {over} | {np.mean(noisy) if noisy else float('nan'):.3f} | "
                     f"{np.nanmean([r['exact_tstr_auc'] for r in rs]):.3f} | {np.mean([r['fit_s'] for r in rs]):.0f} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
