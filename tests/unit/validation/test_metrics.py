"""Benchmark metrics on tables with many categories (ICD-9 codes) and the gate's TSTR scores."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsyn.io import read_table
from dpsyn.schema import load_schema
from dpsyn.validation.metrics import GBM_MAX_CATEGORIES, _xy, gbm_frame, tstr_scores
from dpsyn.validation.utility import tstr_scores_on

SAMPLE = Path(__file__).resolve().parents[3] / "dpsyn" / "data" / "diabetes130_sample.csv.gz"


@pytest.mark.slow  # a process or a real training: in the full suite, not the fast tier
def test_tstr_scores_handle_columns_with_more_categories_than_the_gbm_supports(tmp_path):
    schema = load_schema("diabetes130")
    csv = tmp_path / "d130.csv"
    with gzip.open(SAMPLE, "rt") as f:
        csv.write_text("".join(line for _, line in zip(range(3001), f, strict=False)))
    df = read_table(csv, schema, check_domains=False)
    wide = [c.name for c in schema.synthesizable_columns()
            if c.kind.value == "categorical" and len(c.domain) > GBM_MAX_CATEGORIES]
    assert "diag_1" in wide  # ICD-9 codes: hundreds per column
    train, test = df.iloc[:2000], df.iloc[2000:]
    scores = tstr_scores(train, test, schema, positive="<30")
    assert set(scores) == {"gbm", "logreg"} and all(0 <= s["roc_auc"] <= 1 for s in scores.values())
    assert tstr_scores_on(train, test, schema, positive="<30").shape == (len(test),)

    x, _ = _xy(train, schema, wide + ["race"])
    g = gbm_frame(x)
    assert all(g[c].dtype == np.float64 for c in wide)  # position in the declared domain, NaN if missing
    assert isinstance(g["race"].dtype, pd.CategoricalDtype)  # small domains stay native categoricals
    domain = list(schema.column("diag_1").domain)
    row = train["diag_1"].iloc[0]
    assert g["diag_1"].iloc[0] == domain.index(row)
