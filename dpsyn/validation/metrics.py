"""Fidelity and utility metrics for benchmarks and reports.

These read real rows *without* noise: they are for benchmarks on public data
and for the data owner's own evaluation, never for anything released by a run
(the gate in :mod:`dpsyn.validation` releases only DP statistics).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from dpsyn.encoding import DiscreteEncoder
from dpsyn.schema import TableSchema

__all__ = ["marginal_tvd", "tstr_scores"]


def marginal_tvd(real: pd.DataFrame, synth: pd.DataFrame, schema: TableSchema, *, order: int = 2) -> float:
    """Mean total variation distance over all ``order``-way marginals of the public encoding."""
    enc = DiscreteEncoder(schema)
    a, b = enc.encode(real), enc.encode(synth)
    sizes = enc.sizes
    tvds = []
    for cols in itertools.combinations(range(len(sizes)), order):
        dims = [sizes[c] for c in cols]
        ia = np.ravel_multi_index(tuple(a[:, c] for c in cols), dims)
        ib = np.ravel_multi_index(tuple(b[:, c] for c in cols), dims)
        n = int(np.prod(dims))
        pa = np.bincount(ia, minlength=n) / len(a)
        pb = np.bincount(ib, minlength=n) / len(b)
        tvds.append(0.5 * np.abs(pa - pb).sum())
    return float(np.mean(tvds))


def _xy(df: pd.DataFrame, schema: TableSchema, columns: list[str]):
    target = schema.target
    x = df[columns].copy()
    for c in columns:
        col = schema.column(c)
        if col.kind.value == "categorical":
            x[c] = pd.Categorical(x[c].astype("object"), categories=col.domain)
        else:
            x[c] = pd.to_numeric(x[c], errors="coerce").astype("float64")
    y = df[target].astype("string")
    return x, y


#: HistGradientBoostingClassifier's limit on a native categorical feature's cardinality (its max_bins).
GBM_MAX_CATEGORIES = 255


def gbm_frame(x: pd.DataFrame) -> pd.DataFrame:
    """``x`` from :func:`_xy` made fit for scikit-learn's HistGradientBoostingClassifier.

    Categorical columns with more categories than it supports natively (e.g. ICD-9 diagnosis codes,
    hundreds per column) become their position in the schema's declared domain, a numeric feature
    (missing stays NaN); the order is the schema's, so nearby codes stay nearby.
    """
    x = x.copy()
    for c in x.columns:
        if isinstance(x[c].dtype, pd.CategoricalDtype) and len(x[c].cat.categories) > GBM_MAX_CATEGORIES:
            codes = x[c].cat.codes.to_numpy().astype("float64")
            codes[codes < 0] = np.nan
            x[c] = codes
    return x


def gbm_predict(x_train: pd.DataFrame, y_train: np.ndarray, x_test: pd.DataFrame, *,
                random_state: int = 0) -> np.ndarray:
    """P(positive) on ``x_test`` of a HistGradientBoostingClassifier fitted on ``x_train`` (frames from
    :func:`_xy`, binary ``y_train``): the one GBM of the TSTR benchmark metric and of the gate's check."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    clf = HistGradientBoostingClassifier(categorical_features="from_dtype", random_state=random_state)
    clf.fit(gbm_frame(x_train), y_train)
    return clf.predict_proba(gbm_frame(x_test))[:, 1]


def tstr_scores(train: pd.DataFrame, test: pd.DataFrame, schema: TableSchema, *, positive: str,
                models: tuple[str, ...] = ("gbm", "logreg"), random_state: int = 0) -> dict[str, dict[str, float]]:
    """Train on ``train`` (synthetic or real), test on real ``test``: accuracy, ROC AUC, F1 for ``positive``."""
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import accuracy_score, f1_score, roc_auc_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    cols = [c.name for c in schema.synthesizable_columns() if c.name != schema.target]
    xtr, ytr = _xy(train, schema, cols)
    xte, yte = _xy(test, schema, cols)
    ytr_b = (ytr == positive).to_numpy().astype(int)
    yte_b = (yte == positive).to_numpy().astype(int)
    out = {}
    if ytr_b.min() == ytr_b.max():  # a synthesizer that emits one class cannot be scored
        return {m: {"accuracy": float((yte_b == ytr_b[0]).mean()), "roc_auc": 0.5, "f1": 0.0} for m in models}
    cat = [c for c in cols if schema.column(c).kind.value == "categorical"]
    num = [c for c in cols if c not in cat]
    for m in models:
        if m == "gbm":
            p = gbm_predict(xtr, ytr_b, xte, random_state=random_state)
        elif m == "logreg":
            pre = ColumnTransformer([
                ("cat", OneHotEncoder(handle_unknown="ignore"), cat),
                ("num", make_pipeline(StandardScaler()), num),
            ])
            xtr_f = xtr.copy()
            xte_f = xte.copy()
            for c in cat:
                xtr_f[c] = xtr_f[c].astype("object").fillna("<missing>")
                xte_f[c] = xte_f[c].astype("object").fillna("<missing>")
            for c in num:
                xtr_f[c] = xtr_f[c].fillna(0.0)
                xte_f[c] = xte_f[c].fillna(0.0)
            clf = make_pipeline(pre, LogisticRegression(max_iter=2000))
            clf.fit(xtr_f, ytr_b)
            p = clf.predict_proba(xte_f)[:, 1]
        else:
            raise ValueError(f"unknown model {m}")
        out[m] = {
            "accuracy": float(accuracy_score(yte_b, p >= 0.5)),
            "roc_auc": float(roc_auc_score(yte_b, p)),
            "f1": float(f1_score(yte_b, p >= 0.5)),
        }
    return out
