"""Fit smartnoise-synth MST or AIM on a public benchmark set and write an i.i.d. sample.

Runs inside benchmarks/.envs/snsynth (see setup.sh). Continuous columns are binned
with the *public* bins of dpsyn's schema (the same encoding dpsyn's synthesizers
use), so the comparison is on equal terms, and the fitted model is sampled
i.i.d. (`synthetic_data(method="sample")` on the estimated graphical model, patched in
under the synthesizer's own ``sample`` so decompression still applies), not with
mbi 1.x's default sampler, which links columns sharing a parent (see ../shared/NOTES.md).
AIM is capped with --aim-rounds (default 30 rounds instead of 224) and --max-model-size.

``--noise seeded`` (the default since 2026-12-08) draws the measurements' Gaussian noise from numpy's generator
seeded by --seed instead of OpenDP's secure sampler (the same law, N(0, σ²) per cell), so a row of the suite is
reproducible and two runs of the same seed (uniform and shaped decodes, say) measure the same noisy marginals: the
selection, the estimate and the i.i.d. sample already draw from numpy's seeded global generator. ``--noise
secure`` keeps smartnoise-synth's own sampler (unseedable; every row made before that date).
"""

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))  # not `import benchmarks`: Opacus ships a package of that name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", choices=["mst", "aim"], required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--codes", default=None, help="a CSV of public-encoding codes to fit on (benchmarks/suite.py); "
                    "--out then receives sampled codes, not decoded values")
    ap.add_argument("--eps", type=float, required=True)
    ap.add_argument("--delta", type=float, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    ap.add_argument("--aim-rounds", type=int, default=30)
    ap.add_argument("--max-model-size", type=float, default=40.0)
    ap.add_argument("--noise", choices=["seeded", "secure"], default="seeded",
                    help="the measurements' Gaussian noise: numpy seeded by --seed (reproducible) or OpenDP's sampler")
    ap.add_argument("--within-bin", choices=["uniform", "shaped"], default="uniform",
                    help="with --dataset: where a decoded number lands inside its public bin (with --codes the caller decodes)")
    args = ap.parse_args()
    if args.codes:
        codes, enc = pd.read_csv(args.codes, dtype=np.int64), None
    else:
        from utility import load  # dpsyn's reader and public encoding (pure python + pandas)

        from dpsyn.encoding import DiscreteEncoder

        schema, train, _, _ = load(args.dataset)
        enc = DiscreteEncoder(schema)
        codes = pd.DataFrame(enc.encode(train), columns=enc.names)
    np.random.seed(args.seed)
    t0 = time.time()
    from snsynth import Synthesizer

    if args.noise == "seeded":
        seeded_gaussian_noise()

    kw = {"epsilon": args.eps, "delta": args.delta}
    if args.method == "aim":
        kw.update(rounds=args.aim_rounds, max_model_size=args.max_model_size)
    synth = Synthesizer.create(args.method, **kw)
    synth.fit(codes, categorical_columns=list(codes.columns), preprocessor_eps=0.0)
    fit_s = time.time() - t0
    # i.i.d. sampling from the fitted graphical model, through the synthesizer's own sample() so
    # that MST's domain decompression and the column transformer still apply
    est = synth.synthesizer
    draw = est.synthetic_data
    object.__setattr__(est, "synthetic_data", lambda rows=None, method="sample": draw(rows=rows, method="sample"))
    sample = synth.sample(len(codes))
    sampler = "iid"
    if enc is None:
        sample[list(codes.columns)].to_csv(args.out, index=False)
    else:
        out = enc.decode(sample[enc.names].to_numpy(dtype=np.int64), rng=np.random.default_rng(args.seed),
                         within_bin=args.within_bin)
        out.to_csv(args.out, index=False)
    print(json.dumps({"fit_s": fit_s, "sampler": sampler, "method": args.method, "noise": args.noise,
                      "aim_rounds": args.aim_rounds if args.method == "aim" else None,
                      "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))


def seeded_gaussian_noise() -> None:
    """Replace the Gaussian sampler MST and AIM import from ``snsynth.utils`` (OpenDP's, one call per cell) by
    numpy's global generator, which ``main`` seeds: the same N(0, σ²) per cell, drawn reproducibly."""
    import snsynth.aim.aim as aim
    import snsynth.mst.mst as mst

    def gaussian_noise(sigma, size=None):
        return float(np.random.normal(0.0, sigma)) if size is None else np.random.normal(0.0, sigma, size).tolist()

    mst.gaussian_noise = aim.gaussian_noise = gaussian_noise


if __name__ == "__main__":
    main()
