"""Related tables (issue 21): the Synthea export (patients, conditions, medications), the patient as the unit.

    python benchmarks/relational_synthea.py --eps 1 3 --seeds 0 1 2 --out benchmarks/results/relational_synthea

../shared/data/synthea (543 simulated patients, 18,819 condition and 17,225 medication rows; SOURCE.md), read
with the shipped dataset schema ``synthea`` (dpsyn/schemas/datasets/synthea.yaml), split by *patient* 70/30
(seed 0: a patient's rows are all on one side). Every method's guarantee is per patient at the ε shown:

* ``relational``: dpsyn's relational synthesizer (dpsyn.relational): patients with rows-per-patient columns, the
  dataset's per-patient flags (clinical categories of conditions and drug classes, ``person_flags`` in synthea.yaml)
  and its target (whether DEATHDATE is known), then each patient's conditions and medications drawn given the
  patient and agreeing with its flags; contribution bounds 100 conditions and 200 medications per patient;
  condition and medication descriptions chosen by DP selection (a non-selected description in a flag's category
  becomes the category's public label).
* ``one_row`` (baseline b): the same with every child table bounded to one row per patient (the naive way to
  make a row-level method person-level).
* ``independent`` (the trivial baseline): the same relational synthesizer with every component's backbone measuring
  one-way marginals only (pgm ``structure: independent``): patients' columns and rows-per-patient drawn from
  independent noisy histograms, child rows from independent noisy histograms of each child column (matched to
  patients on columns that carry nothing about them). What a relational method must beat.
* ``flat``: the hand-flattened table a user of a single-table tool would make (one row per patient: the suite's
  ``synthea`` table, demographics + rows per patient + condition/medication flags), row-level ``pgm`` at ε (one
  row per patient, so the row guarantee is the patient guarantee). It has no child tables: TSTR only.
* ``group`` (baseline a): row-level ``pgm`` on conditions joined to their patient's columns (one row per
  condition) at ε / k_max, k_max the true largest number of conditions of a training patient (group privacy).
  No patient ids: conditions-table and pair metrics only.
* ``real``: the real training tables (no privacy).

Metrics on real rows without noise (public benchmark data; never done by a run): per-table mean 1- and 2-way
TVD over the schemas' bins (selected text columns over their real values, the synthetic ``__other__`` its own
cell); children-per-patient TVD over each child's public count bins (patients with no rows included);
patient×child pair TVD (each patient column × each child column over child rows); foreign-key validity;
TSTR ROC AUC (gradient boosting, logistic regression) for death from the patient's other records, flattened as
``flat`` is, tested on the real test patients; real identifier values found in any synthetic table (must be 0).
Results: ``<out>.json`` (resumable) and ``<out>.md``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import sys
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
METHODS = ("relational", "one_row", "independent", "flat", "group", "real")
IDENTIFIERS = {"patients": ["Id", "SSN", "DRIVERS", "PASSPORT", "FIRST", "LAST", "MAIDEN", "ADDRESS"],
               "conditions": ["ENCOUNTER"], "medications": ["ENCOUNTER", "PAYER"]}


def load():
    """(dataset, train tables, test tables): split by patient."""
    from dpsyn.relational import load_dataset_schema, read_dataset

    ds = load_dataset_schema("synthea")
    tables = read_dataset(ds, DATA / "synthea")
    ids = tables["patients"]["Id"].astype("string").to_numpy()
    test_ids = set(np.random.default_rng(0).permutation(ids)[int(0.7 * len(ids)):])

    def part(is_test: bool) -> dict[str, pd.DataFrame]:
        out = {}
        for name, df in tables.items():
            key = df["Id" if name == "patients" else "PATIENT"].astype("string")
            out[name] = df.loc[key.isin(test_ids).to_numpy() == is_test].reset_index(drop=True)
        return out

    return ds, part(False), part(True)


def _labels(s: pd.Series, col) -> pd.Series:
    """A column as public cell labels: bins for numeric/datetime, values for the rest (missing its own cell)."""
    kind = getattr(col, "kind", None)
    if kind is not None and kind.value in ("numeric", "datetime"):
        lo, hi = col.numeric_bounds()
        edges = np.asarray(col.bin_edges())
        if kind.value == "datetime":
            t = pd.to_datetime(s, errors="coerce", utc=True).dt.tz_convert(None)
            x = ((t - pd.Timestamp("1970-01-01")) / pd.Timedelta(days=1)).to_numpy(dtype=np.float64)
        else:
            x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64)
        b = np.clip(np.searchsorted(edges, np.clip(x, lo, hi), side="right") - 1, 0, len(edges) - 2)
        return pd.Series(np.where(np.isnan(x), "<missing>", b.astype(str)), index=s.index)
    return s.astype("string").fillna("<missing>")


def _tvd(a: pd.Series, b: pd.Series) -> float:
    pa, pb = a.value_counts(normalize=True), b.value_counts(normalize=True)
    idx = pa.index.union(pb.index)
    return 0.5 * float(np.abs(pa.reindex(idx, fill_value=0) - pb.reindex(idx, fill_value=0)).sum())


def _columns(ds, name: str) -> list:
    if name == "patients":
        return [c for c in ds.root_schema.columns if c.synthesizable]
    child = next(c for c in ds.children if c.name == name)
    return [c for c in child.schema_.columns if c.synthesizable or c.name in child.ref.select]


def table_tvd(ds, name: str, real: pd.DataFrame, syn: pd.DataFrame) -> tuple[float, float]:
    cols = [c for c in _columns(ds, name) if c.name in syn.columns]
    lr = {c.name: _labels(real[c.name], c) for c in cols}
    ls = {c.name: _labels(syn[c.name], c) for c in cols}
    one = float(np.mean([_tvd(lr[c], ls[c]) for c in lr]))
    two = float(np.mean([_tvd(lr[a] + "|" + lr[b], ls[a] + "|" + ls[b]) for a, b in itertools.combinations(lr, 2)]))
    return one, two


def children_tvd(ds, child, real: dict, syn: dict) -> float:
    edges = np.asarray(child.count_edges())

    def hist(tables):
        ids = tables["patients"]["Id"].astype("string")
        n = ids.map(tables[child.name]["PATIENT"].astype("string").value_counts()).fillna(0).to_numpy()
        b = np.clip(np.searchsorted(edges, np.minimum(n, edges[-1]), side="right") - 1, 0, len(edges) - 2)
        return pd.Series(b.astype(str))

    return _tvd(hist(real), hist(syn))


def pair_tvd(ds, child, real: dict, syn: dict) -> float:
    """Mean TVD of (patient column × child column) over child rows."""
    pcols = [c for c in ds.root_schema.columns if c.synthesizable]
    ccols = [c for c in _columns(ds, child.name) if c.name in syn[child.name].columns]

    def joined(tables):
        p = tables["patients"].assign(Id=tables["patients"]["Id"].astype("string")).set_index("Id")
        ch = tables[child.name]
        fk = ch["PATIENT"].astype("string")
        return ({c.name: _labels(p[c.name].reindex(fk.to_numpy()).reset_index(drop=True), c) for c in pcols},
                {c.name: _labels(ch[c.name].reset_index(drop=True), c) for c in ccols})

    (rp, rc), (sp, sc) = joined(real), joined(syn)
    return float(np.mean([_tvd(rp[a] + "|" + rc[b], sp[a] + "|" + sc[b]) for a in rp for b in rc]))


def fk_valid(ds, syn: dict) -> float:
    ids = set(syn["patients"]["Id"].astype("string"))
    fks = pd.concat([syn[c.name]["PATIENT"].astype("string") for c in ds.children])
    return float(fks.isin(ids).mean()) if len(fks) else 1.0


def leaked(real_all: dict, syn: dict) -> int:
    """Synthetic cells equal to a real identifier value (any table, any column)."""
    secrets = set()
    for t, cols in IDENTIFIERS.items():
        for c in cols:
            secrets |= {x for x in real_all[t][c].dropna().astype(str) if x.strip()}
    return int(sum(df[c].astype(str).isin(secrets).sum() for df in syn.values() for c in df.columns))


def tstr(flat_train: pd.DataFrame, flat_test: pd.DataFrame) -> dict:
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    feats = [c for c in flat_test.columns if c not in ("Id", "deceased")]
    both = pd.get_dummies(pd.concat([flat_train[feats], flat_test[feats]]).astype(
        {c: "string" for c in ("gender", "race", "ethnicity", "marital")}), dummy_na=True).astype(float).fillna(0)
    xtr, xte = both.iloc[:len(flat_train)], both.iloc[len(flat_train):]
    ytr = flat_train["deceased"].astype(str).eq("1").to_numpy()
    yte = flat_test["deceased"].astype(str).eq("1").to_numpy()
    if ytr.all() or not ytr.any():
        return {"gbm": 0.5, "logreg": 0.5}
    gbm = HistGradientBoostingClassifier(random_state=0).fit(xtr, ytr)
    lr = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(xtr, ytr)
    return {"gbm": float(roc_auc_score(yte, gbm.predict_proba(xte)[:, 1])),
            "logreg": float(roc_auc_score(yte, lr.predict_proba(xte)[:, 1]))}


def flatten(tables: dict) -> pd.DataFrame:
    from suite import synthea_flat

    p = tables["patients"].copy()
    for c in ("HEALTHCARE_EXPENSES", "HEALTHCARE_COVERAGE"):
        p[c] = pd.to_numeric(p[c], errors="coerce")
    return synthea_flat(p, tables["conditions"], tables["medications"])


def run_method(method: str, ds, train: dict, eps: float, seed: int,
               backbone: dict | None = None) -> tuple[dict | None, pd.DataFrame | None]:
    """(synthetic tables or None, synthetic flat table or None); ``backbone``: pgm settings for every component of
    the relational methods (a probe; the committed rows use the defaults)."""
    from dpsyn.relational import RelationalSynthesizer

    privacy = {"epsilon": eps, "delta": DELTA, "secure_rng": False, "noise_seed": seed}
    if method == "real":
        return train, None
    if method in ("relational", "one_row", "independent"):
        use = ds
        if method == "one_row":
            kids = [c.model_copy(update={"ref": c.ref.model_copy(update={"max_rows_per_person": 1,
                                                                         "count_bins": [0, 1]})})
                    for c in ds.children]
            use = ds.model_copy(update={"children": kids})
        config = {"backbone": {**(backbone or {}), **({"structure": "independent"} if method == "independent" else {})}}
        s = RelationalSynthesizer(config, privacy=privacy).fit(train, use)
        spent = s.privacy_["epsilon_spent"]
        assert spent <= eps + 1e-9, spent
        return s.sample(random_state=seed), None
    from dpsyn.io import coerce_to_schema
    from dpsyn.schema import load_schema
    from dpsyn.synth import create

    if method == "flat":
        schema = load_schema("synthea")
        flat = flatten(train)
        df = coerce_to_schema(flat.drop(columns="Id").astype(str).replace({"nan": None, "<NA>": None}), schema,
                              check_domains=False)
        syn = create("pgm", {}, privacy=privacy).fit(df, schema).sample(len(df), random_state=seed)
        return None, syn.assign(Id=[f"s{i}" for i in range(len(syn))])
    if method == "group":
        from dpsyn.schema import Column, ColumnKind, TableSchema

        child = next(c for c in ds.children if c.name == "conditions")
        k_max = int(train["conditions"]["PATIENT"].value_counts().max())
        cols = [c for c in child.schema_.columns if c.synthesizable]
        pcols = [c for c in ds.root_schema.columns if c.synthesizable]
        desc = child.schema_.column("DESCRIPTION")
        # the real top 150 descriptions (not DP): a domain that favours this baseline
        top = train["conditions"]["DESCRIPTION"].value_counts().index[:150].tolist()
        cols.append(Column(name="DESCRIPTION", kind=ColumnKind.categorical, domain=top + ["__other__"],
                           tier=desc.tier))
        schema = TableSchema(name="synthea_flat_conditions", columns=cols + pcols)
        p = train["patients"].set_index(train["patients"]["Id"].astype("string"))
        ch = train["conditions"]
        df = pd.DataFrame({c.name: ch[c.name] for c in cols if c.name != "DESCRIPTION"})
        df["DESCRIPTION"] = ch["DESCRIPTION"].where(ch["DESCRIPTION"].isin(top), "__other__")
        for c in pcols:
            df[c.name] = p[c.name].reindex(ch["PATIENT"].astype("string").to_numpy()).to_numpy()
        syn = create("pgm", {"task": "off"}, privacy={**privacy, "epsilon": eps / k_max}).fit(df, schema).sample(
            len(df), random_state=seed)
        return {"conditions_joined": syn}, None
    raise ValueError(method)


def evaluate(method: str, ds, train: dict, test: dict, real_all: dict, syn: dict | None,
             flat: pd.DataFrame | None) -> dict:
    out: dict = {}
    test_flat = flatten(test)
    if syn is not None and "patients" in syn:
        for name in ds.tables():
            out[f"tvd1.{name}"], out[f"tvd2.{name}"] = table_tvd(ds, name, train[name], syn[name])
        for c in ds.children:
            out[f"children_tvd.{c.name}"] = children_tvd(ds, c, train, syn)
            out[f"pair_tvd.{c.name}"] = pair_tvd(ds, c, train, syn)
        out["fk_valid"] = fk_valid(ds, syn)
        out["leaked_identifiers"] = leaked(real_all, syn)
        out.update({f"tstr.{k}": v for k, v in tstr(flatten(syn), test_flat).items()})
    elif syn is not None:  # group: the joined conditions table
        j = syn["conditions_joined"]
        child = next(c for c in ds.children if c.name == "conditions")
        conds = j[[c.name for c in _columns(ds, "conditions") if c.name in j.columns]]
        out["tvd1.conditions"], out["tvd2.conditions"] = table_tvd(ds, "conditions", train["conditions"], conds)
        ids = pd.Series([f"g{i}" for i in range(len(j))], dtype="string")
        fake = {"patients": j[[c.name for c in ds.root_schema.columns if c.synthesizable]].assign(Id=ids),
                "conditions": conds.assign(PATIENT=ids)}
        out["pair_tvd.conditions"] = pair_tvd(ds, child, train, fake)
        out["leaked_identifiers"] = leaked(real_all, syn)
    if flat is not None:
        out.update({f"tstr.{k}": v for k, v in tstr(flat, test_flat).items()})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 3.0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    ap.add_argument("--out", default="benchmarks/results/relational_synthea")
    ap.add_argument("--backbone", type=json.loads, default=None,
                    help="JSON: pgm settings for the relational methods' components (a probe: use another --out)")
    ap.add_argument("--no-flags", action="store_true",
                    help="drop the dataset's person_flags (a probe of what they cost and buy: use another --out)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    from dpsyn.errors import PrivacyBudgetExceededError

    out = Path(args.out)
    path = out.with_suffix(".json")
    saved = json.loads(path.read_text()) if path.exists() else {"rows": {}}
    command = "python benchmarks/relational_synthea.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    commands = saved.setdefault("commands", [saved["command"]] if "command" in saved else [])
    if command not in commands:
        commands.append(command)
    saved["command"] = command
    ds, train, test = load()
    if args.no_flags:
        ds = ds.model_copy(update={"children": [c.model_copy(update={"ref": c.ref.model_copy(
            update={"person_flags": None})}) for c in ds.children]})
    real_all = {k: pd.concat([train[k], test[k]]) for k in train}
    for eps in args.eps:
        for method in args.methods:
            for seed in (args.seeds if method != "real" else [0]):
                key = f"{method}|{eps:g}|{seed}" if method != "real" else "real|-|0"
                if key in saved["rows"]:
                    continue
                t0 = time.time()
                try:
                    syn, flat = run_method(method, ds, train, eps, seed, args.backbone)
                except PrivacyBudgetExceededError as e:  # (a) at ε / k_max: below what a mechanism can spend
                    row = {"infeasible": str(e)}
                else:
                    fit_s = time.time() - t0
                    row = evaluate(method, ds, train, test, real_all, syn, flat) | {"seconds": fit_s}
                saved["rows"][key] = row
                print(key, {k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
                path.write_text(json.dumps(saved, indent=1))
    write_markdown(saved, out.with_suffix(".md"))


def write_markdown(saved: dict, path: Path) -> None:
    rows = saved["rows"]
    cols = [("tstr.gbm", "TSTR gbm"), ("tstr.logreg", "TSTR logreg"), ("children_tvd.conditions", "children/patient TVD: conditions"),
            ("children_tvd.medications", "children/patient TVD: medications"), ("tvd1.patients", "1-way patients"),
            ("tvd2.patients", "2-way patients"), ("tvd1.conditions", "1-way conditions"),
            ("tvd2.conditions", "2-way conditions"), ("tvd1.medications", "1-way medications"),
            ("tvd2.medications", "2-way medications"), ("pair_tvd.conditions", "patient×condition TVD"),
            ("pair_tvd.medications", "patient×medication TVD"), ("fk_valid", "FK valid"),
            ("leaked_identifiers", "real ids in output"), ("seconds", "seconds")]
    lines = ["# Related tables: Synthea (patients, conditions, medications), ε per patient", "",
             f"Commands (rows already in the .json are kept): {'; '.join(f'`{c}`' for c in saved.get('commands', [saved['command']]))}. δ = {DELTA:g}. Means over the seeds present (± seed std where > 1 "
             "seed); `–`: the method does not produce that output. The methods and metrics are in the script's "
             "docstring. TSTR is for death on 163 real test patients (few deaths: a wide seed spread). Machine: 2 "
             "cores, shared with other jobs while this ran (seconds inflated).", ""]
    groups: dict = {}
    for key, r in rows.items():
        m, e, _ = key.split("|")
        groups.setdefault((e, m), []).append(r)
    order = {m: i for i, m in enumerate(METHODS)}
    lines.append("| ε | method | seeds | " + " | ".join(h for _, h in cols) + " |")
    lines.append("|---|---|---|" + "---|" * len(cols))
    notes = []
    for (e, m), rs in sorted(groups.items(), key=lambda x: (x[0][0], order[x[0][1]])):
        if all("infeasible" in r for r in rs):
            lines.append(f"| {e} | {m} | {len(rs)} | " + " | ".join(["cannot run"] + ["–"] * (len(cols) - 1)) + " |")
            notes.append(f"{m} at ε = {e}: {rs[0]['infeasible']}")
            continue
        rs = [r for r in rs if "infeasible" not in r]
        cells = []
        for k, _ in cols:
            xs = [r[k] for r in rs if k in r]
            if not xs or (m == "real" and k == "leaked_identifiers"):  # the real tables hold their ids
                cells.append("–")
            elif k in ("leaked_identifiers",):
                cells.append(str(int(max(xs))))
            elif k == "seconds":
                cells.append(f"{np.mean(xs):.0f}")
            else:
                cells.append(f"{np.mean(xs):.3f}" + (f" ± {np.std(xs):.3f}" if len(xs) > 1 and k.startswith(
                    ("tstr", "children")) else ""))
        lines.append(f"| {e} | {m} | {len(rs)} | " + " | ".join(cells) + " |")
    if notes:
        lines += ["", *[f"* {n} (group privacy: ε / k_max per row)." for n in notes]]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
