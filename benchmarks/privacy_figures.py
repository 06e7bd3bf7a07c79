"""The figures docs/privacy.md quotes for the noisy row counts and the gate's noise, recomputed from the code.

    python benchmarks/privacy_figures.py --out benchmarks/results/privacy_figures

For each ε: the count release's σ (its ε alone is ``count_share`` × ε), the lower bound's z and slack z·σ + 1,
the count's marginal cost (the DP-SGD σ of dpgen's default Adult run with and without it), and the gate's
one-way noise std for the default ValidationConfig on Adult at several training sizes n (the expected lower bound
n − z·σ − 1 in place of the noisy one).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eps", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    ap.add_argument("--rows", type=int, nargs="+", default=[2000, 4000, 32561])
    ap.add_argument("--delta", type=float, default=1e-6)
    ap.add_argument("--out", default="benchmarks/results/privacy_figures")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    from dpsyn.io import read_table
    from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant, PrivacyConfig, plan_counts
    from dpsyn.schema import load_schema
    from dpsyn.synth.dpgen import DPGenConfig
    from dpsyn.synth.dpsgd import steps_and_rate
    from dpsyn.validation import ValidationConfig, plan_validation, validate

    schema = load_schema("adult")
    real = read_table(REPO / "dpsyn" / "data" / "adult_sample.data", schema)
    share = PrivacyConfig().count_share
    gen = DPGenConfig()
    rows = []
    for eps in args.eps:
        acct = PrivacyAccountant(epsilon=eps, delta=args.delta)
        plan = plan_counts(acct, share, groups=("train", "holdout"))
        for n in args.rows:
            n_train = int(0.8 * n)
            slack = plan.z * plan.noise_multiplier + 1
            # the cost of the count: dpgen's DP-SGD σ with the count and the gate planned, and with the gate only
            with_count = PrivacyAccountant(epsilon=eps, delta=args.delta)
            plan_counts(with_count, share, groups=("train", "holdout"))
            plan_validation(with_count, ValidationConfig(), n_train=n_train)
            without = PrivacyAccountant(epsilon=eps, delta=args.delta)
            plan_validation(without, ValidationConfig(), n_train=n_train)
            q, steps = steps_and_rate(n_train, batch_size=gen.batch_size, epochs=gen.epochs)
            sig_with = with_count.calibrate(sample_rate=q, steps=steps)
            sig_without = without.calibrate(sample_rate=q, steps=steps)
            # the gate's one-way noise std at the expected lower bound (no utility check: the fidelity release)
            gate = PrivacyAccountant(epsilon=eps, delta=args.delta)
            plan_counts(gate, share, groups=("train",))
            counts = NoisyCounts({"train": float(n_train)}, noise_std=plan.noise_multiplier, z=plan.z)
            if counts.lower_bound("train") < 1:
                std = None
            else:
                sample = real.sample(n=min(n_train, len(real)), replace=n_train > len(real), random_state=0)
                rep = validate(sample.reset_index(drop=True), sample.reset_index(drop=True), schema,
                               ValidationConfig(utility=False), accountant=gate,
                               noise=NoiseSource(secure=False, seed=0), counts=counts)
                std = rep.noise_std
            rows.append({"epsilon": eps, "rows": n, "train_rows": n_train, "count_sigma": plan.noise_multiplier,
                         "z": plan.z, "slack": slack, "dpsgd_sigma_with_count": sig_with,
                         "dpsgd_sigma_without_count": sig_without, "gate_one_way_noise_std": std})
            print(json.dumps(rows[-1]), flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = shlex.join(["python", *sys.argv])
    out.with_suffix(".json").write_text(json.dumps({"command": cmd, "rows": rows}, indent=1))
    lines = ["# Noisy row counts and the gate's noise", "", f"Command: `{cmd}`", "",
             f"δ = {args.delta:g} (Adult's public rule); count share {share} (ε alone); dpgen defaults "
             f"(batch {gen.batch_size}, {gen.epochs} epochs); the gate's default ValidationConfig on Adult, 80 % of "
             "the rows for training (holdout 0.2).", "",
             "| ε | rows | count σ | z | slack z·σ + 1 | DP-SGD σ with the count | without | gate one-way noise std |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        g = "refused (too small)" if r["gate_one_way_noise_std"] is None else f"{r['gate_one_way_noise_std']:.4f}"
        lines.append(f"| {r['epsilon']:g} | {r['rows']:,} | {r['count_sigma']:.1f} | {r['z']:.2f} | {r['slack']:.0f} | "
                     f"{r['dpsgd_sigma_with_count']:.3f} | {r['dpsgd_sigma_without_count']:.3f} | {g} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
