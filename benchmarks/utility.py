"""Utility benchmark: TSTR and marginal fidelity of DP synthesizers against peers.

Train on the training file (synthetic tables as many rows as it has), test on
the real test file. Rows: dpsyn's synthesizers, DP-SGD on the real rows at the
same ε (logistic regression and a one-hidden-layer MLP), smartnoise-synth MST
and AIM (from their own virtual environment, see benchmarks/peers/), and
train-on-real.

    python benchmarks/utility.py --dataset adult --eps 0.3 1 3 --seeds 0 1 2 \
        --methods dpdsyn dpgen dpsgd_lr dpsgd_mlp real --out benchmarks/results/utility

Numbers are for public benchmark data; the metrics read real rows without noise
(dpsyn.validation.metrics), which is fine here and never done by a run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

DATASETS = {
    "adult": {
        "schema": "adult",
        "train": REPO.parent / "shared/data/adult/adult.data",
        "test": REPO.parent / "shared/data/adult/adult.test",
        "positive": ">50K",
        "delta": 1e-5,
    },
    "diabetes130": {
        "schema": "diabetes130",
        "data": REPO.parent / "shared/data/diabetes130/diabetic_data.csv",
        "positive": "<30",
        "delta": 1e-5,
    },
}


DIRECT = ("dpsgd_lr", "dpsgd_mlp", "dpsgd_lr_ema", "dpsgd_mlp_ema")


def load(name: str, split_seed: int = 0):
    from dpsyn.io import read_table
    from dpsyn.masking import mask_table
    from dpsyn.schema import load_schema

    spec = DATASETS[name]
    schema = load_schema(spec["schema"])
    if "train" in spec:
        train, test = read_table(spec["train"], schema), read_table(spec["test"], schema)
    else:
        df = read_table(spec["data"], schema, check_domains=False)
        rng = np.random.default_rng(split_seed)
        idx = rng.permutation(len(df))
        cut = int(0.8 * len(df))
        train, test = df.iloc[idx[:cut]].reset_index(drop=True), df.iloc[idx[cut:]].reset_index(drop=True)
    train, _ = mask_table(train, schema)
    test, _ = mask_table(test, schema)
    return schema, train, test, spec


def _fit_child(method, schema, train, eps, delta, seed, cfg, path, conn):
    from dpsyn.synth import create

    synth = create(method, cfg, privacy={"epsilon": eps, "delta": delta, "secure_rng": False, "noise_seed": seed})
    t0 = time.time()
    synth.fit(train, schema)
    fit_s = time.time() - t0
    synth.sample(len(train), random_state=seed).to_parquet(path)
    conn.send((fit_s, synth.privacy_["epsilon_spent"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))


def run_dpsyn(method, schema, train, eps, delta, seed, cfg):
    """Fit and sample in a child process, so each row's peak memory is its own."""
    import multiprocessing as mp
    import tempfile

    ctx = mp.get_context("spawn")  # fork deadlocks once torch or BLAS threads exist
    parent, child = ctx.Pipe(duplex=False)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synth.parquet"
        p = ctx.Process(target=_fit_child, args=(method, schema, train, eps, delta, seed, cfg, path, child))
        p.start()
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"{method} failed (exit {p.exitcode})")
        fit_s, spent, rss_kb = parent.recv()
        return pd.read_parquet(path), fit_s, spent, rss_kb


def run_dpsgd_direct(kind, schema, train, test, eps, delta, seed, positive, ema_decay=0.0):
    """DP-SGD classifier on the real rows (no synthetic data): the bar a synthesizer must clear."""
    import torch
    from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.privacy import NoiseSource, PrivacyAccountant
    from dpsyn.synth.classifier import classifier_log_probs, train_classifier
    from dpsyn.synth.dpsgd import steps_and_rate

    enc = DiscreteEncoder(schema)
    a, b = enc.encode(train), enc.encode(test)
    fs, k = enc.sizes[:-1], enc.sizes[-1]
    acct = PrivacyAccountant(epsilon=eps, delta=delta)
    bs, epochs = 1024, 10
    q, steps = steps_and_rate(len(a), batch_size=bs, epochs=epochs)
    sigma = acct.calibrate(sample_rate=q, steps=steps, label=kind)
    torch.manual_seed(seed)
    t0 = time.time()
    net = train_classifier(
        a, fs, k, hidden=0 if kind == "dpsgd_lr" else 64, accountant=acct, noise=NoiseSource(secure=False, seed=seed),
        noise_multiplier=sigma, batch_size=bs, epochs=epochs, max_grad_norm=1.0,
        lr=0.05 if kind == "dpsgd_lr" else 0.01, label=kind, ema_decay=ema_decay,
        public_rows=len(a),  # a baseline, not a dpsyn release: it is given the exact count (favours it)
    )
    fit_s = time.time() - t0
    p = np.exp(classifier_log_probs(net, b[:, :-1], fs))
    pos = list(enc.columns[-1].labels).index(positive)
    y = (b[:, -1] == pos).astype(int)
    score = {"accuracy": float(accuracy_score(y, p[:, pos] >= 0.5)), "roc_auc": float(roc_auc_score(y, p[:, pos])),
             "f1": float(f1_score(y, p[:, pos] >= 0.5))}
    return {"direct": score}, fit_s, acct.check()


def run_peer(method, dataset, eps, delta, seed, out_dir, aim_rounds=30):
    """MST / AIM from smartnoise-synth in benchmarks/.envs/snsynth (see benchmarks/peers/README.md)."""
    py = REPO / "benchmarks/.envs/snsynth/bin/python"
    if not py.exists():
        raise RuntimeError("peer environment missing: run `bash benchmarks/peers/setup.sh` first")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{method}_{dataset}_eps{eps}_seed{seed}.csv"
    cmd = [str(py), str(REPO / "benchmarks/peers/run_peer.py"), "--method", method, "--dataset", dataset,
           "--eps", str(eps), "--delta", str(delta), "--seed", str(seed), "--out", str(target),
           "--aim-rounds", str(aim_rounds)]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{method} failed: {r.stderr[-2000:]}")
    info = json.loads(r.stdout.strip().splitlines()[-1])
    info["wall_s"] = round(time.time() - t0, 1)
    return target, info["fit_s"], info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="adult", choices=list(DATASETS))
    ap.add_argument("--eps", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--methods", nargs="+", default=["dpdsyn", "dpgen", "dpsgd_lr", "dpsgd_mlp", "real"])
    ap.add_argument("--out", default="benchmarks/results/utility")
    ap.add_argument("--config", default="{}", help="JSON synthesizer settings for dpsyn methods")
    ap.add_argument("--aim-rounds", type=int, default=30, help="AIM's round cap (its default, 16·d, takes hours)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    from dpsyn.validation.metrics import marginal_tvd, tstr_scores

    schema, train, test, spec = load(args.dataset)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows, commands = [], []
    jpath = out.with_suffix(".json")
    if jpath.exists():
        saved = json.loads(jpath.read_text())
        rows, commands = saved["rows"], saved.get("commands", [])
    command = shlex.join(["python", *sys.argv])
    if command not in commands:
        commands.append(command)
    done = {(r["dataset"], r["method"], r["epsilon"], r["seed"]) for r in rows}

    def save() -> None:  # after every row, so a stopped run keeps what it measured
        jpath.write_text(json.dumps({"commands": commands, "rows": rows}, indent=1))
    for method in args.methods:
        for eps in (args.eps if method != "real" else [float("inf")]):
            for seed in args.seeds:
                key = (args.dataset, method, eps if np.isfinite(eps) else None, seed)
                if key in done:
                    continue
                rss_kb = None
                row = {"dataset": args.dataset, "method": method, "epsilon": key[2], "seed": seed,
                       "delta": spec["delta"]}
                if method == "real":
                    syn, fit_s, spent = train, 0.0, None
                elif method in DIRECT:
                    # *_ema: the same DP-SGD run, weights = EMA (decay 0.99) of the iterates (post-processing)
                    scores, fit_s, spent = run_dpsgd_direct(method.removesuffix("_ema"), schema, train, test, eps,
                                                            spec["delta"], seed, spec["positive"],
                                                            ema_decay=0.99 if method.endswith("_ema") else 0.0)
                    row.update(fit_s=fit_s, epsilon_spent=spent, tstr=scores)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    save()
                    continue
                elif method in ("mst", "aim"):
                    path, fit_s, info = run_peer(method, args.dataset, eps, spec["delta"], seed, out.parent / "peers",
                                                     args.aim_rounds)
                    rss_kb = info.get("peak_rss_kb")
                    from dpsyn.io import coerce_to_schema

                    syn = coerce_to_schema(pd.read_csv(path, dtype=str, keep_default_na=False,
                                                       na_values=[""]), schema, check_domains=False)
                    spent = eps
                    row.update(peer=info)
                else:
                    syn, fit_s, spent, rss_kb = run_dpsyn(method, schema, train, eps, spec["delta"], seed,
                                                  json.loads(args.config))
                row.update(
                    fit_s=round(fit_s, 1), epsilon_spent=spent,
                    tvd1=marginal_tvd(train, syn, schema, order=1), tvd2=marginal_tvd(train, syn, schema, order=2),
                    tstr=tstr_scores(syn, test, schema, positive=spec["positive"], random_state=seed),
                    peak_rss_mb=None if rss_kb is None else round(rss_kb / 1024),
                )
                rows.append(row)
                print(json.dumps(row), flush=True)
                save()
    save()
    write_markdown(rows, out.with_suffix(".md"), commands)


def write_markdown(rows, path: Path, commands: list[str]):
    df = pd.json_normalize(rows)
    cols = {"tstr.gbm.roc_auc": "AUC gbm", "tstr.logreg.roc_auc": "AUC logreg", "tstr.direct.roc_auc": "AUC direct",
            "tstr.gbm.accuracy": "acc gbm", "tstr.gbm.f1": "F1 gbm", "tvd1": "TVD 1-way", "tvd2": "TVD 2-way",
            "fit_s": "fit s", "peak_rss_mb": "peak MB", "epsilon_spent": "ε spent"}
    keep = [c for c in cols if c in df.columns]
    df["epsilon"] = df["epsilon"].fillna(np.inf)
    g = df.groupby(["dataset", "method", "epsilon"])[keep].agg(["mean", "std"])
    lines = ["# Utility benchmark", "", "Commands (in this order; rows already in the .json are kept):", "",
             *[f"    {c}" for c in commands], "",
             f"Machine: {os.cpu_count()} cores; means ± std over seeds; δ = 1e-5; TSTR = train on synthetic, "
             "test on real (adult.test or a seeded 20% split).", ""]
    head = ["dataset", "method", "ε"] + [cols[c] for c in keep]
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (ds, m, e), r in g.iterrows():
        cells = [ds, m, "∞" if not np.isfinite(e) else f"{e:g}"]
        for c in keep:
            mu, sd = r[(c, "mean")], r[(c, "std")]
            f = ".0f" if c in ("fit_s", "peak_rss_mb") else ".3f"
            cells.append("" if pd.isna(mu) else (f"{mu:{f}}" if pd.isna(sd) else f"{mu:{f}} ± {sd:{f}}"))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Notes:", "",
              "* TVD: mean total variation distance over all 1-way / 2-way marginals of the public encoding "
              "(dpsyn.validation.metrics.marginal_tvd) between the training file and the synthetic table.",
              "* `dpsgd_lr` / `dpsgd_mlp`: DP-SGD on the real rows at the same ε (no synthetic table); "
              "their AUC is in `AUC direct`.",
              "* MST / AIM: smartnoise-synth in benchmarks/.envs/snsynth, on the same public encoding, "
              "sampled i.i.d. from the fitted graphical model (benchmarks/peers/run_peer.py). AIM is capped "
              "at the number of rounds in its command (`--aim-rounds`; its default, 16·d = 240 here, takes "
              "hours on 2 cores).",
              "* fit s: fitting only (peers: inside their process, excluding start-up and sampling). "
              "peak MB: max RSS of the process that fitted and sampled (a fresh one per row).",
              ]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
