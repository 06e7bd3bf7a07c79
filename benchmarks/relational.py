"""Person-level privacy (issue 21): diabetes130 with ``patient_nbr`` as the privacy unit, against the baselines.

    python benchmarks/relational.py --eps 1 3 --seeds 0 1 2 --out benchmarks/results/relational

All 101,766 encounters of ../shared/data/diabetes130 (71,518 patients, up to 40 encounters each), split by
*patient* 80/20 (seed 0: no patient on both sides). Every method's guarantee is stated per patient at the same ε:

* ``unit_k<K>``: dpsyn's default backbone (``pgm``) on every training encounter with the schema's privacy unit
  ``patient_nbr`` and contribution bound K (each patient's encounters beyond K dropped at random before any
  read; every mechanism charged per patient: docs/privacy.md "The privacy unit"), measuring person-weighted
  counts (its default). The synthetic table carries fresh patient ids.
* ``unit_k<K>_scaled``: the same with ``person_weights: false``: row counts, each release charged K times.
* ``one_row`` (baseline b): one random encounter per patient, row-level ``pgm`` at ε (one row per patient: the
  row guarantee is the patient guarantee). The same as ``unit_k1``.
* ``group`` (baseline a): today's row-level ``pgm`` on every training encounter at ε / k_max, k_max the true
  largest number of encounters of a training patient (group privacy: k_max · (ε/k_max) = ε per patient).
* ``independent_one_row``, ``naive_bayes_one_row``: the suite's trivial DP baselines (benchmarks/baselines.py:
  independent noisy one-way marginals; noisy target and feature × target histograms) on one random encounter per
  patient at ε, so per patient at ε as (b) is.
* ``real``: train on the real training encounters (no privacy).
* ``dpgen_unit_k<K>``, ``dpgen_unit_k<K>_rowclip``, ``dpgen_one_row``, ``dpgen_group``: the same with the DP-SGD
  generator ``dpgen`` (``DPGEN_EPOCHS`` passes): per-person clipping (its default with a unit: persons sampled,
  each person's summed gradient clipped), row clipping charged by group privacy (σ/K, 1 − (1 − q)^K), one encounter
  per patient, and row-level at ε / k_max. ``dpgen_unit_k<K>_gc`` and ``dpgen_unit_k<K>_gc_rowclip``: the first two
  with DP-SGD-S (``group_clip`` by ``race``, its defaults): each person clipped at their first row's group bound
  and counted once, against rows clipped and charged by group privacy. dpgen rows record their noise multiplier.

Metrics on the real rows without noise (public benchmark data; never done by a run): TSTR ROC AUC (gradient
boosting, logistic regression) for readmitted ``<30`` on the real test patients' encounters, trained on the
synthetic table; 1- and 2-way TVD against all real training encounters (bounding's bias counts against the
person-level methods); the TVD between the real and synthetic distributions of encounters per patient
(buckets 1..9 and ≥ 10; methods that publish patient ids only). Results: ``<out>.json`` (resumable) and
``<out>.md``.

``--task person`` scores the issue's person-level task instead (results in their own ``--out``):

    python benchmarks/relational.py --task person --eps 1 --seeds 0 1 2 --methods unit_k3 one_row group real \
        --out benchmarks/results/relational_person

one row per patient (:func:`person_frame`): will the patient have *any* encounter readmitted ``<30``, from the
patient's first encounter's columns and the patient's number of encounters; trained on the synthetic table's
patients (a method without patient ids gives one patient per row: one encounter each), tested on the real test
patients (all their encounters: the count is not capped at the contribution bound).
"""

from __future__ import annotations

import argparse
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
DPGEN_EPOCHS = 5  # the dpgen_* methods: 5 passes (its default 20 takes about 4x as long on 81,552 rows)
PERSON = "patient_nbr"
GROUP_CLIP_COLUMN = "race"  # the dpgen_*_gc methods: DP-SGD-S groups (a public column of the schema)
BUCKETS = 10  # encounters per patient: 1..9 and ≥ 10


def load():
    """(schema, train, test): all encounters, masked as a run would, split by patient; ``patient_nbr`` kept."""
    from dpsyn.io import read_table
    from dpsyn.masking import mask_table
    from dpsyn.schema import load_schema

    schema = load_schema("diabetes130")
    raw = read_table(DATA / "diabetes130/diabetic_data.csv", schema, check_domains=False)
    for c in schema.columns:
        if c.kind.value == "categorical" and c.name in raw.columns:
            raw[c.name] = raw[c.name].where(raw[c.name].isin(c.domain))
    patients = raw[PERSON].astype("string").unique()
    test_patients = set(np.random.default_rng(0).permutation(patients)[int(0.8 * len(patients)):])
    is_test = raw[PERSON].astype("string").isin(test_patients).to_numpy()
    masked, _ = mask_table(raw, schema)
    masked[PERSON] = raw[PERSON].astype("string").to_numpy()
    return schema, masked[~is_test].reset_index(drop=True), masked[is_test].reset_index(drop=True)


def per_person_hist(ids: pd.Series) -> np.ndarray:
    counts = ids.value_counts().to_numpy()
    h = np.bincount(np.minimum(counts, BUCKETS), minlength=BUCKETS + 1)[1:].astype(float)
    return h / h.sum()


def fit_sample(method: str, schema, train: pd.DataFrame, eps: float, seed: int):
    from dpsyn.schema import PrivacyUnit
    from dpsyn.synth import create

    privacy = {"epsilon": eps, "delta": DELTA, "secure_rng": False, "noise_seed": seed}
    rows = train
    fit_schema = schema
    fit_eps = eps
    cfg = {}
    name = "pgm"
    if method.startswith("dpgen_"):  # the DP-SGD generator: per-person clipping against its alternatives
        name, method = "dpgen", method[6:]
        cfg = {"epochs": DPGEN_EPOCHS}
        if method.startswith("unit_k"):
            k, _, variant = method[6:].partition("_")
            fit_schema = schema.model_copy(update={"privacy_unit": PrivacyUnit(column=PERSON,
                                                                               max_rows_per_person=int(k))})
            cfg["person_clipping"] = "rowclip" not in variant
            if variant.startswith("gc"):  # DP-SGD-S (group-adaptive clipping) by race, its defaults
                cfg["group_clip"] = {"column": GROUP_CLIP_COLUMN}
            method = "dpgen"
    if method.startswith("unit_k"):
        k, _, variant = method[6:].partition("_")
        fit_schema = schema.model_copy(update={"privacy_unit": PrivacyUnit(column=PERSON,
                                                                           max_rows_per_person=int(k))})
        cfg = {"person_weights": variant != "scaled"}
    elif method in ("one_row", "independent_one_row", "naive_bayes_one_row"):
        pick = np.random.default_rng(seed).permutation(len(train))
        rows = train.iloc[pick].drop_duplicates(PERSON).drop(columns=PERSON).reset_index(drop=True)
    elif method == "group":
        k_max = int(train[PERSON].value_counts().max())
        fit_eps = eps / k_max
        rows = train.drop(columns=PERSON)
    if method.endswith("_one_row") and method != "one_row":  # the suite's trivial DP baselines (baselines.py)
        from baselines import Independent, NaiveBayes

        synth = (Independent if method.startswith("independent") else NaiveBayes)(None, privacy=privacy)
    else:
        synth = create(name, cfg, privacy={**privacy, "epsilon": fit_eps})
    t0 = time.time()
    synth.fit(rows, fit_schema)
    fit_s = time.time() - t0
    syn = synth.sample(len(rows), random_state=seed)
    info = {"fit_s": round(fit_s, 1), "epsilon_fit": fit_eps, "epsilon_spent": synth.privacy_["epsilon_spent"],
            "neighbouring": synth.privacy_["neighbouring"], "rows_fit": len(rows)}
    if name == "dpgen":
        info["noise_multiplier"] = round(float(synth.training_["noise_multiplier"]), 4)
        info["clipping_unit"] = synth.training_["clipping_unit"]
    return syn, info


#: The person-level task's extra feature: the patient's number of encounters (a numeric column of the task's
#: schema; bins only for the schema's validity, the TSTR models read the value).
ENCOUNTERS = "encounters"


def person_frame(df: pd.DataFrame, schema) -> pd.DataFrame:
    """One row per patient, in order of first appearance: the first encounter's columns, ``encounters`` (the
    patient's number of encounters) and the target set to ``<30`` when any of the patient's encounters was
    readmitted within 30 days (``NO`` otherwise). Without a ``patient_nbr`` column every row is a patient."""
    ids = df[PERSON].astype("string").to_numpy() if PERSON in df.columns else np.arange(len(df))
    key = pd.Series(ids, index=df.index)
    target = schema.target
    first = df.loc[~key.duplicated()].drop(columns=PERSON, errors="ignore").copy()
    first_ids = key[~key.duplicated()].to_numpy()
    counts = key.value_counts()
    any_pos = (df[target].astype("string") == "<30").groupby(key).any()
    first[ENCOUNTERS] = counts.reindex(first_ids).to_numpy().astype(float)
    first[target] = np.where(any_pos.reindex(first_ids).to_numpy(), "<30", "NO")
    return first.reset_index(drop=True)


def person_schema(schema):
    """The schema plus the numeric ``encounters`` column (public: the task's definition, not the data)."""
    from dpsyn.schema import Column

    extra = Column.model_validate({"name": ENCOUNTERS, "kind": "numeric", "bounds": [1, 100],
                                   "bins": [1, 2, 3, 4, 6, 10, 100]})
    return schema.model_copy(update={"columns": [*schema.columns, extra]})


def evaluate_person(schema, test, syn) -> dict:
    from dpsyn.validation.metrics import tstr_scores

    tr, te = person_frame(syn, schema), person_frame(test, schema)
    return {"tstr": tstr_scores(tr, te, person_schema(schema), positive="<30", random_state=0),
            # the same task from the first encounter alone (no count): what a table without persons can carry
            "tstr_first": tstr_scores(tr, te, schema, positive="<30", random_state=0),
            "patients": len(tr), "positive_share": round(float((tr[schema.target] == "<30").mean()), 4),
            "test_patients": len(te), "test_positive_share": round(float((te[schema.target] == "<30").mean()), 4)}


def evaluate(schema, train, test, syn) -> dict:
    from dpsyn.validation.metrics import marginal_tvd, tstr_scores

    real = train.drop(columns=PERSON)
    out = {"tvd1": marginal_tvd(real, syn.drop(columns=PERSON, errors="ignore"), schema, order=1),
           "tvd2": marginal_tvd(real, syn.drop(columns=PERSON, errors="ignore"), schema, order=2),
           "tstr": tstr_scores(syn.drop(columns=PERSON, errors="ignore"), test.drop(columns=PERSON), schema,
                               positive="<30", random_state=0)}
    if PERSON in syn.columns:
        out["per_person_tvd"] = 0.5 * float(np.abs(per_person_hist(train[PERSON]) - per_person_hist(syn[PERSON])).sum())
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eps", type=float, nargs="+", default=[1.0, 3.0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--methods", nargs="+", default=["unit_k3", "unit_k3_scaled", "one_row", "group", "real"])
    ap.add_argument("--out", default="benchmarks/results/relational")
    ap.add_argument("--task", choices=["encounter", "person"], default="encounter",
                    help="TSTR per encounter (default) or the person-level task (person_frame)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    command = shlex.join(["python", "benchmarks/relational.py", *sys.argv[1:]])
    jpath = Path(f"{args.out}.json")
    saved = json.loads(jpath.read_text()) if jpath.exists() else {"commands": [], "rows": []}
    if command not in saved["commands"]:
        saved["commands"].append(command)
    done = {(r["method"], r["epsilon"], r["seed"]) for r in saved["rows"]}
    schema, train, test = load()
    facts = {"train_encounters": len(train), "train_patients": int(train[PERSON].nunique()),
             "test_encounters": len(test), "k_max": int(train[PERSON].value_counts().max())}
    saved["facts"] = facts
    print(json.dumps(facts), flush=True)
    for eps in args.eps:
        for seed in args.seeds:
            for method in args.methods:
                key = (method, eps if method != "real" else None, seed if method != "real" else 0)
                if key in done or (method == "real" and (eps != args.eps[0] or seed != args.seeds[0])):
                    continue
                if method == "real":
                    syn, info = train.copy(), {}
                else:
                    syn, info = fit_sample(method, schema, train, eps, seed)
                scores = (evaluate_person(schema, test, syn) if args.task == "person"
                          else evaluate(schema, train, test, syn))
                row = {"method": key[0], "epsilon": key[1], "seed": key[2], **info, **scores}
                saved["rows"].append(row)
                done.add(key)
                jpath.write_text(json.dumps(saved, indent=1))
                print(json.dumps({k: row[k] for k in ("method", "epsilon", "seed")} |
                                 {"gbm": row["tstr"]["gbm"]["roc_auc"], "tvd2": row.get("tvd2")}), flush=True)
    saved["task"] = args.task
    jpath.write_text(json.dumps(saved, indent=1))
    (write_person_markdown if args.task == "person" else write_markdown)(saved, Path(f"{args.out}.md"))


def _ms(xs, digits=3):
    xs = [x for x in xs if x is not None]
    if not xs:
        return ""
    return f"{np.mean(xs):.{digits}f}" + (f" ± {np.std(xs):.{digits}f}" if len(xs) > 1 else "")


def write_person_markdown(saved: dict, path: Path) -> None:
    f = saved.get("facts", {})
    rs0 = saved["rows"][0] if saved["rows"] else {}
    lines = ["# The person-level task on diabetes130 (patient_nbr as the unit)", "",
             "Commands (rows already in the .json are kept):", "",
             *[f"    {c}" for c in saved["commands"]], "",
             f"Split by patient 80/20 (seed 0) as in relational.md: {f.get('train_patients', 0):,} training patients "
             f"(at most {f.get('k_max', 0)} encounters each), {rs0.get('test_patients', 0):,} test patients "
             f"({rs0.get('test_positive_share', 0):.1%} with an encounter readmitted <30). Task: will the patient "
             "have any encounter readmitted <30, from the first encounter's columns and the number of encounters "
             "(benchmarks/relational.py, person_frame), and from the first encounter's columns alone. A method "
             "without patient ids (one_row, group) gives one patient per synthetic row. Every guarantee is per patient at the ε shown (δ = 1e-5); `group` fits "
             "row-level pgm at ε / k_max. Means ± std over seeds. Machine: 2 cores, no other benchmark running.", "",
             "| method | ε per patient | seeds | AUC gbm | AUC logreg | AUC gbm, first encounter only | "
             "AUC logreg, first encounter only | synthetic patients | positive share | fit s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for head, rs in _method_groups(saved):
        lines.append(" | ".join([
            *head, _ms([r["tstr"]["gbm"]["roc_auc"] for r in rs]), _ms([r["tstr"]["logreg"]["roc_auc"] for r in rs]),
            _ms([r["tstr_first"]["gbm"]["roc_auc"] for r in rs]), _ms([r["tstr_first"]["logreg"]["roc_auc"] for r in rs]),
            _ms([r.get("patients") for r in rs], 0), _ms([r.get("positive_share") for r in rs]),
            _ms([r.get("fit_s") for r in rs], 0)]) + " |")
    path.write_text("\n".join(lines) + "\n")


def _method_groups(saved: dict):
    """(the row's first cells: method, ε, seeds; its rows) per method and ε, the train-on-real row last."""
    groups: dict = {}
    for r in saved["rows"]:
        groups.setdefault((r["epsilon"] is None, r["epsilon"] or 0, r["method"]), []).append(r)
    for (_, eps, method), rs in sorted(groups.items()):
        yield [f"| {method}", "–" if rs[0]["epsilon"] is None else f"{eps:g}", str(len(rs))], rs


def write_markdown(saved: dict, path: Path) -> None:
    f = saved.get("facts", {})
    lines = ["# Person-level privacy on diabetes130 (patient_nbr as the unit)", "",
             "Commands (rows already in the .json are kept):", "",
             *[f"    {c}" for c in saved["commands"]], "",
             f"All encounters, split by patient 80/20 (seed 0): {f.get('train_encounters', 0):,} training "
             f"encounters of {f.get('train_patients', 0):,} patients (at most {f.get('k_max', 0)} each), "
             f"{f.get('test_encounters', 0):,} test encounters. Every row's guarantee is per patient at the ε "
             "shown (δ = 1e-5); `group` fits row-level pgm at ε / k_max. Means ± std over seeds; TSTR for "
             "readmitted <30 on the test patients' encounters; TVD against all real training encounters; "
             "'per patient' is the TVD of encounters per patient (1..9, ≥ 10). Machine: 2 cores, shared with "
             "other work while this ran (fit times inflated).", "",
             "| method | ε per patient | seeds | rows given | AUC gbm | AUC logreg | TVD 1-way | TVD 2-way | "
             "per patient TVD | DP-SGD σ | fit s |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for head, rs in _method_groups(saved):
        lines.append(" | ".join([
            *head, _ms([r.get("rows_fit") for r in rs], 0), _ms([r["tstr"]["gbm"]["roc_auc"] for r in rs]),
            _ms([r["tstr"]["logreg"]["roc_auc"] for r in rs]), _ms([r["tvd1"] for r in rs]),
            _ms([r["tvd2"] for r in rs]), _ms([r.get("per_person_tvd") for r in rs]),
            _ms([r.get("noise_multiplier") for r in rs], 2), _ms([r.get("fit_s") for r in rs], 0)]) + " |")
    lines += related_results(path.parent)
    path.write_text("\n".join(lines) + "\n")


def related_results(folder: Path) -> list[str]:
    """The other person-level results of issue 21 (their own scripts write them), copied in one level down."""
    out = []
    for name in ("relational_person.md", "relational_synthea.md", "audit_person.md"):
        p = folder / name
        if p.exists():
            body = p.read_text().splitlines()
            out += ["", f"(From `{name}`, written by its own command below.)", ""]
            out += [("#" + x) if x.startswith("#") else x for x in body]
    return out


if __name__ == "__main__":
    main()
