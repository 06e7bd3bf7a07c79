"""Watermark benchmark: robustness of the statistical mark, false positives, and its utility cost.

A stand-in for synthetic output (the UCI Adult training file, or a table sampled
from a dpgen model fitted on it) is marked with one key; then, for each attack
and each number of rows left, 20 trials report the share with p < 1e-3 (and
p < 1e-6). False positives: thousands of wrong-key tests on unmarked real rows
and on rows marked with another key. Utility: per-column KS and TSTR ROC AUC
(train on the table, test on adult.test) with and without the mark.

    python benchmarks/watermark.py --base real decoded --strength 0.005 0.01 --out benchmarks/results/watermark
    python benchmarks/watermark.py --base dpgen --fpr-trials 2000 --out /tmp/wm-dpgen   # trains dpgen (slow on CPU)

Attacks (every one keeps the stated number of rows, chosen at random):
  none            rows subset only
  delete-50%      a fragment of 2n rows, half of them deleted at random
  drop-_wm        the `_wm` column removed
  half-columns    a random half of the columns kept (`_wm` dropped too)
  noise-0.1%      Gaussian noise, σ = 0.1% of each numeric column's public range
  noise-1%        σ = 1% of the public range
  round-int       numeric columns rounded to integers
  round-10-wide   columns whose public range is ≥ 1000 rounded to tens
  round-10-all    every numeric column rounded to tens
  shuffle         rows and columns shuffled
  combined-0.1%   delete-50% + drop-_wm + half-columns + noise-0.1% + round-int + shuffle
  combined-1%     the same with noise-1%
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DATA = REPO.parent / "shared" / "data" / "adult"
SIZES = [50, 100, 200, 500, 1000, 2000, 5000, 10000]
ATTACKS = ["none", "delete-50%", "drop-_wm", "half-columns", "noise-0.1%", "noise-1%", "round-int",
           "round-10-wide", "round-10-all", "shuffle", "combined-0.1%", "combined-1%"]


BASES = {
    "real": "UCI Adult adult.data (real rows)",
    "decoded": "adult.data passed through the public encoding and decoded (every numeric value redrawn uniformly "
               "inside its public bin, as dpgen's sampler does): the output of a dpgen that had learnt the "
               "distribution perfectly",
    "dpgen": "a dpgen model fitted on adult.data at ε = 1, sampled to its size",
}


def load_base(kind: str, seed: int):
    from dpsyn.io import read_table
    from dpsyn.schema import load_schema

    schema = load_schema("adult")
    train = read_table(DATA / "adult.data", schema)
    test = read_table(DATA / "adult.test", schema)
    if kind == "real":
        return schema, train, train, test
    if kind == "decoded":
        from dpsyn.encoding import DiscreteEncoder

        enc = DiscreteEncoder(schema)
        return schema, enc.decode(enc.encode(train), rng=np.random.default_rng(seed)), train, test
    from dpsyn.synth import create

    synth = create("dpgen", {}, privacy={"epsilon": 1.0, "delta": 1e-5, "secure_rng": False, "noise_seed": seed})
    synth.fit(train, schema)
    return schema, synth.sample(len(train), random_state=seed), train, test


class Attacker:
    def __init__(self, schema, rng: np.random.Generator):
        self.schema, self.rng = schema, rng
        self.numeric = [c for c in schema.columns if c.kind.value == "numeric"]

    def _noise(self, df, frac):
        df = df.copy()
        for c in self.numeric:
            if c.name in df.columns:
                lo, hi = c.numeric_bounds()
                df[c.name] = pd.to_numeric(df[c.name]) + self.rng.normal(0, frac * (hi - lo), len(df))
        return df

    def _round(self, df, q, wide_only=False):
        df = df.copy()
        for c in self.numeric:
            lo, hi = c.numeric_bounds()
            if c.name in df.columns and (not wide_only or hi - lo >= 1000):
                df[c.name] = (pd.to_numeric(df[c.name]) / q).round() * q
        return df

    def _half_columns(self, df):
        cols = [c for c in df.columns if c != "_wm"]
        keep = self.rng.choice(cols, len(cols) // 2, replace=False)
        return df[list(keep)]

    def _shuffle(self, df):
        df = df.sample(frac=1.0, random_state=int(self.rng.integers(1 << 31))).reset_index(drop=True)
        return df[list(self.rng.permutation(df.columns))]

    def fragment(self, marked: pd.DataFrame, attack: str, n: int) -> pd.DataFrame:
        seed = int(self.rng.integers(1 << 31))
        if attack in ("delete-50%", "combined-0.1%", "combined-1%"):
            df = marked.sample(min(2 * n, len(marked)), random_state=seed)
            df = df.sample(n, random_state=seed + 1)
        else:
            df = marked.sample(n, random_state=seed)
        if attack in ("drop-_wm",):
            df = df.drop(columns=["_wm"])
        if attack == "half-columns":
            df = self._half_columns(df)
        if attack == "noise-0.1%":
            df = self._noise(df, 0.001)
        if attack == "noise-1%":
            df = self._noise(df, 0.01)
        if attack == "round-int":
            df = self._round(df, 1)
        if attack == "round-10-wide":
            df = self._round(df, 10, wide_only=True)
        if attack == "round-10-all":
            df = self._round(df, 10)
        if attack == "shuffle":
            df = self._shuffle(df)
        if attack.startswith("combined"):
            df = self._half_columns(df.drop(columns=["_wm"]))
            df = self._round(self._noise(df, 0.001 if attack.endswith("0.1%") else 0.01), 1)
            df = self._shuffle(df)
        return df


def robustness(schema, marked, key, *, trials: int, sizes, attacks, seed: int, categorical: bool):
    from dpsyn.watermark import detect_statistical

    rng = np.random.default_rng(seed)
    att = Attacker(schema, rng)
    out = {}
    for attack in attacks:
        out[attack] = {}
        for n in sizes:
            if attack in ("delete-50%", "combined-0.1%", "combined-1%") and 2 * n > len(marked):
                continue
            ps = [detect_statistical(att.fragment(marked, attack, n), schema, [key], categorical=categorical).p_value
                  for _ in range(trials)]
            ps = np.array(ps)
            out[attack][n] = {"rate_1e-3": float(np.mean(ps < 1e-3)), "rate_1e-6": float(np.mean(ps < 1e-6)),
                              "median_p": float(np.median(ps))}
        print(f"  {attack:14s} " + " ".join(f"{n}:{v['rate_1e-3']:.2f}" for n, v in out[attack].items()), flush=True)
    return out


def issue_check(schema, marked, key, *, trials: int, seed: int, categorical: bool):
    """The issue's bar: a 500-row fragment, `_wm` dropped, half of its rows deleted; p < 1e-6 every time."""
    from dpsyn.watermark import detect_statistical

    rng = np.random.default_rng(seed)
    ps = []
    for _ in range(trials):
        frag = marked.sample(500, random_state=int(rng.integers(1 << 31))).drop(columns=["_wm"])
        frag = frag.sample(250, random_state=int(rng.integers(1 << 31)))
        ps.append(detect_statistical(frag, schema, [key], categorical=categorical).p_value)
    ps = np.array(ps)
    return {"trials": trials, "all_below_1e-6": bool((ps < 1e-6).all()), "max_p": float(ps.max()),
            "median_p": float(np.median(ps))}


_FPR_CACHE: dict = {}


def false_positives(schema, unmarked, other_marked, *, trials: int, n: int, seed: int, categorical: bool):
    from dpsyn.watermark import WatermarkKey, detect_statistical

    out = {}
    for name, base in (("real data", unmarked), ("marked with another key", other_marked)):
        memo = (name, trials, n, seed, categorical)
        if name == "real data" and memo in _FPR_CACHE:  # the same rows and keys give the same p-values
            out[name] = _FPR_CACHE[memo]
            continue
        rng = np.random.default_rng(seed)
        ps = np.empty(trials)
        for i in range(trials):
            key = WatermarkKey.from_secret(rng.bytes(32))  # a fresh wrong key every trial
            frag = base.sample(n, random_state=int(rng.integers(1 << 31)))
            ps[i] = detect_statistical(frag, schema, [key], categorical=categorical).p_value
        out[name] = {"trials": trials, "rows": n, "fp_1e-3": int((ps < 1e-3).sum()), "fp_1e-6": int((ps < 1e-6).sum()),
                     "frac_p_below_0.05": float(np.mean(ps < 0.05)), "min_p": float(ps.min())}
        _FPR_CACHE[memo] = out[name]
        print(f"  FPR {name}: {out[name]}", flush=True)
    return out


def ks(a, b) -> float:
    from scipy.stats import ks_2samp

    a, b = pd.to_numeric(a, errors="coerce").dropna(), pd.to_numeric(b, errors="coerce").dropna()
    return float(ks_2samp(a, b).statistic)


def tvd(a: pd.Series, b: pd.Series) -> float:
    pa, pb = a.value_counts(normalize=True, dropna=False), b.value_counts(normalize=True, dropna=False)
    return float(0.5 * pa.sub(pb, fill_value=0).abs().sum())


def utility(schema, base, marked, test, seed: int):
    from dpsyn.validation.metrics import marginal_tvd, tstr_scores

    cols = {}
    for c in schema.columns:
        if c.kind.value == "numeric":
            cols[c.name] = {"stat": "KS", "vs_test_without": ks(test[c.name], base[c.name]),
                            "vs_test_with": ks(test[c.name], marked[c.name]), "shift": ks(base[c.name], marked[c.name])}
        elif c.kind.value == "categorical":
            cols[c.name] = {"stat": "TVD", "vs_test_without": tvd(test[c.name], base[c.name]),
                            "vs_test_with": tvd(test[c.name], marked[c.name]),
                            "shift": tvd(base[c.name], marked[c.name])}
    t0 = tstr_scores(base, test, schema, positive=">50K", random_state=seed)
    t1 = tstr_scores(marked.drop(columns=["_wm"]), test, schema, positive=">50K", random_state=seed)
    return {"columns": cols, "tstr_without": t0, "tstr_with": t1,
            "tvd2_without": marginal_tvd(test, base, schema), "tvd2_with": marginal_tvd(test, marked, schema)}


def _section(res: dict) -> list[str]:
    L = [f"## {res['base']}, strength {res['strength']}", ""]
    L += [f"Stand-in for synthetic output: {res['base_desc']}; {res['rows']} rows. Largest KS/TVD shift per column "
          f"{res['strength']}, grid {res['grid']}, categorical columns "
          f"{'marked' if res['categorical'] else 'not marked'}. {res['trials']} trials per cell.", ""]
    ic = res["issue_check"]
    L += ["### The issue's bar", "",
          f"500-row fragment, `_wm` dropped, half of its rows deleted (250 left), {ic['trials']} trials: "
          f"p < 1e-6 in every trial: **{'yes' if ic['all_below_1e-6'] else 'no'}** "
          f"(largest p {ic['max_p']:.2g}, median {ic['median_p']:.2g}).", ""]
    sizes = sorted({int(n) for a in res["robustness"].values() for n in a})
    for thr in ("1e-3", "1e-6"):
        L += [f"### Detection rate: share of trials with p < {thr}, by rows kept", ""]
        L += ["| attack | " + " | ".join(str(n) for n in sizes) + " |", "|---|" + "---:|" * len(sizes)]
        for attack, cells in res["robustness"].items():
            cells = {int(k): v for k, v in cells.items()}
            row = [f"{cells[n][f'rate_{thr}']:.2f}" if n in cells else "–" for n in sizes]
            L.append(f"| {attack} | " + " | ".join(row) + " |")
        L.append("")
    L += ["### False positives (a fresh wrong key per trial)", "",
          "| data | trials | rows | p < 1e-3 | p < 1e-6 | share p < 0.05 | smallest p |",
          "|---|---:|---:|---:|---:|---:|---:|"]
    for name, f in res["false_positives"].items():
        L.append(f"| {name} | {f['trials']} | {f['rows']} | {f['fp_1e-3']} | {f['fp_1e-6']} | "
                 f"{f['frac_p_below_0.05']:.4f} | {f['min_p']:.3g} |")
    u = res["utility"]
    L += ["", "### Utility cost", "",
          "Per column: distance to the real test file (adult.test) without and with the mark, and the shift the "
          "mark itself causes (marked vs unmarked table).", "",
          "| column | statistic | without | with | change | shift |", "|---|---|---:|---:|---:|---:|"]
    for name, c in u["columns"].items():
        L.append(f"| {name} | {c['stat']} | {c['vs_test_without']:.4f} | {c['vs_test_with']:.4f} | "
                 f"{c['vs_test_with'] - c['vs_test_without']:+.4f} | {c['shift']:.4f} |")
    L += ["", "| TSTR (train on the table, test on adult.test) | without | with | change |", "|---|---:|---:|---:|"]
    for m in u["tstr_without"]:
        a, b = u["tstr_without"][m]["roc_auc"], u["tstr_with"][m]["roc_auc"]
        L.append(f"| ROC AUC, {m} | {a:.4f} | {b:.4f} | {b - a:+.4f} |")
    L.append(f"| mean 2-way TVD vs test | {u['tvd2_without']:.4f} | {u['tvd2_with']:.4f} | "
             f"{u['tvd2_with'] - u['tvd2_without']:+.4f} |")
    return L + [""]


def write_markdown(runs: list[dict], path: Path, command: str, seconds: float) -> None:
    L = ["# Watermark benchmark", "", "Command (about "
         f"{seconds / 60:.0f} min on 2 CPU cores):", "", "```", command, "```", "",
         "Each section marks a stand-in for synthetic output with one key. Real UCI Adult rows are a hard case "
         "(exact point masses, e.g. capital-gain 0 and hours 40, and no within-bin noise to replace). "
         "Attacks (see the docstring of benchmarks/watermark.py) keep the stated number of rows, chosen at random. "
         "Adult's numeric columns are integers, so `round-int` changes nothing; noise of 1% of the *public* range is "
         "large for Adult (σ = 15,000 for fnlwgt, 1,000 for capital-gain, 0.73 years for age), while 0.1% is "
         "about the columns' own resolution.", ""]
    for res in runs:
        L += _section(res)
    path.write_text("\n".join(L))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base", nargs="+", choices=list(BASES), default=["real"], help="One section per base.")
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--fpr-trials", type=int, default=10000)
    ap.add_argument("--fpr-rows", type=int, default=500)
    ap.add_argument("--sizes", type=int, nargs="+", default=SIZES)
    ap.add_argument("--attacks", nargs="+", default=ATTACKS, choices=ATTACKS)
    ap.add_argument("--strength", type=float, nargs="+", default=None, help="One section per strength.")
    ap.add_argument("--grid", type=int, default=None)
    ap.add_argument("--categorical", action="store_true", help="Also mark categorical columns.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "watermark")
    args = ap.parse_args(argv)

    import warnings

    warnings.simplefilter("ignore")
    from dpsyn.watermark import (
        DEFAULT_GRID,
        DEFAULT_STRENGTH,
        WatermarkKey,
        apply_watermark,
        embed_statistical,
        record_code,
    )

    t0 = time.time()
    rng = np.random.default_rng(args.seed)
    key, other = WatermarkKey.from_secret(rng.bytes(32)), WatermarkKey.from_secret(rng.bytes(32))
    code = record_code(key, batch_id="benchmark", run_id="benchmark", timestamp="0")
    runs = []
    for base_kind in args.base:
        schema, base, real, test = load_base(base_kind, args.seed)
        for strength in args.strength or [DEFAULT_STRENGTH]:
            kw = dict(strength=strength, grid=args.grid or DEFAULT_GRID, categorical=args.categorical)
            marked = apply_watermark(embed_statistical(base, schema, key, random_state=args.seed, **kw), code,
                                     key=key)
            other_marked = embed_statistical(base, schema, other, random_state=args.seed + 1, **kw)
            print(f"{base_kind}, strength {strength}: marked {len(marked)} rows ({time.time() - t0:.0f} s)", flush=True)
            res = {"base": base_kind, "base_desc": BASES[base_kind], "rows": len(base), **kw, "trials": args.trials}
            res["issue_check"] = issue_check(schema, marked, key, trials=100, seed=args.seed + 2,
                                             categorical=args.categorical)
            print(f"  issue check: {res['issue_check']}", flush=True)
            res["robustness"] = robustness(schema, marked, key, trials=args.trials, sizes=args.sizes,
                                           attacks=args.attacks, seed=args.seed + 3, categorical=args.categorical)
            res["false_positives"] = false_positives(schema, real, other_marked, trials=args.fpr_trials,
                                                     n=args.fpr_rows, seed=args.seed + 4, categorical=args.categorical)
            res["utility"] = utility(schema, base, marked, test, args.seed)
            runs.append(res)
    seconds = time.time() - t0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps({"seconds": seconds, "runs": runs}, indent=2, default=str))
    command = "python benchmarks/watermark.py " + " ".join(argv if argv is not None else sys.argv[1:])
    write_markdown(runs, args.out.with_suffix(".md"), command.strip(), seconds)
    print(f"wrote {args.out.with_suffix('.md')} in {seconds:.0f} s")


if __name__ == "__main__":
    main()
