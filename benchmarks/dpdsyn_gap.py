"""Where dpdsyn's TSTR AUC goes on Adult: label model, label mixing, transfer to the GBM, and the DP-LR it must beat.

Three one-off analyses behind benchmarks/results/utility.md ("Session 6"); each prints one JSON line per setting.

    python benchmarks/dpdsyn_gap.py dp-lr --grid '{"eps":[0.7,1.0],"C":[1.0,3.0],"lr":[0.02,0.05],"epochs":[10,30],"bs":[1024]}'
    python benchmarks/dpdsyn_gap.py label-mix --seeds 0 1 2
    python benchmarks/dpdsyn_gap.py transfer --seeds 0 1 2 --config '{"label_mix":0}' --draws 4

* ``dp-lr``: the DP task model alone (logistic regression, EMA 0.99) trained on adult.data at each ε and
  hyperparameter setting, AUC on adult.test (seeds 0 and 1).
* ``label-mix``: one dpdsyn fit per seed (ε = 1, defaults); AUC on adult.test of its label model
  (1 − w)·task + w·generator head for several w.
* ``transfer``: one dpdsyn fit per seed; its label model's AUC, then the TSTR AUC of the benchmark's GBM
  trained on ``draws`` synthetic tables, with labels drawn i.i.d. (as dpdsyn does) or by systematic
  sampling (each row's label still has probability p(y | x), counts along sorted p match their
  expectation within 1; binary targets only).
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))


def _systematic(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    order = np.argsort(p[:, 1], kind="stable")
    cum = np.cumsum(p[order, 1])
    u = rng.random()
    hits = np.floor(cum + u) - np.floor(np.concatenate([[0.0], cum[:-1]]) + u)
    y = np.zeros(len(p), dtype=np.int64)
    y[order] = hits.astype(np.int64)
    return y


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", choices=["dp-lr", "label-mix", "transfer"])
    ap.add_argument("--grid", default='{"eps":[1.0],"C":[1.0],"lr":[0.05],"epochs":[10],"bs":[1024]}')
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--config", default="{}", help="dpdsyn settings (label-mix, transfer)")
    ap.add_argument("--draws", type=int, default=4)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    import torch
    import utility as U
    from sklearn.metrics import roc_auc_score

    from dpsyn.encoding import DiscreteEncoder
    from dpsyn.synth.classifier import classifier_log_probs

    torch.set_num_threads(1)
    schema, train, test, spec = U.load("adult")
    enc = DiscreteEncoder(schema)
    a, b = enc.encode(train), enc.encode(test)
    fs, k = enc.sizes[:-1], enc.sizes[-1]
    pos = [str(x) for x in enc.columns[-1].labels].index(spec["positive"])
    y = b[:, -1] == pos

    if args.part == "dp-lr":
        from dpsyn.privacy import NoiseSource, PrivacyAccountant
        from dpsyn.synth.classifier import train_classifier
        from dpsyn.synth.dpsgd import steps_and_rate

        grid = json.loads(args.grid)
        for combo in itertools.product(*grid.values()):
            kw = dict(zip(grid.keys(), combo, strict=True))
            aucs = []
            for seed in (0, 1):
                acct = PrivacyAccountant(epsilon=kw["eps"], delta=1e-5)
                q, steps = steps_and_rate(len(a), batch_size=kw["bs"], epochs=kw["epochs"])
                sigma = acct.calibrate(sample_rate=q, steps=steps, label="task")
                torch.manual_seed(seed)
                net = train_classifier(a, fs, k, accountant=acct, noise=NoiseSource(secure=False, seed=seed),
                                       noise_multiplier=sigma, batch_size=kw["bs"], epochs=kw["epochs"],
                                       max_grad_norm=kw["C"], lr=kw["lr"], label="task", ema_decay=0.99,
                                       public_rows=len(a))
                aucs.append(roc_auc_score(y, classifier_log_probs(net, b[:, :-1], fs)[:, pos]))
            print(json.dumps({**kw, "auc": round(float(np.mean(aucs)), 4), "aucs": [round(x, 4) for x in aucs]}),
                  flush=True)
        return

    import dpsyn.synth.dpdsyn as D
    from dpsyn.synth import create
    from dpsyn.synth.dpgen import _one_hot
    from dpsyn.validation.metrics import marginal_tvd, tstr_scores

    for seed in args.seeds:
        s = create("dpdsyn", json.loads(args.config),
                   privacy={"epsilon": 1.0, "delta": 1e-5, "secure_rng": False, "noise_seed": seed})
        s.fit(train, schema)
        out = {"seed": seed}
        if args.part == "label-mix":
            lt = torch.from_numpy(classifier_log_probs(s.task_, b[:, :-1], fs))
            with torch.no_grad():
                lh = torch.log_softmax(s.net_.heads[-1](_one_hot(torch.from_numpy(b[:, :-1]), fs)).double(), 1)
            for w in (0, 0.15, 0.3, 0.5, 0.7, 1.0):
                out[f"w={w}"] = round(roc_auc_score(y, ((1 - w) * lt + w * lh)[:, pos].numpy()), 4)
        else:
            out["label_model"] = round(roc_auc_score(y, s._label_log_probs(b[:, :-1])[:, pos]), 4)
            iid = D._draw
            try:
                for d in range(args.draws):
                    for name, fn in (("iid", iid), ("systematic", _systematic)):
                        D._draw = fn  # only dpdsyn's label draw; the features come from dpgen's sampler
                        syn = s.sample(len(train), random_state=100 * seed + d)
                        auc = tstr_scores(syn, test, schema, positive=spec["positive"], random_state=seed)["gbm"]
                        out.setdefault(name, []).append(round(auc["roc_auc"], 4))
                        if d == 0:
                            out[f"{name}_tvd2"] = round(marginal_tvd(train, syn, schema, order=2), 4)
            finally:
                D._draw = iid
            out["iid_mean"] = round(float(np.mean(out["iid"])), 4)
            out["systematic_mean"] = round(float(np.mean(out["systematic"])), 4)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
