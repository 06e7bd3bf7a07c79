"""Which numeric bins pgm leaves empty on a suite table, and why (a diagnosis behind docs/synthesis.md "pgm shape").

    python benchmarks/pgm_empty_bins.py breast_cancer 1 --seeds 0 1 2

For each seed: fit pgm (defaults, or ``--config JSON``) on the suite's training split (benchmarks/suite.py's
``load``), sample as many rows, and for every bin holding ≥ 1 % of the real rows that the sample leaves empty print
whether compression merged it into the rare cell, the model's probability of its compressed cell, its share of
that cell, and the column's real and synthetic counts. Reads the real rows without noise: benchmark only.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("table")
    ap.add_argument("epsilon", type=float)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--config", type=json.loads, default={})
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    import suite

    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.synth import create

    schema, train, _ = suite.load(args.table)
    enc = DiscreteEncoder(schema)
    real = enc.encode(train)
    for seed in args.seeds:
        s = create("pgm", args.config, privacy={"epsilon": args.epsilon, "delta": suite.DELTA, "secure_rng": False,
                                                "noise_seed": seed})
        s.fit(train, schema)
        syn = enc.encode(s.sample(len(train), random_state=seed))
        comp = s.compression_
        print(f"seed {seed}: shape {s.training_.get('shape')}")
        for j, c in enumerate(enc.columns):
            if c.kind.value != "numeric":
                continue
            pa, pb = (np.bincount(x[:, j], minlength=c.size) for x in (real, syn))
            pm = s.model_.marginal(j)
            for i in np.flatnonzero((pa >= 0.01 * len(real)) & (pb == 0)):
                cell = comp.maps[j][i]
                rare = cell >= len(comp.kept[j])
                share = comp.rare_p[j][list(comp.rare[j]).index(i)] if rare else 1.0
                print(f"  {c.name} bin {i}: real {pa[i]}, rare cell {rare}, model p(cell) {pm[cell]:.4f}, "
                      f"share {share:.3f}; real {pa.tolist()} synthetic {pb.tolist()}")


if __name__ == "__main__":
    main()
