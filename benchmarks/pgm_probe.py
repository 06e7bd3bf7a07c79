"""A quick probe of pgm configurations on the suite's tables, in process (no peak-memory isolation).

For each ``table:eps`` and each named configuration, fit pgm on the suite's training split (benchmarks/suite.py's
``load``), sample as many rows, and print the means over the seeds of 2-way TVD, TSTR AUC (gbm, logreg) and the
count of empty numeric bins (``suite.evaluate``, the same metrics as the suite's rows).

    python benchmarks/pgm_probe.py '{"off": {}, "density_sure": {"smoothing": null}}' breast_cancer:1 titanic:1

A configuration's ``"_method"`` names another synthesizer (``"independent"`` or ``"naive_bayes"``, the suite's
trivial baselines, or a dpsyn synthesizer's name) to probe beside pgm on the same seeds; ``"_within_bin"``
(``"shaped"``, dpsyn's default since 2026-12-08, or ``"uniform"``, what every probe before that date used) is the
decode's ``within_bin``.

docs/synthesis.md ("pgm smoothing") records what it printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))


def probe(name: str, eps: float, cfg: dict, seeds=(0, 1, 2)) -> list[float]:
    import suite

    from dpsyn.synth import create

    schema, train, test = suite.load(name)
    rows = []
    cfg = dict(cfg)
    method = cfg.pop("_method", "pgm")
    within_bin = cfg.pop("_within_bin", "shaped")
    for seed in seeds:
        privacy = {"epsilon": eps, "delta": suite.DELTA, "secure_rng": False, "noise_seed": seed}
        if method in suite.BASELINES:
            s = suite._make(method, eps, seed, len(train))  # the suite's own construction
        else:
            s = create(method, cfg, privacy=privacy)
        s.fit(train, schema)
        m = suite.evaluate(name, schema, train, test, s.sample(len(train), random_state=seed, within_bin=within_bin))
        rows.append((m["tvd1"], m["tvd2"], m["tstr"]["gbm"]["roc_auc"], m["tstr"]["logreg"]["roc_auc"], m["n_empty_bins"],
                     getattr(s, "training_", {}).get("iters_run", 0)))
    return np.array(rows).mean(axis=0).round(3).tolist()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", help="JSON object: label -> pgm config")
    ap.add_argument("cells", nargs="+", help="table:epsilon, e.g. titanic:1")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    configs = json.loads(args.configs)
    print("table eps config [tvd1, tvd2, gbm, logreg, empty_bins, iterations] seconds")
    for cell in args.cells:
        name, eps = cell.split(":")
        for label, cfg in configs.items():
            t = time.time()
            print(name, eps, label, probe(name, float(eps), cfg, tuple(args.seeds)), f"{time.time() - t:.0f}s",
                  flush=True)


if __name__ == "__main__":
    main()
