"""Group privacy fairness benchmark: DP-SGD vs DP-SGD-S, per-group privacy risk (GPR), Δ, utility, outcome fairness.

    python benchmarks/fairness.py --dataset adult --groups sex race --eps 1 10 --seeds 0 1 2 \
        --methods dpsgd dpsgd-s dpsgd-s-eq --rounds 10 --rows 2000 --out benchmarks/results/fairness

Methods: ``dpsgd`` (one clip bound), ``dpsgd-s`` (the seed's rule: C_k = τ × a privately tracked quantile of
group k's gradient norms, noise at max C_k), ``dpsgd-s-eq`` / ``-eq75`` / ``-eq1`` (the equalize rule at strength 0.5 / 0.75 / 1:
groups whose norms run above the median are clipped tighter, noise at the initial bound), ``dpsgd-s-eq1-c003`` / ``-c01`` /
``-c03`` / ``-c1`` (equalize at strength 1 plus compensating noise κ = 0.03 / 0.1 / 0.3 / 1: the sampling variance
that the tighter bounds take away is put back as Gaussian noise, so the other groups' risk does not rise),
``dpsgd-s-eq2-c003`` (strength 2, κ = 0.03); ``-r05`` / ``-r1`` / ``-r2`` add the rarity factor at exponent 0.5 / 1 / 2
(groups whose share of the released noisy counts is under ``rare_share`` = 0.1 are clipped tighter), ``-r05-p05``
with ``rare_share`` 0.05, ``-r05-f05`` with the bounds' floor at 0.5 C_0 (the recommended setting), ``-c005-r05``
with κ = 0.05; ``-r05-f05-h02`` / ``-h05`` add a one-off noisy histogram of group sizes (``size_share`` 0.2 / 0.5 of
ε alone) to the rarity factor's share estimates. The model is the DP task model (logistic
regression on the public one-hot encoding). Each audit trains 2R models on ``rows`` training rows (every
row's membership randomised each round) plus one model on all of them for utility. Rows already in the
.json are kept (resumable).
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DATASETS = {
    "adult": {"data": REPO.parent / "shared/data/adult/adult.data", "test": REPO.parent / "shared/data/adult/adult.test",
              "schema": "adult", "positive": None},
    "diabetes130": {"data": REPO.parent / "shared/data/diabetes130/diabetic_data.csv", "test": None,
                    "schema": "diabetes130", "positive": "<30"},
    # per patient (privacy unit patient_nbr, at most 3 encounters each): --rows counts patients, every model samples
    # and clips patients, a patient is in or out of a model with all their encounters
    "diabetes130_patients": {"data": REPO.parent / "shared/data/diabetes130/diabetic_data.csv", "test": None,
                             "schema": "diabetes130_patients", "positive": "<30"},
}
# GroupClipConfig's defaults before session 8: every named method below is these plus its own settings, so a name
# keeps the meaning it had when its rows were measured
OLD = {"rule": "quantile", "strength": 0.5, "floor": 0.05, "compensate": 0.0, "rarity": 0.0}
METHODS = {
    "dpsgd": ("dpsgd", {}),
    "dpsgd-s": ("dpsgd-s", {"rule": "quantile"}),
    "dpsgd-s-eq": ("dpsgd-s", {"rule": "equalize", "strength": 0.5}),
    "dpsgd-s-eq75": ("dpsgd-s", {"rule": "equalize", "strength": 0.75}),
    "dpsgd-s-eq1": ("dpsgd-s", {"rule": "equalize", "strength": 1.0}),
    # equalize at strength 1 plus compensating noise κ (GroupClipConfig.compensate)
    "dpsgd-s-eq1-c003": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 0.03}),
    "dpsgd-s-eq1-c01": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 0.1}),
    "dpsgd-s-eq1-c03": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 0.3}),
    "dpsgd-s-eq1-c1": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 1.0}),
    "dpsgd-s-eq2-c003": ("dpsgd-s", {"rule": "equalize", "strength": 2.0, "compensate": 0.03}),
    # plus the rarity factor: groups under rare_share of the rows (estimated from the released counts) clipped tighter;
    # -r05-f05 (floor 0.5 C_0, so the smallest groups are not over-clipped) is GroupClipConfig's default
    "dpsgd-s-eq1-c003-r05": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 0.03, "rarity": 0.5}),
    "dpsgd-s-eq1-c003-r05-p05": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 0.03, "rarity": 0.5,
                                              "rare_share": 0.05}),
    "dpsgd-s-eq1-c003-r05-f05": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 0.03, "rarity": 0.5,
                                              "floor": 0.5}),
    "dpsgd-s-eq1-c005-r05": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 0.05, "rarity": 0.5}),
    "dpsgd-s-eq1-c003-r1": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 0.03, "rarity": 1.0}),
    "dpsgd-s-eq1-c003-r2": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 0.03, "rarity": 2.0}),
    # the default plus a one-off noisy histogram of group sizes costing 0.2 / 0.5 of ε alone (size_share), so the
    # rarity factor's shares are not left to the batch counts' noise at small ε
    **{f"dpsgd-s-eq1-c003-r05-f05-h{tag}": ("dpsgd-s", {"rule": "equalize", "strength": 1.0, "compensate": 0.03,
                                                         "rarity": 0.5, "floor": 0.5, "size_share": share})
       for tag, share in (("02", 0.2), ("05", 0.5))},
}
METHODS = {k: (m, {**OLD, **gc} if m == "dpsgd-s" else gc) for k, (m, gc) in METHODS.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="adult", choices=list(DATASETS))
    ap.add_argument("--data", help="Override the dataset's file.")
    ap.add_argument("--groups", nargs="+", default=["sex", "race"])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 10.0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--out", default="benchmarks/results/fairness")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    from dpsyn.audit.fairness_audit import run_fairness_audit
    from dpsyn.config import FairnessAuditConfig

    spec = DATASETS[args.dataset]
    out = Path(args.out)
    jpath = out.with_suffix(".json")
    saved = json.loads(jpath.read_text()) if jpath.exists() else {"commands": [], "rows": []}
    command = shlex.join(["python", *sys.argv])
    if command not in saved["commands"]:
        saved["commands"].append(command)
    done = {(r["dataset"], r["group"], r["epsilon"], r["method"], r["seed"]) for r in saved["rows"]}
    for group in args.groups:
        for eps in args.eps:
            for seed in args.seeds:
                for name in args.methods:
                    key = (args.dataset, group, eps, name, seed)
                    if key in done:
                        continue
                    method, gc = METHODS[name]
                    cfg = FairnessAuditConfig(
                        data=args.data or spec["data"], test=spec["test"], table_schema=spec["schema"], group=group,
                        method=method, group_clip=gc, epsilon=eps, rounds=args.rounds, rows=args.rows, seed=seed,
                        positive=spec["positive"])
                    t0 = time.time()
                    res = run_fairness_audit(cfg)
                    row = {"dataset": args.dataset, "group": group, "epsilon": eps, "method": name, "seed": seed,
                           "rounds": args.rounds, "rows": args.rows, "unit": res.risk.unit,
                           "seconds": round(time.time() - t0, 1),
                           "delta": res.risk.delta, "delta_ci": list(res.risk.delta_ci), "gpr": {g.group: g.gpr for g in res.risk.groups},
                           "gpr_se": {g.group: g.se for g in res.risk.groups},
                           "group_rows": {g.group: g.rows for g in res.risk.groups},
                           "mean_advantage": res.risk.mean_advantage, **res.utility,
                           "epsilon_spent_max": res.epsilon_spent_max, "model_delta": res.delta,
                           "group_clip": res.group_clip}
                    saved["rows"].append(row)
                    print(json.dumps({k: row[k] for k in ("group", "epsilon", "method", "seed", "seconds", "delta",
                                                          "accuracy", "roc_auc")}), flush=True)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    jpath.write_text(json.dumps(saved, indent=1))
    write_markdown(saved, out.with_suffix(".md"))


def _ms(xs) -> str:
    xs = [x for x in xs if x is not None and np.isfinite(x)]
    if not xs:
        return ""
    return f"{np.mean(xs):.3f}" + (f" ± {np.std(xs):.3f}" if len(xs) > 1 else "")


def _ci(rows) -> str:
    """Mean over seeds of each audit's bootstrap interval of Δ (rows resampled within groups)."""
    cis = [r["delta_ci"] for r in rows if r.get("delta_ci")]
    return f"{np.mean([c[0] for c in cis]):.3f}–{np.mean([c[1] for c in cis]):.3f}" if cis else ""


def write_markdown(saved: dict, path: Path) -> None:
    rows = saved["rows"]
    lines = ["# Group privacy fairness benchmark", "", "Commands:", ""]
    lines += [f"    {c}" for c in saved["commands"]]
    lines += ["", "Machine: 2 cores (shared with other jobs: compare times only within a run). Model: the DP task "
              "model (logistic regression on the public one-hot encoding), Poisson batches of 128, 20 epochs. "
              "GPR = mean per-row membership-inference advantage (TPR − FPR, loss-threshold attack, per-row "
              "thresholds cross-fitted over two halves of the rounds); Δ = max − min GPR over groups with ≥ 10 "
              "audit rows. Means ± std over seeds; `se` in the per-group tables is the mean over seeds of each "
              "audit's standard error; the Δ interval is the mean over seeds of each audit's 95% bootstrap "
              "interval (audit rows resampled within groups: row noise, not seed noise).", ""]
    keys = sorted({(r["dataset"], r["group"], r["epsilon"]) for r in rows})
    for ds, group, eps in keys:
        sub = [r for r in rows if (r["dataset"], r["group"], r["epsilon"]) == (ds, group, eps)]
        r0 = sub[0]
        what = "rows" if r0.get("unit", "row") == "row" else f"persons, audited per {r0['unit']}"
        lines += [f"## {ds}, groups: {group}, ε = {eps:g} (R = {r0['rounds']} rounds, {r0['rows']} training {what})", "",
                  "| method | seeds | accuracy | AUC | Δ | Δ 95% interval | mean adv. | DP diff | EO diff |",
                  "|---|---|---|---|---|---|---|---|---|"]
        methods = list(dict.fromkeys(r["method"] for r in sub))
        for m in methods:
            ms = [r for r in sub if r["method"] == m]
            lines.append(f"| {m} | {len(ms)} | {_ms([r['accuracy'] for r in ms])} | {_ms([r['roc_auc'] for r in ms])} | "
                         f"{_ms([r['delta'] for r in ms])} | {_ci(ms)} | {_ms([r['mean_advantage'] for r in ms])} | "
                         f"{_ms([r['demographic_parity_difference'] for r in ms])} | "
                         f"{_ms([r['equalized_odds_difference'] for r in ms])} |")
        groups = list(dict.fromkeys(g for r in sub for g in r["gpr"]))
        lines += ["", "GPR per group (mean over seeds ± mean se):", "",
                  "| method | " + " | ".join(f"{g} (n≈{int(np.mean([r['group_rows'].get(g, 0) for r in sub]))})"
                                            for g in groups) + " |",
                  "|---|" + "---|" * len(groups)]
        for m in methods:
            ms = [r for r in sub if r["method"] == m]
            cells = []
            for g in groups:
                v = [r["gpr"][g] for r in ms if g in r["gpr"]]
                se = [r["gpr_se"][g] for r in ms if g in r["gpr_se"] and np.isfinite(r["gpr_se"][g])]
                cells.append(f"{np.mean(v):.3f} ± {np.mean(se):.3f}" if v and se else "")
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        base = [r for r in sub if r["method"] == "dpsgd"]
        if base:
            lines += ["", "Against DP-SGD (means over seeds):", "",
                      "| method | Δ change | accuracy change (points) | groups whose GPR rose by > 1 se |",
                      "|---|---|---|---|"]
            d0, a0 = np.mean([r["delta"] for r in base]), np.mean([r["accuracy"] for r in base])
            for m in methods:
                if m == "dpsgd":
                    continue
                ms = [r for r in sub if r["method"] == m]
                d1, a1 = np.mean([r["delta"] for r in ms]), np.mean([r["accuracy"] for r in ms])
                rose = []
                for g in groups:
                    g0 = [r["gpr"][g] for r in base if g in r["gpr"]]
                    g1 = [r["gpr"][g] for r in ms if g in r["gpr"]]
                    se = np.mean([r["gpr_se"][g] for r in ms + base if np.isfinite(r["gpr_se"].get(g, np.nan))] or [0])
                    if g0 and g1 and np.mean(g1) - np.mean(g0) > se:
                        rose.append(f"{g} (+{np.mean(g1) - np.mean(g0):.3f})")
                change = f"{100 * (d1 - d0) / d0:+.0f}%" if d0 > 0 else "n/a"
                lines.append(f"| {m} | {change} ({d0:.3f} → {d1:.3f}) | {100 * (a1 - a0):+.2f} | "
                             f"{', '.join(rose) or 'none'} |")
        lines.append("")
    old = path.read_text() if path.exists() else ""
    readings = old[old.index("\n## Reading"):] if "\n## Reading" in old else ""  # hand-written, kept below the tables
    path.write_text("\n".join(lines) + "\n" + readings)


if __name__ == "__main__":
    main()
