"""Peak memory of sampling from a fitted synthesizer on a wide table.

    python benchmarks/sample_memory.py --dataset diabetes130 --method dpdsyn --fit-rows 5000 \
        --out benchmarks/results/sample_memory

Sampling memory depends on the number of rows drawn and the width of the public encoding, not on how
many rows the model was fitted on, so the fit uses ``--fit-rows`` rows (and one epoch each) to keep the
run short; the sample has as many rows as the dataset's training split. Each run is a fresh process;
peak RSS is ru_maxrss after the fit and after sampling. The .json and the .md are
rewritten (one run per output; the run itself is short).
"""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))


def _peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="diabetes130")
    ap.add_argument("--method", default="dpdsyn", choices=["dpdsyn", "dpgen"])
    ap.add_argument("--fit-rows", type=int, default=5000)
    ap.add_argument("--out", default="benchmarks/results/sample_memory")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    import utility

    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.synth import create

    schema, train, _, _ = utility.load(args.dataset)
    row = {"dataset": args.dataset, "method": args.method, "fit_rows": args.fit_rows, "sample_rows": len(train),
           "one_hot_columns": int(sum(DiscreteEncoder(schema).sizes)), "loaded_mb": _peak_mb()}
    synth = create(args.method, {"epochs": 1, **({"task_epochs": 1} if args.method == "dpdsyn" else {})},
                   privacy={"epsilon": 1.0, "delta": 1e-5, "secure_rng": False, "noise_seed": 0})
    t = time.time()
    synth.fit(train.iloc[: args.fit_rows], schema)
    row.update(fit_s=round(time.time() - t, 1), fit_peak_mb=_peak_mb())
    t = time.time()
    synth.sample(len(train), random_state=0)
    row.update(sample_s=round(time.time() - t, 1), sample_peak_mb=_peak_mb())
    print(json.dumps(row), flush=True)

    out = Path(args.out)
    command = shlex.join(["python", *sys.argv])
    out.with_suffix(".json").write_text(json.dumps({"command": command, "row": row}, indent=1))
    lines = ["# Sampling memory", "", "Command:", "", f"    {command}", "",
             "| dataset | method | one-hot columns | fit rows | sampled rows | fit s | sample s | peak MB after fit "
             "| peak MB after sampling |", "|---|---|---|---|---|---|---|---|---|"]
    r = row
    lines.append(f"| {r['dataset']} | {r['method']} | {r['one_hot_columns']:,} | {r['fit_rows']:,} | "
                 f"{r['sample_rows']:,} | {r['fit_s']} | {r['sample_s']} | {r['fit_peak_mb']:,} | "
                 f"{r['sample_peak_mb']:,} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
