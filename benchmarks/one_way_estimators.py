"""How much a better one-way estimator can buy on the suite's tiny tables (issue 26; docs/synthesis.md).

    python benchmarks/one_way_estimators.py --out benchmarks/results/one_way_estimators.md

Every column's one-way histogram of the suite's training split (benchmarks/suite.py's ``load``: public benchmark
tables, none generated here) is released as the independent baseline releases it (benchmarks/baselines.py: one
Gaussian on all d histograms, L2 sensitivity √d, σ calibrated to ε on dpsyn's accountant), at the full budget and
at half of it (``--scale`` √2: pgm's one-way share on a tiny table). Each draw is estimated four ways and scored
by the mean 1-way TVD against the true histogram (no sampling):

* ``clip``: clipped at 0 and normalised (the independent baseline's estimator);
* ``project``: the Euclidean projection onto the simplex scaled to a noisy total;
* ``shape``: pgm's ``shape_ordered`` (the unimodal fit of inner bins, kept when consistent with the noise), then
  clipping;
* ``unimodal_all``: the unimodal fit over every ordered bin, the end bins included, always kept, then clipping.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

CELLS = ("breast_cancer:0.3", "synthea:0.3", "pbc:0.3", "titanic:0.3", "pbc:1", "breast_cancer:1", "titanic:1")
ESTIMATORS = ("clip", "project", "shape", "unimodal_all")


def _normalised(c: np.ndarray) -> np.ndarray:
    c = np.clip(c, 0, None)
    return c / c.sum() if c.sum() > 0 else np.full(len(c), 1.0 / len(c))


def _project(v: np.ndarray, total: float) -> np.ndarray:
    """Euclidean projection of ``v`` onto {x ≥ 0, Σx = total}."""
    u = np.sort(v)[::-1]
    css = np.cumsum(u) - total
    ind = np.arange(1, len(v) + 1)
    ok = u - css / ind > 0
    return np.clip(v - css[ok][-1] / ind[ok][-1], 0, None)


def cell(name: str, eps: float, scale: float, draws: int, seed: int = 0) -> dict[str, float]:
    import suite

    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.privacy import PrivacyAccountant
    from dpsyn.synth.pgm import _bin_widths, _ordered_codes, shape_ordered, unimodal_fit

    schema, train, _ = suite.load(name)
    enc = DiscreteEncoder(schema)
    codes = enc.encode(train)
    n, d = codes.shape
    sigma = PrivacyAccountant(epsilon=eps, delta=suite.DELTA).calibrate(sample_rate=1.0, steps=1)
    std = sigma * np.sqrt(d) * scale
    rng = np.random.default_rng(seed)
    tvd = {k: [] for k in ESTIMATORS}
    for _ in range(draws):
        for j, (col, k) in enumerate(zip(enc.columns, enc.sizes, strict=True)):
            true = np.bincount(codes[:, j], minlength=k).astype(float)
            y = true + rng.normal(0, std, k)
            m, bw = _ordered_codes(col), _bin_widths(col)
            uni = y.copy()
            if m >= 3:
                w = bw[:m] if bw is not None else np.ones(m)
                uni[:m] = unimodal_fit(y[:m] / w, w * w) * w
            est = {"clip": _normalised(y), "project": _normalised(_project(y, max(n + rng.normal(0, std), 1.0))),
                   "shape": _normalised(shape_ordered(y, m, std, bw)), "unimodal_all": _normalised(uni)}
            for key, p in est.items():
                tvd[key].append(0.5 * np.abs(p - true / n).sum())
    return {k: float(np.mean(v)) for k, v in tvd.items()} | {"n": n, "d": d, "std": std}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", nargs="+", default=list(CELLS), help="table:epsilon")
    ap.add_argument("--draws", type=int, default=20)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    lines = ["# One-way estimators at the tiny tables' noise", "",
             f"Command: `python benchmarks/one_way_estimators.py --draws {args.draws}"
             + (f" --out {args.out}`" if args.out else "`") + f" ({args.draws} noise draws per cell, seed 0). Mean "
             "1-way TVD to the true histogram; the budget is the whole ε on one-way histograms (as the independent "
             "baseline spends it) or half of it (pgm's one-way share on a tiny table). `clip` is the independent "
             "baseline's estimator.", "",
             "| table | ε | n | d | budget | noise std per cell | " + " | ".join(ESTIMATORS) + " |",
             "|---|---|---|---|---|---|" + "---|" * len(ESTIMATORS)]
    for c in args.cells:
        name, eps = c.split(":")
        for label, scale in (("full", 1.0), ("half", float(np.sqrt(2)))):
            r = cell(name, float(eps), scale, args.draws)
            lines.append(f"| {name} | {eps} | {r['n']} | {r['d']} | {label} | {r['std']:.1f} | "
                         + " | ".join(f"{r[k]:.3f}" for k in ESTIMATORS) + " |")
            print(lines[-1], flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
