"""How often the DP drift check calls drift where there is none, on the drift-flow test's batches.

tests/integration/test_drift_flow.py cuts the shipped diabetes130 sample (UCI data, dpsyn/data/NOTICE.md) into six
1,500-row batches and shifts num_medications by +12 from batch 4 on. Here each batch is read, scrubbed and masked
as the flow does, its exact drift counts taken once, and ``dpsyn.drift.detect_drift_from_statistics`` is run with
``--draws`` noise seeds per pair at each ε (the flow's PRV accountant and δ): the share of checks that call drift,
and the 50/90/99/99.9th percentiles of a check's largest statistic/threshold ratio (drift when > 1).

    python benchmarks/drift_false_alarm.py --eps 4 6 --draws 500 --out benchmarks/results/drift_false_alarm.md
"""

from __future__ import annotations

import argparse
import gzip
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ROWS = 1500
PAIRS = {"1-2": (0, 1), "1-3": (0, 2), "4-5": (3, 4), "4-6": (3, 5), "1-4 (shifted)": (0, 3)}


def batch_statistics(schema):
    from dpsyn.drift import drift_statistics
    from dpsyn.io import read_table
    from dpsyn.pii import scrub_table
    from dpsyn.pipeline.prepare import mask_frame

    with gzip.open(REPO / "dpsyn" / "data" / "diabetes130_sample.csv.gz", "rt") as f:
        df = pd.read_csv(f, dtype=str, keep_default_na=False)
    stats = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(6):
            part = df.iloc[i * ROWS:(i + 1) * ROWS].copy()
            if i >= 3:
                part["num_medications"] = (part["num_medications"].astype(int) + 12).clip(upper=81).astype(str)
            path = Path(tmp) / f"batch{i + 1}.csv"
            part.to_csv(path, index=False)
            scrubbed, _ = scrub_table(read_table(path, schema), schema)
            stats.append(drift_statistics(mask_frame(scrubbed, schema)[0], schema))
    return stats


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eps", type=float, nargs="+", default=[4.0, 6.0])
    ap.add_argument("--draws", type=int, default=500)
    ap.add_argument("--out", default="benchmarks/results/drift_false_alarm.md")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    from dpsyn.config import PrivacyConfig
    from dpsyn.drift import DriftConfig, detect_drift_from_statistics
    from dpsyn.privacy import NoiseSource, PrivacyAccountant
    from dpsyn.schema import load_schema

    schema = load_schema("diabetes130")
    delta = PrivacyConfig().resolved_delta(schema.population_size)
    stats = batch_statistics(schema)
    lines = ["# False drift alarms of the DP drift check (the drift-flow test's batches)", "",
             f"Command: `python benchmarks/drift_false_alarm.py {' '.join(sys.argv[1:] if argv is None else argv)}`. "
             f"{args.draws} noise draws per pair and ε; δ = {delta:g}, PRV accountant; ratio = a check's largest "
             "statistic / threshold (drift when > 1).", "",
             "| ε | pairs | checks | drift called | ratio p50 / p90 / p99 / p99.9 |", "|---|---|---|---|---|"]
    for eps in args.eps:
        for label, names in (("unshifted (1-2, 1-3, 4-5, 4-6)", ["1-2", "1-3", "4-5", "4-6"]),
                             ("shifted (1-4)", ["1-4 (shifted)"])):
            ratios, called = [], 0
            for name in names:
                r, c = PAIRS[name]
                for seed in range(args.draws):
                    acct = PrivacyAccountant(epsilon=eps, delta=delta, accountant="prv")
                    rep = detect_drift_from_statistics(stats[r], stats[c], schema, DriftConfig(epsilon=eps),
                                                       accountant=acct, noise=NoiseSource(secure=False, seed=seed))
                    called += rep.drifted
                    ratios.append(max(col.value / col.threshold for col in rep.columns))
            q = np.quantile(ratios, [0.5, 0.9, 0.99, 0.999])
            row = (f"| {eps:g} | {label} | {len(ratios)} | {called / len(ratios):.2%} | "
                   f"{' / '.join(f'{x:.2f}' for x in q)} |")
            print(row, flush=True)
            lines.append(row)
    Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
