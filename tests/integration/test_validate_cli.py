"""`dpsyn validate`: exit 0 when every check passes, 1 listing failures, 2 on bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from dpsyn_cli.main import app


@pytest.fixture(scope="module")
def runner():
    return CliRunner()


def _synthetic(adult_sample, tmp_path, corrupt=None):
    """A stand-in synthetic table: the real rows in another order (every distribution exact)."""
    rng = np.random.default_rng(0)
    df = adult_sample.iloc[rng.permutation(len(adult_sample))].reset_index(drop=True)
    if corrupt:
        corrupt(df)
    df["_wm"] = "0123456789abcdef"
    p = tmp_path / "synthetic.csv"
    df.to_csv(p, index=False)
    return p


def test_validate_passes_then_fails_naming_the_check(runner, adult_sample, adult_sample_path, tmp_path):
    good = _synthetic(adult_sample, tmp_path)
    res = runner.invoke(app, ["validate", "--real", str(adult_sample_path), "--synthetic", str(good),
                              "--schema", "adult", "--epsilon", "1", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["passed"] and out["failed"] == [] and 0 < out["epsilon_spent"] <= 1.0

    def shift(df):
        df["hours-per-week"] = (df["hours-per-week"] + 30).clip(upper=99)

    bad = _synthetic(adult_sample, tmp_path, shift)
    html = tmp_path / "report" / "gate.html"
    res = runner.invoke(app, ["validate", "--real", str(adult_sample_path), "--synthetic", str(bad),
                              "--schema", "adult", "--epsilon", "1", "--html", str(html)])
    assert res.exit_code == 1
    assert "FAIL ks:hours-per-week" in res.stdout
    page = html.read_text()
    assert 'data-verdict="fail"' in page and "<code>ks:hours-per-week</code>" in page
    assert '<figure class="plot fail" data-column="hours-per-week">' in page


def test_audit_risk_reports_attribute_inference_and_dcr(runner, adult_sample, tmp_path):
    """A 'synthetic' table that is the training rows: members are inferred better and every row is a copy."""
    df = adult_sample.sample(frac=1.0, random_state=1).reset_index(drop=True)
    train, holdout = tmp_path / "train.csv", tmp_path / "holdout.csv"
    df.iloc[:2000].to_csv(train, index=False)
    df.iloc[2000:].to_csv(holdout, index=False)
    # the schema reads Adult's original (header-less) format; these CSVs have headers: use a Parquet copy instead
    for p in (train, holdout):
        import pandas as pd

        pd.read_csv(p).to_parquet(p.with_suffix(".parquet"), index=False)
    res = runner.invoke(app, ["audit", "risk", "--train", str(train.with_suffix(".parquet")),
                              "--holdout", str(holdout.with_suffix(".parquet")),
                              "--synthetic", str(train.with_suffix(".parquet")), "--schema", "adult", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["dcr"]["exact_copies_of_train"] == 1.0 and out["dcr"]["share_closer_to_train"] > 0.95
    assert {a["column"] for a in out["attributes"]} == {"race", "income"}
    assert max(a["member_advantage"] for a in out["attributes"]) > 0.03
    # the non-DP read is recorded in the population's budget ledger (issue 19, finding 5)
    from dpsyn.privacy.budget import BudgetLedger

    (pop,) = BudgetLedger().status("uci-adult")
    assert [a.tool for a in pop.accesses][-1] == "audit risk"


@pytest.mark.parametrize("args, message", [
    (["--epsilon", "0"], "--epsilon must be > 0"),
    (["--rules", "no-such-rules"], "rules file not found"),
])
def test_validate_bad_input_exits_2(runner, adult_sample, adult_sample_path, tmp_path, args, message):
    syn = _synthetic(adult_sample, tmp_path)
    res = runner.invoke(app, ["validate", "--real", str(adult_sample_path), "--synthetic", str(syn),
                              "--schema", "adult", "--json", *args])
    assert res.exit_code == 2, res.output
    assert message in json.loads(res.stdout)["error"]


def test_validate_missing_file_exits_2(runner, tmp_path):
    res = runner.invoke(app, ["validate", "--real", str(tmp_path / "nope.csv"), "--synthetic",
                              str(tmp_path / "nope2.csv"), "--schema", "adult"])
    assert res.exit_code == 2 and "not found" in res.output


def test_validate_is_charged_to_a_population_or_refused(runner, adult_sample, adult_sample_path, tmp_path):
    """Issue 19, finding 5: `dpsyn validate --epsilon E` spent E outside every budget, so repeated calls composed
    without a cap. Now the read needs a population and appears in its ledger; a cap refuses the over-budget read."""
    from dpsyn.privacy.budget import BudgetLedger
    from dpsyn.schema import load_schema

    syn = _synthetic(adult_sample, tmp_path)
    anonymous = tmp_path / "anon.yaml"
    anonymous.write_text(load_schema("adult").model_copy(update={"population": None, "name": "anon"})
                         .model_dump_json(exclude_none=True))
    ledger = f"sqlite:///{tmp_path / 'budget.db'}"
    base = ["validate", "--real", str(adult_sample_path), "--synthetic", str(syn), "--ledger", ledger, "--json",
            "--epsilon", "1"]
    res = runner.invoke(app, [*base, "--schema", str(anonymous)])
    assert res.exit_code == 2 and "--population" in json.loads(res.stdout)["error"]
    assert not BudgetLedger(ledger).status()  # refused before anything was reserved or read
    res = runner.invoke(app, [*base, "--schema", "adult", "--population", "clinic-a"])
    assert res.exit_code in (0, 1), res.output
    (pop,) = BudgetLedger(ledger).status("clinic-a")
    assert [(r.purpose, r.state, r.spent_epsilon) for r in pop.runs] == [("validate", "committed", pytest.approx(
        json.loads(res.stdout)["epsilon_spent"]))]
    BudgetLedger(ledger).set_cap("clinic-a", epsilon=1.5)
    res = runner.invoke(app, [*base, "--schema", "adult", "--population", "clinic-a"])
    assert res.exit_code == 1 and "exceeded" in json.loads(res.stdout)["error"]
    shown = runner.invoke(app, ["budget", "show", "--ledger", ledger, "--json"])
    assert json.loads(shown.stdout)["populations"][0]["runs"][0]["purpose"] == "validate"


@pytest.mark.parametrize("keep", [[], ["age", "income"]], ids=["no schema column", "two of fifteen"])
def test_a_synthetic_file_missing_schema_columns_exits_2_before_any_epsilon(runner, adult_sample, adult_sample_path,
                                                                           tmp_path, keep):
    """Issue 24, finding 2: a file sharing no column with the schema passed with zero checks after spending ε."""
    from dpsyn.privacy.budget import BudgetLedger

    p = tmp_path / "other.csv"
    (adult_sample[keep] if keep else adult_sample[[]].assign(shoe_size=42)).to_csv(p, index=False)
    ledger = f"sqlite:///{tmp_path / 'budget.db'}"
    res = runner.invoke(app, ["validate", "--real", str(adult_sample_path), "--synthetic", str(p), "--schema", "adult",
                              "--epsilon", "1", "--ledger", ledger, "--json"])
    assert res.exit_code == 2, res.output
    assert "lacks" in json.loads(res.stdout)["error"] and "nothing was spent" in json.loads(res.stdout)["error"]
    assert not BudgetLedger(ledger).status()


def test_the_gate_never_passes_with_nothing_to_check(adult_sample, adult_schema):
    from dpsyn.errors import InputError
    from dpsyn.privacy import NoiseSource, NoisyCounts, PrivacyAccountant
    from dpsyn.validation import validate

    acct = PrivacyAccountant(epsilon=1, delta=1e-5)
    with pytest.raises(InputError, match="nothing to check"):
        validate(adult_sample, adult_sample[[]].assign(x=1), adult_schema, accountant=acct,
                 noise=NoiseSource(secure=True), counts=NoisyCounts.public(train=len(adult_sample)))
    assert acct.ledger == []  # nothing was released
