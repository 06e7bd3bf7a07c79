"""How much of a synthetic table's logistic-regression TSTR is lost to the within-bin decode, per method.

Every synthesizer of the suite (dpsyn's, the trivial baselines, MST through benchmarks/peers) writes a numeric
value by drawing it uniformly inside its public bin (``DiscreteEncoder.decode``). Where a schema's last bin is wide
(visit counts in ``[40, 365)``: real values stop near 90) the draws sit far beyond the real values, and a logistic
regression on the raw numbers (the suite's ``logreg``) pays for it. This probe scores the same synthetic table twice
against the real test split: the suite's logreg on raw values, and a logreg on the one-hot bins (which the decode
cannot move). For pgm it also prints the AUC on the real test rows of the fitted model's own p(y | x) (its labels'
law), which no decode touches; last, the suite's logreg and gbm on the same codes decoded with
``within_bin="shaped"``.

    python benchmarks/decode_probe.py ofp:1 --methods pgm naive_bayes --seeds 0 1 2
    python benchmarks/decode_probe.py ofp:1 --methods pgm --config '{"structure": "star"}'

Metrics read the real rows (public benchmark data), as the suite's do.
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


def binned_logreg_auc(syn, test, schema, positive: str) -> float:
    """ROC AUC on ``test`` of a logistic regression trained on ``syn``'s one-hot codes (the schema's bins)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.preprocessing import OneHotEncoder

    from dpsyn.encoding import DiscreteEncoder

    enc = DiscreteEncoder(schema)
    pos = enc.columns[-1].labels.index(positive)
    a, b = enc.encode(syn), enc.encode(test)
    if len(set(a[:, -1] == pos)) < 2:
        return 0.5
    oh = OneHotEncoder(handle_unknown="ignore").fit(a[:, :-1])
    clf = LogisticRegression(max_iter=2000).fit(oh.transform(a[:, :-1]), a[:, -1] == pos)
    return float(roc_auc_score(b[:, -1] == pos, clf.predict_proba(oh.transform(b[:, :-1]))[:, 1]))


def model_label_auc(synth, test, positive: str) -> float:
    """ROC AUC on ``test`` of a fitted pgm's own p(y | x) (post-processing of the fitted model)."""
    from sklearn.metrics import roc_auc_score

    codes = synth.encoder_.encode(test)
    pos = synth.encoder_.columns[-1].labels.index(positive)
    lp = synth._model_label_log_probs(synth.compression_.compress(codes))
    return float(roc_auc_score(codes[:, -1] == pos, lp[:, pos]))


def main(argv=None) -> None:
    import suite

    from dpsyn.validation.metrics import tstr_scores

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cells", nargs="+", help="table:epsilon, e.g. ofp:1")
    ap.add_argument("--methods", nargs="+", default=["pgm", "naive_bayes", "independent"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--config", default="{}", help="JSON: pgm settings for this probe, e.g. '{\"structure\": \"star\"}'")
    args = ap.parse_args(argv)
    cfg = json.loads(args.config)
    warnings.filterwarnings("ignore")
    print("table eps method: logreg raw / logreg on bins / gbm / pgm's own p(y|x) / logreg, gbm with the shaped "
          "within-bin decode (means over seeds)")
    for cell in args.cells:
        name, eps = cell.split(":")
        schema, train, test = suite.load(name)
        positive = suite.POSITIVE[name]
        for method in args.methods:
            rows = []
            for seed in args.seeds:
                s = suite._make(method, float(eps), seed, len(train))  # the suite's own construction
                if method == "pgm" and cfg:
                    s.config = type(s.config).model_validate({**s.config.model_dump(), **cfg})
                s.fit(train, schema)
                syn = s.sample(len(train), random_state=seed)
                t = tstr_scores(syn, test, schema, positive=positive, random_state=0)
                own = model_label_auc(s, test, positive) if method == "pgm" else float("nan")
                shaped = s.sample(len(train), random_state=seed, within_bin="shaped")  # the same codes
                ts = tstr_scores(shaped, test, schema, positive=positive, random_state=0)
                rows.append((t["logreg"]["roc_auc"], binned_logreg_auc(syn, test, schema, positive),
                             t["gbm"]["roc_auc"], own, ts["logreg"]["roc_auc"], ts["gbm"]["roc_auc"]))
            m = np.nanmean(np.array(rows, dtype=float), axis=0) if method == "pgm" else np.array(rows).mean(axis=0)
            print(name, eps, f"{method}:", " / ".join("–" if np.isnan(x) else f"{x:.3f}" for x in m), flush=True)
        t = tstr_scores(train, test, schema, positive=positive, random_state=0)
        print(name, eps, f"real: {t['logreg']['roc_auc']:.3f} / {binned_logreg_auc(train, test, schema, positive):.3f}"
              f" / {t['gbm']['roc_auc']:.3f} / – / – / –", flush=True)


if __name__ == "__main__":
    main()
